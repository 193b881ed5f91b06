// The read model of `dvault status` and the dashboard's overview (src/status/collect.ts): counts and sums
// over downloads, the weekly allowance and the archive's stored files. One query per method; the caller
// decides what a missing table or column (a schema not migrated yet) means.
import type { ExpressionBuilder } from "kysely";
import { kysely, sql } from "./kysely.ts";
import type { DB } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/** Accounts whose grant only a new login can bring back. */
const LOST = ["needs_reauth", "revoked"] as const;

/**
 * A downloads row `d` that only a new login can move: its account has no usable grant, or it belongs to
 * no account yet and no user account has one (src/downloads/run-once.ts claims nothing for them).
 */
/**
 * Rows that wait for a login: their account's grant is lost, or is one of `alsoLost` (accounts whose tokens the
 * install's key cannot read, src/crypto/install-key.ts), or no account is named and every user account is so.
 */
function blockedRow(eb: ExpressionBuilder<DB & { d: DB["downloads"] }, "d">, alsoLost: readonly number[]) {
  const accounts = eb.selectFrom("accounts as a").select(sql`1`.as("one"));
  const ids = [...alsoLost];
  const own = accounts.whereRef("a.id", "=", "d.account_id");
  const users = accounts.where("a.kind", "=", "user");
  return eb.or([
    eb.exists(ids.length ? own.where((w) => w.or([w("a.state", "in", LOST), w("a.id", "in", ids)])) : own.where("a.state", "in", LOST)),
    eb.and([
      eb("d.account_id", "is", null),
      eb.exists(users),
      eb.not(
        eb.exists(ids.length ? users.where((w) => w.and([w("a.state", "not in", LOST), w("a.id", "not in", ids)])) : users.where("a.state", "not in", LOST)),
      ),
    ]),
  ]);
}

const count = sql<number>`count(*)::int`;

/** Rows per download status, with the bytes of the stored ones (done, degraded) as text. */
export type DownloadStatusCount = Awaited<ReturnType<StatusRepository["countDownloadsByStatus"]>>[number];

export class StatusRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Whether this session's database refuses writes: a standby in recovery, or read-only by default
   * (default_transaction_read_only); null when it takes them. A full disk shows only when a write needs room.
   */
  async writeRefusal(): Promise<"standby" | "read-only" | null> {
    const { rows } = await sql<{
      standby: boolean;
      read_only: string;
    }>`SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') AS read_only`.execute(kysely(this.db));
    if (rows[0]?.standby) return "standby";
    return rows[0]?.read_only === "on" ? "read-only" : null;
  }

  /**
   * Rows per download status, with the bytes of the stored ones (done, degraded) as text: the sums of the shards of
   * download_status_counts, which statement triggers keep exact (migration 20261129060000_download_counts).
   */
  async countDownloadsByStatus() {
    return (
      kysely(this.db)
        .selectFrom("download_status_counts")
        .select((eb) => [
          eb.cast<string>("status", "text").as("status"),
          sql<number>`sum(items)::int`.as("n"),
          eb.cast<string | null>(eb.fn.sum("bytes").filterWhere("status", "in", ["done", "degraded"]), "text").as("bytes"),
        ])
        .groupBy("status")
        // A status whose rows are all gone again keeps its rows at 0: the statuses no row has are left out, as a count.
        .having(sql`sum(items)`, "<>", 0)
        .execute()
    );
  }

  /** When the first download deferred by the quota is tried again; null when none has a time. */
  async nextQuotaWindow(): Promise<Date | null> {
    const row = await kysely(this.db)
      .selectFrom("downloads")
      .select((eb) => eb.fn.min("next_attempt_at").as("at"))
      .where("status", "=", "deferred_quota")
      .executeTakeFirst();
    return row?.at ?? null;
  }

  /** Rows that only a new login can move, and how many of them failed. */
  async countWaitingForLogin(alsoLost: readonly number[] = []): Promise<{ rows: number; failed: number } | undefined> {
    return kysely(this.db)
      .selectFrom("downloads as d")
      .select((eb) => [count.as("rows"), eb.cast<number>(eb.fn.countAll().filterWhere("d.status", "=", "failed"), "integer").as("failed")])
      .where((eb) =>
        eb.and([
          eb.or([eb("d.status", "in", ["wanted", "queued"]), eb.and([eb("d.status", "=", "failed"), eb("d.next_attempt_at", "is not", null)])]),
          blockedRow(eb, alsoLost),
        ]),
      )
      .executeTakeFirst();
  }

  /** Failed rows retried on their own (src/downloads/retry.ts), and the first next attempt among them. */
  async countFailedRetrying(alsoLost: readonly number[] = []): Promise<{ n: number; at: Date | null } | undefined> {
    return kysely(this.db)
      .selectFrom("downloads as d")
      .select((eb) => [count.as("n"), eb.fn.min("d.next_attempt_at").as("at")])
      .where((eb) => eb.and([eb("d.status", "=", "failed"), eb("d.next_attempt_at", "is not", null), eb.not(blockedRow(eb, alsoLost))]))
      .executeTakeFirst();
  }

  /**
   * Stored files and their bytes (as text); content-addressed files shared between downloads count once: the sums of
   * the shards of stored_file_totals, kept by the triggers of migration 20261129060000_download_counts.
   */
  async storedArchive(): Promise<{ files: number; bytes: string | null } | undefined> {
    return kysely(this.db)
      .selectFrom("stored_file_totals")
      .select([sql<number>`coalesce(sum(files), 0)::int`.as("files"), sql<string | null>`sum(bytes)::text`.as("bytes")])
      .executeTakeFirst();
  }
}
