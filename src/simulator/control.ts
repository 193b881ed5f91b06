// The simulator's control API under /_sim/ (JSON), for other processes and the CLI: log, stats,
// clock, faults, tokens, truth summary, activity, the download quota, the CDN's settings, the velocity filter
// and the files' checksums. These requests are not logged.
import { ActivityError, applyActivity, type ActivityInput } from "./activity.ts";
import type { FaultRule, FaultStore } from "./faults.ts";
import { json, type Reply } from "./http.ts";
import type { Simulator } from "./options.ts";
import { checkVelocity } from "./velocity.ts";
import { touch, type SimWorld } from "./world.ts";

export type ControlTarget = { sim: Simulator; world: SimWorld; faults: FaultStore };

function bad(message: string): Reply {
  return json(400, { error: "bad_request", error_description: message, status: "error" });
}

function readJson(raw: Buffer): Record<string, unknown> | undefined {
  if (raw.length === 0) return {};
  try {
    const parsed: unknown = JSON.parse(raw.toString("utf8"));
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What variance drew, for other processes (the GroundTruth has the same in full). */
function varianceSummary(world: SimWorld): Record<string, unknown> {
  const v = world.data.variance;
  if (!v) return {};
  return {
    bucketKey: v.bucketKey,
    unfiled: Object.fromEntries([...world.data.unfiled].map(([owner, ids]) => [owner, ids.length])),
    emptyGalleryFolders: [...v.galleries.values()].flatMap((g) => g.emptyFolders),
    emptyCollectionFolders: v.emptyCollectionFolders,
    deactivatedUsers: v.deactivatedUsers,
    suspendedUsers: v.suspendedUsers,
    lockedDeviations: v.lockedDeviations,
    multiImageDeviations: v.multiImageDeviations,
    matureDeviations: v.matureDeviations,
  };
}

export function truthSummary(world: SimWorld): Record<string, unknown> {
  const d = world.data;
  const ownerUser = d.users.get(d.ownerId);
  const ownerDevs = [...d.deviations.values()].filter((x) => x.authorId === d.ownerId);
  return {
    seed: d.seed,
    mode: world.mode,
    ...(world.profile !== "classic" ? { profile: world.profile } : {}),
    now: world.clock.now().toISOString(),
    owner: ownerUser ? { userid: ownerUser.userid, username: ownerUser.username } : null,
    counts: {
      users: d.users.size,
      deviations: d.deviations.size,
      ownerDeviations: ownerDevs.length,
      ownerDeviationsDeleted: ownerDevs.filter((x) => x.isDeleted).length,
      ownerDeviationsMature: ownerDevs.filter((x) => x.isMature).length,
      galleryFolders: d.galleryFolders.filter((f) => f.ownerId === d.ownerId).length,
      collectionFolders: d.collectionFolders.filter((f) => f.ownerId === d.ownerId).length,
      comments: d.comments.length,
      statuses: d.statuses.length,
      notes: d.notes.length,
      noteFolders: d.noteFolders.length,
      messages: d.messages.length,
      feedItems: d.feed.length,
      watchers: ownerUser?.watcherIds.length ?? 0,
      friends: ownerUser?.friends.length ?? 0,
    },
    galleryFolders: d.galleryFolders
      .filter((f) => f.ownerId === d.ownerId)
      .map((f) => ({ folderid: f.folderid, name: f.name, parent: f.parent, size: f.deviationIds.length })),
    trackedUsers: [...d.users.values()]
      .filter((u) => u.userid !== d.ownerId && d.galleryFolders.some((f) => f.ownerId === u.userid))
      .map((u) => ({
        userid: u.userid,
        username: u.username,
        isDeactivated: u.isDeactivated,
        ...(u.isSuspended !== undefined ? { isSuspended: u.isSuspended } : {}),
      })),
    tokens: world.tokens.counts(),
    ...(d.variance ? { variance: varianceSummary(world) } : {}),
  };
}

export function handleControl(target: ControlTarget, method: string, path: string, query: URLSearchParams, raw: Buffer): Reply | Promise<Reply> {
  const { sim, world, faults } = target;
  const body = readJson(raw);
  if (body === undefined) return bad("the control API takes a JSON object body");
  const route = `${method} ${path.replace(/\/+$/, "")}`;
  switch (route) {
    case "GET /_sim/log": {
      const since = Number(query.get("since") ?? "0");
      return json(200, { entries: sim.log().filter((e) => e.seq > since) });
    }
    case "POST /_sim/log/clear":
      sim.clearLog();
      return json(200, { ok: true });
    case "GET /_sim/stats":
      return json(200, sim.stats());
    case "GET /_sim/clock":
      return json(200, { now: sim.clock.now().toISOString() });
    case "POST /_sim/clock/advance": {
      const ms = Number(body.ms);
      if (!Number.isFinite(ms) || ms < 0) return bad("expects {ms: a non-negative number}");
      sim.clock.advance(ms);
      return json(200, { now: sim.clock.now().toISOString() });
    }
    case "POST /_sim/clock/set": {
      const at = new Date(String(body.now ?? ""));
      if (Number.isNaN(at.getTime())) return bad("expects {now: an ISO date}");
      sim.clock.set(at);
      return json(200, { now: sim.clock.now().toISOString() });
    }
    case "GET /_sim/faults":
      return json(200, { rules: faults.list() });
    case "POST /_sim/faults": {
      const rule = (body.rule ?? body) as FaultRule;
      try {
        faults.add(rule);
      } catch (err) {
        return bad(err instanceof Error ? err.message : String(err));
      }
      return json(200, { ok: true, rules: faults.list() });
    }
    case "DELETE /_sim/faults":
      faults.clear();
      return json(200, { ok: true });
    case "POST /_sim/tokens/expire":
      sim.expireAccessTokens();
      return json(200, { ok: true });
    case "POST /_sim/tokens/user": {
      try {
        return json(
          200,
          sim.issueUserToken({
            ...(typeof body.clientId === "string" ? { clientId: body.clientId } : {}),
            ...(typeof body.userId === "string" ? { userId: body.userId } : {}),
            ...(Array.isArray(body.scopes) ? { scopes: body.scopes.map(String) } : {}),
          }),
        );
      } catch (err) {
        return bad(err instanceof Error ? err.message : String(err));
      }
    }
    case "POST /_sim/tokens/client": {
      try {
        return json(200, sim.issueClientToken(typeof body.clientId === "string" ? { clientId: body.clientId } : {}));
      } catch (err) {
        return bad(err instanceof Error ? err.message : String(err));
      }
    }
    case "GET /_sim/truth":
      return json(200, truthSummary(world));
    case "POST /_sim/activity": {
      if (typeof body.kind !== "string") return bad("expects {kind, ...}");
      try {
        const result = applyActivity(world, body as ActivityInput);
        touch(world);
        return json(200, { ok: true, ...result });
      } catch (err) {
        if (err instanceof ActivityError) return bad(err.message);
        throw err;
      }
    }
    case "GET /_sim/quota": {
      const userId = query.get("userId") ?? world.data.ownerId;
      return json(200, sim.quotaStatus(userId));
    }
    case "POST /_sim/quota": {
      const allowance = Number(body.allowance);
      if (!Number.isInteger(allowance) || allowance < 0) return bad("expects {allowance: a non-negative integer, userId?: string}");
      if (body.userId !== undefined && typeof body.userId !== "string") return bad("userId must be a string");
      const userId = typeof body.userId === "string" ? body.userId : undefined;
      sim.setDownloadQuota(userId === undefined ? { allowance } : { userId, allowance });
      return json(200, { ok: true, ...sim.quotaStatus(userId ?? world.data.ownerId) });
    }
    case "GET /_sim/cdn":
      return json(200, { ...world.cdn });
    case "POST /_sim/cdn": {
      const bps = body.bytesPerSecond;
      if (bps !== undefined && bps !== null && (typeof bps !== "number" || !Number.isFinite(bps) || bps < 0)) {
        return bad("expects {bytesPerSecond: a non-negative number, or null/0 for no cap, ranges?: boolean}");
      }
      if (body.ranges !== undefined && typeof body.ranges !== "boolean") return bad("ranges must be a boolean");
      const settings = sim.setCdn({
        ...(bps !== undefined ? { bytesPerSecond: typeof bps === "number" && bps > 0 ? bps : null } : {}),
        ...(typeof body.ranges === "boolean" ? { ranges: body.ranges } : {}),
      });
      return json(200, { ok: true, ...settings });
    }
    case "GET /_sim/velocity":
      return json(200, sim.velocity());
    case "POST /_sim/velocity": {
      try {
        sim.setVelocity(body.settings === null ? null : checkVelocity(body.settings ?? body));
      } catch (err) {
        return bad(err instanceof Error ? err.message : String(err));
      }
      return json(200, { ok: true, ...sim.velocity() });
    }
    case "DELETE /_sim/velocity":
      sim.setVelocity(null);
      return json(200, { ok: true });
    case "GET /_sim/file": {
      const id = query.get("deviationid") ?? "";
      try {
        const size = sim.fileSize(id);
        return sim.fileSha256(id).then((sha256) => json(200, { deviationid: id.toUpperCase(), size, sha256 }));
      } catch (err) {
        return bad(err instanceof Error ? err.message : String(err));
      }
    }
    default:
      return json(404, { error: "not_found", error_description: `no control route ${route}`, status: "error" });
  }
}
