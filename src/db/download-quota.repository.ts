// The weekly allowance of original downloads, counted in Postgres so it survives restarts and is shared
// by every process: one row per (account, service week), changed only by single atomic statements.
import type { Kysely } from "kysely";
import { kysely, sql } from "./kysely.ts";
import type { DB, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/**
 * One account's service week as the ledger says it: what status, the dashboard, `account set` and the downloads
 * themselves show and decide by (docs/status.md, `downloads.quota`).
 */
export type QuotaWeek = {
  /** Successful /deviation/download calls of the week (a call the service refused gives its reservation back). */
  used: number;
  /**
   * The week's allowance: the configured one, unless the service refused before it was used up; then what the
   * service really allowed, the count of the week when it refused (docs/service-behaviour.md#quota-weekly: the
   * service publishes no number, it refuses).
   */
  allowance: number;
  /** Where `allowance` comes from: `configured`, or `service` (refused before the configured number was reached). */
  allowanceFrom: "configured" | "service";
  /** The account's own allowance (`dvault account set --download-quota`), else DVAULT_DOWNLOAD_QUOTA. */
  configured: number;
  /** 0 once the service refused, whatever was counted. */
  remaining: number;
  exhaustedAt: Date | null;
  exhaustedReason: string | null;
};

/** A week's ledger row, with the allowance configured for its account. */
type QuotaWeekRow = Pick<Row<"download_quota_usage">, "used" | "exhausted_at" | "exhausted_reason"> & { configured: number };

/** The one derivation of a week's figures from its ledger row. */
export function quotaWeekOf(row: QuotaWeekRow): QuotaWeek {
  const exhausted = row.exhausted_at !== null;
  const refusedEarly = exhausted && row.used < row.configured;
  return {
    used: row.used,
    allowance: refusedEarly ? row.used : row.configured,
    allowanceFrom: refusedEarly ? "service" : "configured",
    configured: row.configured,
    remaining: exhausted ? 0 : Math.max(0, row.configured - row.used),
    exhaustedAt: row.exhausted_at,
    exhaustedReason: exhausted ? (row.exhausted_reason ?? "the service refused an original download this week") : null,
  };
}

export class DownloadQuotaRepository {
  private readonly k: Kysely<DB>;

  constructor(db: Queryable) {
    this.k = kysely(db);
  }

  /**
   * Takes one download from the week's allowance (the account's override, else `defaultAllowance`) if
   * any is left: one INSERT ... ON CONFLICT DO UPDATE ... WHERE used < allowance, so concurrent callers
   * can never overspend. Returns the new count, or undefined when the allowance is spent.
   */
  async tryConsume(args: {
    accountId: number;
    weekStart: string;
    defaultAllowance: number;
    at: Date;
  }): Promise<{ used: number; allowance: number } | undefined> {
    const allowance = allowanceOf(args.accountId, args.defaultAllowance);
    // The INSERT happens only when the allowance is above zero; on conflict the UPDATE only while used < allowance.
    const { rows } = await sql<Pick<Row<"download_quota_usage">, "used"> & { allowance: number }>`
      INSERT INTO download_quota_usage AS q (account_id, week_start, used, updated_at)
      SELECT ${args.accountId}, ${args.weekStart}::date, 1, ${args.at}::timestamptz WHERE ${allowance} > 0
      ON CONFLICT (account_id, week_start) DO UPDATE SET used = q.used + 1, updated_at = ${args.at}
        WHERE q.used < ${allowance} AND q.exhausted_at IS NULL
      RETURNING used, ${allowance} AS allowance`.execute(this.k);
    return rows[0];
  }

  /** Gives one back: the call it was taken for failed before the service handed out a file. */
  async release(args: { accountId: number; weekStart: string; at: Date }): Promise<void> {
    await this.k
      .updateTable("download_quota_usage")
      .set({ used: sql`GREATEST(used - 1, 0)`, updated_at: args.at })
      .where("account_id", "=", args.accountId)
      .where("week_start", "=", sql<Date>`${args.weekStart}::date`)
      .execute();
  }

  /** The service refused as if the allowance were spent: the week is spent whatever dvault counted. `reason` says what was seen. */
  async markExhausted(args: { accountId: number; weekStart: string; at: Date; reason: string }): Promise<void> {
    // The count stays what was used: the refusal, not an inflated count, is what closes the week (tryConsume's
    // exhausted_at IS NULL), and the count at the refusal is the allowance the service really gave (quotaWeekOf).
    await sql`
      INSERT INTO download_quota_usage AS q (account_id, week_start, used, exhausted_at, exhausted_reason, updated_at)
      VALUES (${args.accountId}, ${args.weekStart}::date, 0, ${args.at}, ${args.reason}, ${args.at})
      ON CONFLICT (account_id, week_start) DO UPDATE SET exhausted_at = COALESCE(q.exhausted_at, ${args.at}),
        exhausted_reason = COALESCE(q.exhausted_reason, ${args.reason}), updated_at = ${args.at}`.execute(this.k);
  }

  /** One account's week (no row yet = nothing used). */
  async usage(args: { accountId: number; weekStart: string; defaultAllowance: number }): Promise<QuotaWeek> {
    const { rows } = await sql<QuotaWeekRow>`
      SELECT COALESCE(q.used, 0) AS used, ${allowanceOf(args.accountId, args.defaultAllowance)} AS configured, q.exhausted_at, q.exhausted_reason
      FROM (SELECT 1) AS one LEFT JOIN download_quota_usage q ON q.account_id = ${args.accountId} AND q.week_start = ${args.weekStart}::date`.execute(this.k);
    return quotaWeekOf(rows[0] ?? { used: 0, configured: args.defaultAllowance, exhausted_at: null, exhausted_reason: null });
  }

  /** Every user account's week, by account id, in one read (status, the dashboard, metrics). */
  async usageOfAccounts(args: { weekStart: string; defaultAllowance: number }): Promise<Map<number, QuotaWeek>> {
    const { rows } = await sql<QuotaWeekRow & Pick<Row<"download_quota_usage">, "account_id">>`
      SELECT a.id AS account_id, COALESCE(q.used, 0) AS used, COALESCE(a.download_quota, ${args.defaultAllowance}::integer) AS configured,
        q.exhausted_at, q.exhausted_reason
      FROM accounts a LEFT JOIN download_quota_usage q ON q.account_id = a.id AND q.week_start = ${args.weekStart}::date
      WHERE a.kind = 'user'`.execute(this.k);
    return new Map(rows.map((r) => [r.account_id, quotaWeekOf(r)]));
  }

  /** Sets (or with null clears) an account's own weekly allowance. Returns false when no such account. */
  async setAccountAllowance(accountName: string, allowance: number | null, at: Date): Promise<boolean> {
    const result = await this.k.updateTable("accounts").set({ download_quota: allowance, updated_at: at }).where("name", "=", accountName).executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }
}

/** The account's own weekly allowance, else the default. */
const allowanceOf = (accountId: number, defaultAllowance: number) =>
  sql<number>`COALESCE((SELECT download_quota FROM accounts WHERE id = ${accountId}), ${defaultAllowance}::integer)`;
