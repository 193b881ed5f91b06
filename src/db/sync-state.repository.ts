// Per-source sync state: cursors of unfinished walks (saved in the same transaction as their page),
// the outcome and counters of the last run, sweeps, and the gaps a walk could not close.
import type { Kysely } from "kysely";
import { kysely, sql } from "./kysely.ts";
import type { DB, Row, SyncResult } from "./schema.ts";
import { storableJson } from "./storable-text.ts";
import type { Queryable } from "./with-transaction.ts";

/** One source of one account; `key` tells instances apart (a folder id, a tracked username), '' if one. */
export type SourceRef = { accountId: number; source: string; key?: string };

/** How a run ended (the sync_result enum). */
export type { SyncResult };

export type RunCounters = {
  new: number;
  changed: number;
  removed: number;
  apiCalls: number;
  /** Requests that waited for dvault's own pacer (column throttle_waits, named before the words were told apart). */
  paced: number;
  /** Answers in which the service refused a request as too many. */
  throttled: number;
  durationMs: number;
};

/** What a walk could not reach: a folder past the offset ceiling, a count that disagrees with the profile. */
export type SourceGap = { expected: number | null; mirrored: number | null; reason: string; recordedAt: string };

export type SourceState = {
  accountId: number;
  source: string;
  key: string;
  /** Whatever the handler needs to resume (cursor, offset, folder...); null when no walk is unfinished. */
  cursor: unknown;
  sweepStartedAt: Date | null;
  lastRunAt: Date | null;
  lastResult: SyncResult | null;
  lastError: string | null;
  unavailableReason: string | null;
  lastCompleteSweepAt: Date | null;
  nextRunAt: Date | null;
  counters: RunCounters;
  /** Keyed by scope (e.g. a folder id). */
  gaps: Record<string, SourceGap>;
  updatedAt: Date;
};

/** The fields to change; absent (or undefined) fields keep their value, null clears one. */
export type SourceStatePatch = Partial<{
  cursor: unknown;
  sweepStartedAt: Date | null;
  lastRunAt: Date | null;
  lastResult: SyncResult | null;
  lastError: string | null;
  unavailableReason: string | null;
  lastCompleteSweepAt: Date | null;
  nextRunAt: Date | null;
  counters: RunCounters;
}>;

export class SyncStateRepository {
  private readonly k: Kysely<DB>;

  constructor(db: Queryable) {
    this.k = kysely(db);
  }

  async getSourceState(ref: SourceRef): Promise<SourceState | null> {
    const row = await this.k
      .selectFrom("sync_sources")
      .selectAll()
      .where("account_id", "=", ref.accountId)
      .where("source", "=", ref.source)
      .where("key", "=", ref.key ?? "")
      .executeTakeFirst();
    return row ? toState(row) : null;
  }

  /** Every source of an account, by source and key. */
  async listSourceStates(accountId: number): Promise<SourceState[]> {
    const rows = await this.k.selectFrom("sync_sources").selectAll().where("account_id", "=", accountId).orderBy("source").orderBy("key").execute();
    return rows.map(toState);
  }

  /**
   * Creates or changes a source's state: only the fields present in `patch`. Call it with the same
   * Queryable as the page it belongs to, inside withTransaction, so cursor and page commit together.
   */
  async saveSourceState(ref: SourceRef, patch: SourceStatePatch, at: Date = new Date()): Promise<void> {
    await save(ref, storableJson(patchJson(patch)), at).execute(this.k);
  }

  /** Records (or replaces) the gap of one scope, e.g. a folder past the offset ceiling with its expected count. */
  async recordGap(ref: SourceRef, scope: string, gap: Omit<SourceGap, "recordedAt">, at: Date = new Date()): Promise<void> {
    const value: SourceGap = { ...gap, recordedAt: at.toISOString() };
    await sql`
      INSERT INTO sync_sources AS s (account_id, source, key, gaps, updated_at)
      VALUES (${ref.accountId}, ${ref.source}, ${ref.key ?? ""}, jsonb_build_object(${scope}::text, ${storableJson(value)}::jsonb), ${at})
      ON CONFLICT (account_id, source, key) DO UPDATE SET gaps = s.gaps || EXCLUDED.gaps, updated_at = EXCLUDED.updated_at`.execute(this.k);
  }

  /** Forgets the gap of one scope once a walk reached everything. */
  async clearGap(ref: SourceRef, scope: string, at: Date = new Date()): Promise<void> {
    await this.k
      .updateTable("sync_sources")
      .set({ gaps: sql`gaps - ${scope}::text`, updated_at: at })
      .where("account_id", "=", ref.accountId)
      .where("source", "=", ref.source)
      .where("key", "=", ref.key ?? "")
      .execute();
  }
}

