// What status reads from outside the mirror: the downloads pause switch and worker heartbeats (the coordination
// store: src/coord/coordinator.ts), and the API pace of each pacer key (the engine's pacer store).
import type { Coordinator } from "../coord/coordinator.ts";
import { readDownloadsPauseState } from "../coord/downloads-pause.ts";
import type { PacerStore } from "../api/pacer-store.ts";
import { liveHolders } from "../queue/holder.ts";
import { JOB_ROLES } from "../queue/worker-roles.ts";
import type { PacingStatusView, WorkerStatusView } from "./schema.ts";

/**
 * The pause switch belongs to the downloads worker (src/downloads/disk-guard.ts sets it while disk space is short),
 * read as the digest's alerts read it (src/coord/downloads-pause.ts readDownloadsPauseState).
 */
export async function readPausedFlag(coord: Coordinator, prefix: string): Promise<{ paused: boolean; reason: string | null }> {
  const pause = await readDownloadsPauseState(coord, prefix);
  return { paused: pause.paused, reason: pause.reason ?? null };
}

/** Heartbeats are `<prefix>:heartbeat:<host>:<pid>` = {id, at}, expiring after a minute without a beat. */
export async function workerHeartbeats(coord: Coordinator, prefix: string, now: number): Promise<WorkerStatusView[]> {
  const base = `${prefix}:heartbeat:`;
  const keys = await coord.keysStartingWith(base);
  if (keys.length === 0) return [];
  const values = await coord.getMany(keys);
  const out: WorkerStatusView[] = keys.map((key, i) => {
    const id = key.slice(base.length);
    const colon = id.lastIndexOf(":");
    const pid = colon > 0 ? Number(id.slice(colon + 1)) : NaN;
    let at: string | null = null;
    try {
      const parsed = JSON.parse(values[i] ?? "null") as { at?: unknown } | null;
      if (parsed && typeof parsed.at === "string" && !Number.isNaN(Date.parse(parsed.at))) at = new Date(parsed.at).toISOString();
    } catch {
      // A foreign value: the key's presence is still a heartbeat.
    }
    return {
      id,
      host: colon > 0 ? id.slice(0, colon) : id,
      pid: Number.isInteger(pid) ? pid : null,
      lastBeatAt: at,
      ageS: at ? Math.max(0, Math.round((now - Date.parse(at)) / 1000)) : null,
      roles: [] as string[],
    };
  });
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** The heartbeats with the roles their processes' leases name (a heartbeat is `<host>:<pid>`, a holder `<host>:<pid>:<nonce>`). */
export async function workersWithRoles(coord: Coordinator, prefix: string, now: number): Promise<WorkerStatusView[]> {
  const [workers, holders] = await Promise.all([workerHeartbeats(coord, prefix, now), liveHolders(coord, prefix)]);
  const rolesOf = new Map(holders.filter((h) => h.roles.length > 0).map((h) => [`${h.host}:${h.pid}`, h.roles]));
  return workers.map((w) => ({ ...w, roles: rolesOf.get(w.id) ?? w.roles }));
}

/**
 * The job roles no live worker runs; none while no worker runs (status says that). A worker that names no roles
 * is of a version before roles, which runs them all.
 */
export function missingRoles(workers: readonly WorkerStatusView[]): string[] {
  if (workers.length === 0 || workers.some((w) => w.roles.length === 0)) return [];
  const run = new Set(workers.flatMap((w) => w.roles));
  return JOB_ROLES.filter((role) => !run.has(role));
}

/**
 * Each pacer key's rate, learned rate and time lost to throttling (src/api/pacer.ts), from the engine's pacer or
 * its store (src/services.ts pacerStoreFor), Redis or PostgreSQL alone; `now` is the wall clock.
 */
export async function pacingStatusesOf(store: Pick<PacerStore, "keys" | "status">, now: number): Promise<PacingStatusView[]> {
  const keys = await store.keys();
  const statuses = await Promise.all(keys.map((key) => store.status(key, now)));
  return statuses.map((s) => ({
    key: s.key,
    rate: s.rate,
    learnedRate: s.learnedRate,
    refusedRate: s.refusedRate,
    heldUntil: s.blockedUntil > now ? new Date(s.blockedUntil).toISOString() : null,
    throttledS: Math.round(s.lostMs / 100) / 10,
  }));
}
