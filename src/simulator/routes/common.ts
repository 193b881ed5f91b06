// Helpers shared by the route modules: resolving the target user, folders, deviations and id lists.
import type { SimDeviation, SimUser } from "../dataset.ts";
import { findUser } from "../dataset.ts";
import { ERR, apiError, type Reply } from "../http.ts";
import { cached, type ApiContext, type SimWorld } from "../world.ts";
import { actingUser } from "../world.ts";

export function success(extra: Record<string, unknown> = {}): Reply {
  return { status: 200, json: { success: true, ...extra } };
}

/** `username` param, or the token's user; missing or deactivated users answer "User not found.". */
export function targetUser(ctx: ApiContext, name = ctx.params.get("username")): SimUser | Reply {
  if (name === undefined || name === "") {
    if (ctx.caller.kind === "client") return ERR.required("username");
    return actingUser(ctx);
  }
  const u = findUser(ctx.world.data, name);
  if (!u) return ERR.userNotFound();
  if (u.isDeactivated) return apiError(400, "invalid_request", "User not found.", { error_code: 1 });
  return u;
}

export function isUser(x: SimUser | Reply): x is SimUser {
  return "userid" in x;
}

export function getDeviation(world: SimWorld, id: string | undefined): SimDeviation | undefined {
  if (!id) return undefined;
  return world.data.deviations.get(id.toUpperCase());
}

export function deviationNotFound(): Reply {
  return apiError(400, "invalid_request", "Deviation not found.", { error_code: 0 });
}

/** All of a user's gallery deviations (deleted ones included: listings skip them), newest first. */
export function galleryAll(world: SimWorld, userId: string): SimDeviation[] {
  return cached(world, `gallery-all:${userId}`, () => {
    const seen = new Set<string>();
    const out: SimDeviation[] = [];
    for (const f of world.data.galleryFolders) {
      if (f.ownerId !== userId) continue;
      for (const id of f.deviationIds) {
        if (seen.has(id)) continue;
        seen.add(id);
        const d = world.data.deviations.get(id);
        if (d) out.push(d);
      }
    }
    out.sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId);
    return out;
  });
}

export function idsToDeviations(world: SimWorld, ids: readonly string[]): SimDeviation[] {
  const out: SimDeviation[] = [];
  for (const id of ids) {
    const d = world.data.deviations.get(id);
    if (d) out.push(d);
  }
  return out;
}

/** Requires the named params; returns a validation reply naming the first one missing. */
export function requireParams(ctx: ApiContext, ...names: string[]): Reply | undefined {
  for (const name of names) {
    const v = ctx.params.get(name);
    if (v === undefined || v === "") return ERR.required(name);
  }
  return undefined;
}
