// What `dvault engine migrate` (src/engine/move.ts) carries from one engine's store to the other's, key by key: each
// pacer key's learned state (src/api/pacer-state.ts#SavedPace), and the coordination values an install needs to go
// on as it was. What belongs to running processes (heartbeats, holder leases and their items, locks) is left behind:
// no process of the source runs when the move starts. Keys are rewritten from the source's prefix to the target's
// (an older Redis install may keep "dvault", src/queue/redis-prefix.ts).
import type { Pacer } from "../api/pacer.ts";
import type { Coordinator, CoordWrite } from "../coord/coordinator.ts";
import { knownWorkersKey } from "../digest/alerts.ts";
import { linksDirtyKey } from "../downloads/after-store.ts";
import { downloadsPausedKey, readDownloadsPause } from "../coord/downloads-pause.ts";
import { inertTextsKey } from "../downloads/inert-texts.ts";
import { paidAnswerLeftMs, paidDownloadsPrefix } from "../downloads/paid-downloads.ts";

/** One engine's stores, under the install's prefix there. */
export type StoreSide = { coord: Coordinator; pace: Pick<Pacer, "keys" | "saved" | "restore">; prefix: string };

/** The values kept, each read and written whole, by who owns it. */
const KEPT_VALUES: ReadonlyArray<{ what: string; key: (prefix: string) => string }> = [
  { what: "the downloads pause switch (src/downloads/disk-guard.ts)", key: downloadsPausedKey },
  { what: "the readable links' rebuild marker (src/downloads/after-store.ts)", key: linksDirtyKey },
  { what: "the inert-text rewrite's progress (src/downloads/inert-texts.ts)", key: inertTextsKey },
];

/** Copies each pacer key's state; the keys copied. */
export async function carryPace(from: StoreSide, to: StoreSide): Promise<string[]> {
  const carried: string[] = [];
  for (const key of await from.pace.keys()) {
    const saved = await from.pace.saved(key);
    if (!saved) continue;
    await to.pace.restore(key, saved);
    carried.push(key);
  }
  return carried;
}

export type CarriedValues = { paused: boolean; values: number; knownWorkers: number; paidAnswers: number };

/**
 * Makes the target's kept values those of the source, a value the source lacks removed (a pause switch lifted
 * meanwhile must not come back): the switches and markers, the alerts' known workers (src/digest/alerts.ts), and
 * the paid download answers (src/downloads/paid-downloads.ts) with what is left of their time.
 */
export async function carryValues(from: StoreSide, to: StoreSide, now: number): Promise<CarriedValues> {
  const values = await from.coord.getMany(KEPT_VALUES.map((v) => v.key(from.prefix)));
  // The pause switch as its readers find it: under an older version's key too (src/coord/downloads-pause.ts).
  const pauseAt = KEPT_VALUES.findIndex((v) => v.key === downloadsPausedKey);
  values[pauseAt] = await readDownloadsPause(from.coord, from.prefix);
  const writes: CoordWrite[] = KEPT_VALUES.map((v, i) => {
    const value = values[i];
    return value === undefined ? { remove: [v.key(to.prefix)] } : { put: v.key(to.prefix), value };
  });
  const known = await from.coord.hashGetAll(knownWorkersKey(from.prefix));
  writes.push({ remove: [knownWorkersKey(to.prefix)] });
  if (Object.keys(known).length > 0) writes.push({ hashPut: knownWorkersKey(to.prefix), fields: known });
  const paid = await paidWrites(from, to, now);
  await to.coord.writeTogether([...writes, ...paid.writes]);
  const paused = values[pauseAt] !== undefined;
  return { paused, values: values.filter((v) => v !== undefined).length, knownWorkers: Object.keys(known).length, paidAnswers: paid.count };
}

async function paidWrites(from: StoreSide, to: StoreSide, now: number): Promise<{ writes: CoordWrite[]; count: number }> {
  const fromPrefix = paidDownloadsPrefix(from.prefix);
  const toPrefix = paidDownloadsPrefix(to.prefix);
  const stale = await to.coord.keysStartingWith(toPrefix);
  const writes: CoordWrite[] = stale.length > 0 ? [{ remove: stale }] : [];
  const keys = await from.coord.keysStartingWith(fromPrefix);
  const found = await from.coord.getMany(keys);
  let count = 0;
  for (const [i, key] of keys.entries()) {
    const value = found[i];
    const ttlMs = value === undefined ? 0 : paidAnswerLeftMs(value, now);
    if (value === undefined || ttlMs <= 0) continue;
    writes.push({ put: `${toPrefix}${key.slice(fromPrefix.length)}`, value, ttlMs });
    count++;
  }
  return { writes, count };
}