function toState(r: Row<"sync_sources">): SourceState {
  return {
    accountId: r.account_id,
    source: r.source,
    key: r.key,
    cursor: r.cursor,
    sweepStartedAt: r.sweep_started_at,
    lastRunAt: r.last_run_at,
    lastResult: r.last_result,
    lastError: r.last_error,
    unavailableReason: r.unavailable_reason,
    lastCompleteSweepAt: r.last_complete_sweep_at,
    nextRunAt: r.next_run_at,
    counters: {
      new: r.new_count,
      changed: r.changed_count,
      removed: r.removed_count,
      apiCalls: r.api_calls,
      paced: r.throttle_waits,
      throttled: r.throttled,
      durationMs: r.duration_ms,
    },
    gaps: r.gaps as Record<string, SourceGap>,
    updatedAt: r.updated_at,
  };
}

/** The patch as a jsonb object with column names as keys; a key is present only when the field is. */
function patchJson(p: SourceStatePatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const set = (column: string, value: unknown) => {
    out[column] = value instanceof Date ? value.toISOString() : value;
  };
  if (p.cursor !== undefined) set("cursor", p.cursor);
  if (p.sweepStartedAt !== undefined) set("sweep_started_at", p.sweepStartedAt);
  if (p.lastRunAt !== undefined) set("last_run_at", p.lastRunAt);
  if (p.lastResult !== undefined) set("last_result", p.lastResult);
  if (p.lastError !== undefined) set("last_error", p.lastError);
  if (p.unavailableReason !== undefined) set("unavailable_reason", p.unavailableReason);
  if (p.lastCompleteSweepAt !== undefined) set("last_complete_sweep_at", p.lastCompleteSweepAt);
  if (p.nextRunAt !== undefined) set("next_run_at", p.nextRunAt);
  if (p.counters) {
    set("new_count", p.counters.new);
    set("changed_count", p.counters.changed);
    set("removed_count", p.counters.removed);
    set("api_calls", p.counters.apiCalls);
    set("throttle_waits", p.counters.paced);
    set("throttled", p.counters.throttled);
    set("duration_ms", p.counters.durationMs);
  }
  return out;
}

/** A column takes the patch's value when the patch has its key, else keeps its own. */
const keep = (column: string) =>
  sql`${sql.ref(column)} = CASE WHEN (SELECT p FROM patch) ? ${sql.lit(column)} THEN EXCLUDED.${sql.ref(column)} ELSE s.${sql.ref(column)} END`;

const PATCHED = [
  "cursor",
  "sweep_started_at",
  "last_run_at",
  "last_result",
  "last_error",
  "unavailable_reason",
  "last_complete_sweep_at",
  "next_run_at",
  "new_count",
  "changed_count",
  "removed_count",
  "api_calls",
  "throttle_waits",
  "throttled",
  "duration_ms",
] as const;

/** Creates the source's row from the patch (a jsonb object keyed by column), or changes only the patch's columns. */
const save = (ref: SourceRef, patch: string, at: Date) => sql`
WITH patch AS (SELECT ${patch}::jsonb AS p)
INSERT INTO sync_sources AS s (account_id, source, key, cursor, sweep_started_at, last_run_at, last_result, last_error,
  unavailable_reason, last_complete_sweep_at, next_run_at, new_count, changed_count, removed_count, api_calls,
  throttle_waits, throttled, duration_ms, updated_at)
SELECT ${ref.accountId}, ${ref.source}, ${ref.key ?? ""}, NULLIF(p->'cursor', 'null'::jsonb), (p->>'sweep_started_at')::timestamptz,
  (p->>'last_run_at')::timestamptz, (p->>'last_result')::sync_result, p->>'last_error', p->>'unavailable_reason',
  (p->>'last_complete_sweep_at')::timestamptz, (p->>'next_run_at')::timestamptz,
  COALESCE((p->>'new_count')::int, 0), COALESCE((p->>'changed_count')::int, 0), COALESCE((p->>'removed_count')::int, 0),
  COALESCE((p->>'api_calls')::int, 0), COALESCE((p->>'throttle_waits')::int, 0),
  COALESCE((p->>'throttled')::int, 0), COALESCE((p->>'duration_ms')::int, 0), ${at}::timestamptz
FROM patch
ON CONFLICT (account_id, source, key) DO UPDATE SET
  ${sql.join(PATCHED.map(keep))},
  updated_at = EXCLUDED.updated_at`;
