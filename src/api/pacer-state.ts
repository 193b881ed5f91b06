// Reading a pacer's state without a pacer (status, metrics, the dashboard): a key's pace from its stored fields,
// whichever store keeps them (src/api/pacer-store.ts), and the Redis store's reads: a key's pace as
// src/api/pacer-scripts.ts stores it, and the keys there are.
import type { Redis } from "ioredis";
import { scanKeys } from "../redis-scan.ts";

/**
 * A key's learned state as stored (the fields src/api/pacer.ts describes, and how long they have left), without the
 * permits and waiters of the processes using it: what `dvault engine migrate` (src/engine/move.ts) carries to the
 * other engine so that it starts at the learned rate, never faster.
 */
export type SavedPace = { fields: Record<string, number>; ttlMs: number };

/** A key's pace as stored (src/api/pacer-scripts.ts, src/api/pacer-rules.ts write it). */
export type PacerStatus = {
  key: string;
  /** Requests per second the key is paced at now (null: never used). */
  rate: number | null;
  /** The safe rate learned, where the next run starts (null: nothing learned yet). */
  learnedRate: number | null;
  /** The rate of the last refusal (null: never refused). */
  refusedRate: number | null;
  /** Epoch ms until which nobody may send with this key (0 when never held). */
  blockedUntil: number;
  /** The current (or last) hold after a refusal, before jitter. */
  holdMs: number;
  /** Time until the next request may start: the hold or the pace, whichever is later. */
  waitMs: number;
  /** Time lost to throttling: the sum of the holds. */
  lostMs: number;
  /** Permits currently held (live locks). */
  holders: number;
  /** Requests queued for the key across all processes. */
  waiters: number;
};

const numberOrNull = (v: string | null | undefined): number | null => (v === null || v === undefined || v === "" ? null : Number(v));

/** The state fields a status reads; absent when the key has none. */
export type PaceFields = Partial<Record<"rate" | "learned" | "refusedRate" | "blockedUntil" | "holdMs" | "lostMs" | "lastSend", number | null>>;

/** A key's pace from its stored fields and its live holders and waiters at `now`. */
export function paceStatus({
  key,
  now,
  fields,
  holders,
  waiters,
}: {
  key: string;
  now: number;
  fields: PaceFields;
  holders: number;
  waiters: number;
}): PacerStatus {
  const { rate, learned, refusedRate, blockedUntil: blocked, holdMs, lostMs, lastSend } = fields;
  const blockedUntil = blocked ?? 0;
  const nextAt = Math.max(blockedUntil, rate && lastSend !== null && lastSend !== undefined ? lastSend + 1000 / rate : 0);
  return {
    key,
    rate: rate ?? null,
    learnedRate: learned ?? null,
    refusedRate: refusedRate ? refusedRate : null,
    blockedUntil,
    holdMs: holdMs ?? 0,
    waitMs: Math.max(0, Math.ceil(nextAt - now)),
    lostMs: lostMs ?? 0,
    holders,
    waiters,
  };
}

/** A key's pace as stored in Redis; readable without a pacer (status, dashboard). */
export async function readPacerStatus(redis: Redis, prefix: string, key: string, now: number): Promise<PacerStatus> {
  const base = `${prefix}:pacer:${key}`;
  const [state, holders, waiters] = await Promise.all([
    redis.hmget(base, "rate", "learned", "refusedRate", "blockedUntil", "holdMs", "lostMs", "lastSend"),
    redis.zcount(`${base}:holders`, `(${now}`, "+inf"),
    redis.zcount(`${base}:waiters`, `(${now}`, "+inf"),
  ]);
  const [rate, learned, refusedRate, blockedUntil, holdMs, lostMs, lastSend] = state.map(numberOrNull);
  return paceStatus({ key, now, fields: { rate, learned, refusedRate, blockedUntil, holdMs, lostMs, lastSend }, holders, waiters });
}

/** The keys with pacer state under `prefix` (the holders/queue/waiters sets left out). */
export async function listPacerKeys(redis: Redis, prefix: string): Promise<string[]> {
  const base = `${prefix}:pacer:`;
  const keys = await scanKeys(redis, `${base}*`);
  return keys
    .filter((k) => !/:(holders|queue|waiters|released)$/.test(k))
    .map((k) => k.slice(base.length))
    .sort();
}

/** A key's state hash in Redis and its PTTL (-1: no expiry; the scripts always set one); undefined when it has none. */
export async function readSavedPace(redis: Redis, prefix: string, key: string): Promise<SavedPace | undefined> {
  const base = `${prefix}:pacer:${key}`;
  const [raw, ttlMs] = await Promise.all([redis.hgetall(base), redis.pttl(base)]);
  const fields = Object.fromEntries(Object.entries(raw).map(([name, value]) => [name, Number(value)]));
  return Object.keys(fields).length === 0 ? undefined : { fields, ttlMs };
}

/** Replaces the key's state hash with `saved`, in one transaction; its holders and waiters are left alone. */
export async function writeSavedPace(redis: Redis, prefix: string, key: string, { fields, ttlMs }: SavedPace): Promise<void> {
  const base = `${prefix}:pacer:${key}`;
  const multi = redis.multi().del(base);
  if (Object.keys(fields).length > 0) multi.hset(base, Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, String(value)])));
  if (ttlMs > 0) multi.pexpire(base, ttlMs);
  await multi.exec();
}
