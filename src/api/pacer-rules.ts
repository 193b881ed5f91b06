// The pacer's two scripts (src/api/pacer-scripts.ts) in TypeScript, for an engine without Lua: each step reads and
// changes one key's row, which the PostgreSQL store (src/api/pacer-sql-store.ts) holds locked (SELECT … FOR
// UPDATE, src/db/pacer-rows.ts) while the step runs, so two processes cannot both decide a key is free.
//
// Why two sources and not one: Redis runs the Lua inside the server, atomic without a round trip, and an
// install's learned rates live in the keys the scripts write. Running this file for Redis too would need a
// WATCH/MULTI retry loop (more round trips, retries under contention: another engine's behaviour), and Lua
// cannot run in PostgreSQL. So the Lua stays for Redis and this is its line-by-line translation, in the same
// order with the same names; test/medium/pacer-stores-agree.test.ts drives both with the same random operations
// and compares every answer and state, and the pacer's tests run on both. Change one, change the other.
//
// Numbers: Redis keeps the hash's numbers as the shortest text that reads back as the same double, and Lua
// computes in doubles, as this does; the row keeps them in JSON, exact too. The sets' own TTLs in Redis only
// collect garbage (every member expires before its set), so here the members' scores alone are kept; the state
// hash's TTL is kept as Redis keeps it, a time to live by the server's clock (stateTtlMs, which src/db/pacer-rows.ts
// stores as an expiry by the database's clock), not by the pacer's clock, which a test may move at will.
import type { AcquireAnswer, AcquireRequest, ReleaseRequest } from "./pacer-store.ts";

/** One key's row: the state hash (fields of src/api/pacer.ts), and the three sorted sets as id → score. */
export type PacerRow = {
  state: Record<string, number>;
  /** How long the state has left, ms (the hash's PTTL); ≤ 0: gone. */
  stateTtlMs: number;
  /** Permit id → lock expiry. */
  holders: Record<string, number>;
  /** Waiting permit id → arrival. */
  queue: Record<string, number>;
  /** Waiting permit id → expiry (a dead waiter loses its place). */
  alive: Record<string, number>;
};

export const emptyPacerRow = (): PacerRow => ({ state: {}, stateTtlMs: 0, holders: {}, queue: {}, alive: {} });

/** The row as it is, changed in place: a state past its time to live is gone, as Redis drops an expired hash. */
export function liveRow(row: PacerRow): PacerRow {
  if (row.stateTtlMs <= 0) {
    row.state = {};
    row.stateTtlMs = 0;
  }
  return row;
}

/** ZREMRANGEBYSCORE set -inf max: the ids removed. */
function removeUpTo(set: Record<string, number>, max: number): string[] {
  const gone = Object.keys(set).filter((id) => (set[id] as number) <= max);
  for (const id of gone) delete set[id];
  return gone;
}

/** A sorted set's order: by score, then by member's bytes (the ids are ASCII). */
function ordered(set: Record<string, number>): string[] {
  return Object.keys(set).sort((a, b) => (set[a] as number) - (set[b] as number) || (a < b ? -1 : a > b ? 1 : 0));
}

/** PEXPIRE of the state hash. */
function setStateTtl(row: PacerRow, now: number, blockedUntil: number, stateTtlMs: number): void {
  row.stateTtlMs = Math.max(blockedUntil - now, 0) + stateTtlMs;
}

/** ACQUIRE_LUA on a live row (liveRow), changing it in place. */
export function acquireStep(row: PacerRow, a: AcquireRequest): AcquireAnswer {
  const { now, id } = a;
  removeUpTo(row.holders, now);
  for (const dead of removeUpTo(row.alive, now)) delete row.queue[dead];
  // Keep (or take) a place in the queue, alive until the caller is due back from its sleep.
  const wait = (ms: number, sleepMs: number, reason: "blocked" | "busy"): AcquireAnswer => {
    if (row.queue[id] === undefined) row.queue[id] = now;
    row.alive[id] = now + sleepMs + a.graceMs;
    return { granted: false, waitMs: ms, reason };
  };
  const s = row.state;
  const blockedUntil = s.blockedUntil ?? 0;
  const lastSend = s.lastSend ?? 0;
  let rate = s.rate;
  // A key idle for a while (a new run) starts again at what it learned, or at the start rate.
  const fresh = rate === undefined || now - Math.max(lastSend, blockedUntil) > a.idleMs;
  if (fresh || rate === undefined) rate = s.learned ?? a.startRate;
  rate = Math.min(a.maxRate, Math.max(a.minRate, rate));
  const interval = 1000 / rate;
  let nextAt = fresh ? 0 : lastSend + interval;
  if (blockedUntil > nextAt) nextAt = blockedUntil;
  if (nextAt > now) {
    const ms = Math.ceil(nextAt - now);
    return wait(ms, ms, "blocked");
  }
  const held = Object.keys(row.holders).length;
  const queue = ordered(row.queue);
  const rank = queue.includes(id) ? queue.indexOf(id) : queue.length;
  if (held + rank >= a.concurrency) {
    const first = ordered(row.holders)[0];
    const ms = first === undefined ? a.pollMs : Math.ceil((row.holders[first] as number) - now);
    return wait(ms, Math.min(ms, a.pollMs), "busy");
  }
  delete row.queue[id];
  delete row.alive[id];
  row.holders[id] = now + a.lockTtlMs;
  s.lastSend = now;
  s.rate = rate;
  let paced = true;
  if (fresh) {
    // A new run measures its throughput from its first call, and ends any hold episode of the last run.
    s.winCount = 0;
    s.winBusy = 0;
    s.inHold = 0;
  } else if (now - nextAt > interval) {
    paced = false;
  }
  setStateTtl(row, now, blockedUntil, a.stateTtlMs);
  return { granted: true, paced };
}

