// Helpers shared by the route modules: resolving the target user, folders, deviations and id lists.
import type { SimDeviation, SimUser } from "../dataset.ts";
import { findUser, galleryAllIds, userState } from "../dataset.ts";
import { ERR, apiError, type Reply } from "../http.ts";
import { cached, type ApiContext, type SimWorld } from "../world.ts";
import { actingUser } from "../world.ts";

export function success(extra: Record<string, unknown> = {}): Reply {
  return { status: 200, json: { success: true, ...extra } };
}

/**
 * What every user-scoped endpoint answers for a user who is gone (docs/service-behaviour.md#user-error-codes):
 * error_code 1 deactivated ("Account is inactive."), 0 suspended (that wording is UNCERTAIN); undefined for an
 * active user. An unknown name is ERR.userNotFound (error_code 2).
 */
export function userUnavailable(u: SimUser): Reply | undefined {
  const state = userState(u);
  switch (state) {
    case "active":
      return undefined;
    case "deactivated":
      return ERR.accountInactive();
    case "suspended":
      return ERR.accountSuspended();
    default: {
      const never: never = state;
      throw new Error(`unknown user state ${String(never)}`);
    }
  }
}

/** `username` param, or the token's user; unknown, deactivated and suspended users answer their error. */
export function targetUser(ctx: ApiContext, name = ctx.params.get("username")): SimUser | Reply {
  if (name === undefined || name === "") {
    if (ctx.caller.kind === "client") return ERR.required("username");
    return actingUser(ctx);
  }
  const u = findUser(ctx.world.data, name);
  if (!u) return ERR.userNotFound();
  return userUnavailable(u) ?? u;
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

/**
 * All of a user's gallery deviations, folders' and unfiled ones (docs/service-behaviour.md#folders-optional),
 * deleted ones included (listings skip them), newest first.
 */
export function galleryAll(world: SimWorld, userId: string): SimDeviation[] {
  return cached(world, `gallery-all:${userId}`, () => idsToDeviations(world, galleryAllIds(world.data, userId)));
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
