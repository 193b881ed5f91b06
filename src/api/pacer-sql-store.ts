// The pacer's store on PostgreSQL alone (src/api/pacer-store.ts): each acquire and release is the TypeScript
// translation of its Lua script (src/api/pacer-rules.ts, whose header says why there are two), applied to the
// key's row inside one transaction that holds the row locked (src/db/pacer-rows.ts: SELECT … FOR UPDATE, in the
// schema dvault_pacer); a release's wake-up is a NOTIFY sent with its commit, heard on one LISTEN connection
// per store. A lost notification only means polling, as a lost Redis message does.
import { acquireStep, emptyPacerRow, liveRow, type PacerRow, releaseStep } from "./pacer-rules.ts";
import { paceStatus } from "./pacer-state.ts";
import type { PacerStore } from "./pacer-store.ts";

/** What src/db/pacer-rows.ts serves: the rows of one namespace (src/db may not import this; services checks the shapes). */
export type PacerRows = {
  /**
   * Runs `step` on the key's row (an empty one when there is none) in one transaction holding the row locked,
   * and stores what it leaves; with `notice`, the key's release is announced when the transaction commits.
   */
  change<T>(key: string, step: (row: PacerRow) => T, notice?: string): Promise<T>;
  /** The key's row as stored, unlocked; null when there is none. */
  read(key: string): Promise<PacerRow | null>;
  /** The keys whose state has not expired, sorted. */
  keys(): Promise<string[]>;
  /** Calls `onNotice(key, notice)` for every announced release of the namespace; resolves once the server listens. */
  listen(onNotice: (key: string, notice: string) => void): Promise<void>;
  /** Closes the LISTEN connection. */
  close(): Promise<void>;
};

export function sqlPacerStore(rows: PacerRows): PacerStore {
  let listener: (key: string, releaser: string) => void = () => undefined;
  return {
    acquire: (key, a) => rows.change(key, (row) => acquireStep(liveRow(row), a)),
    async release(key, r) {
      await rows.change(key, (row) => releaseStep(liveRow(row), r), r.releaser);
    },
    async leave(key, id) {
      await rows.change(key, (row) => {
        delete row.queue[id];
        delete row.alive[id];
      });
    },
    onRelease(fn) {
      listener = fn;
    },
    // One channel for every key: a waiter's first LISTEN serves them all.
    watch: () => rows.listen((key, releaser) => listener(key, releaser)),
    async status(key, now) {
      const row = liveRow((await rows.read(key)) ?? emptyPacerRow());
      const s = row.state;
      const live = (set: Record<string, number>) => Object.values(set).filter((expiry) => expiry > now).length;
      const fields = {
        rate: s.rate,
        learned: s.learned,
        refusedRate: s.refusedRate,
        blockedUntil: s.blockedUntil,
        holdMs: s.holdMs,
        lostMs: s.lostMs,
        lastSend: s.lastSend,
      };
      return paceStatus({ key, now, fields, holders: live(row.holders), waiters: live(row.alive) });
    },
    keys: () => rows.keys(),
    async saved(key) {
      const row = await rows.read(key);
      const live = row ? liveRow(row) : undefined;
      return live && Object.keys(live.state).length > 0 ? { fields: { ...live.state }, ttlMs: live.stateTtlMs } : undefined;
    },
    async restore(key, saved) {
      await rows.change(key, (row) => {
        row.state = { ...saved.fields };
        // No expiry in Redis (-1) is kept as a long one: the row's state must have a time to live to be read.
        row.stateTtlMs = saved.ttlMs > 0 ? saved.ttlMs : 365 * 24 * 3600_000;
      });
    },
    close: () => rows.close(),
  };
}