/** The release's view of the state hash (RELEASE_LUA's locals). */
type Episode = {
  blockedUntil: number;
  throttledAt: number;
  rate: number;
  learned: number | undefined;
  refusedRate: number;
  cutRate: number;
  holdMs: number;
  workedHold: number;
  inHold: number;
  clean: number;
  winBusy: number;
  winCount: number;
  lostMs: number;
};

/** RELEASE_LUA on a live row, changing it in place. Returns false when the key has no state (nothing learned). */
export function releaseStep(row: PacerRow, r: ReleaseRequest): boolean {
  delete row.holders[r.id];
  const s = row.state;
  if (s.rate === undefined) return false;
  const e: Episode = {
    blockedUntil: s.blockedUntil ?? 0,
    throttledAt: s.throttledAt ?? 0,
    rate: s.rate,
    learned: s.learned,
    refusedRate: s.refusedRate ?? 0,
    cutRate: s.cutRate ?? 0,
    holdMs: s.holdMs ?? 0,
    workedHold: s.workedHold ?? 0,
    inHold: s.inHold ?? 0,
    clean: s.clean ?? 0,
    winBusy: s.winBusy ?? 0,
    winCount: s.winCount ?? 0,
    lostMs: s.lostMs ?? 0,
  };
  // Only what was sent after the last refusal tells something new (requests in flight then do not count twice).
  const current = r.acquiredAt >= e.throttledAt;
  if (r.outcome === "throttled" && current) refused(e, r);
  else if (r.outcome === "success") succeeded(e, r, current);
  const { learned, ...fields } = e;
  Object.assign(s, fields);
  if (learned !== undefined) s.learned = learned;
  setStateTtl(row, r.now, e.blockedUntil, r.stateTtlMs);
  return true;
}

/** RELEASE_LUA's throttled branch (its comment says why each step). */
function refused(e: Episode, r: ReleaseRequest): void {
  const lone = e.inHold === 0 || (e.inHold === 1 && e.workedHold < 16 * r.holdMs);
  if (lone) {
    e.holdMs = Math.min(r.maxHoldMs, r.holdMs * 2 ** e.inHold);
    e.inHold = e.inHold + 1;
  } else if (e.inHold === 3) {
    e.holdMs = Math.min(r.maxHoldMs, e.holdMs * 2);
  } else {
    let measured = e.rate;
    if (e.winBusy > 0 && e.winCount > 0) measured = Math.max((e.winCount * 1000) / e.winBusy, e.rate * r.cut ** 6);
    e.refusedRate = e.rate;
    e.rate = Math.max(r.minRate, Math.min(e.rate * r.cut, measured));
    e.cutRate = e.rate;
    e.learned = e.rate;
    e.holdMs = Math.min(r.maxHoldMs, Math.max(e.holdMs * 2, e.workedHold));
    e.inHold = 3;
    e.winBusy = 0;
    e.winCount = 0;
  }
  e.clean = 0;
  e.throttledAt = r.now;
  const untilMs = r.now + Math.ceil(e.holdMs * r.jitterFactor);
  if (untilMs > e.blockedUntil) {
    const extra = untilMs - Math.max(r.now, e.blockedUntil);
    e.lostMs = e.lostMs + extra;
    if (!lone) e.winBusy = e.winBusy + extra;
    e.blockedUntil = untilMs;
  }
}

/** RELEASE_LUA's success branch. */
function succeeded(e: Episode, r: ReleaseRequest, current: boolean): void {
  e.winCount = e.winCount + 1;
  e.winBusy = e.winBusy + 1000 / e.rate;
  if (!current) return;
  if (e.inHold === 3) e.workedHold = e.holdMs;
  e.inHold = 0;
  if (r.paced && e.refusedRate === 0) e.rate = e.rate * r.slowStart;
  else if (r.paced) e.rate = e.rate + (r.increase * e.cutRate) / e.rate;
  e.rate = Math.min(r.maxRate, Math.max(r.minRate, e.rate));
  e.clean = e.clean + 1;
  if (e.clean >= r.learnAfter && e.refusedRate === 0) e.learned = e.rate;
}
