// The weekly allowance of original downloads, counted in Postgres so it survives restarts and is shared
// by every process: one row per (account, service week), changed only by single atomic statements.
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

type QuotaWeekRow = { used: number; configured: number; exhausted_at: Date | null; exhausted_reason: string | null };

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
  constructor(private readonly db: Queryable) {}

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
    const { rows } = await this.db.query<{ used: number; allowance: number }>(TRY_CONSUME, [args.accountId, args.weekStart, args.defaultAllowance, args.at]);
    return rows[0];
  }

  /** Gives one back: the call it was taken for failed before the service handed out a file. */
  async release(args: { accountId: number; weekStart: string; at: Date }): Promise<void> {
    await this.db.query(RELEASE, [args.accountId, args.weekStart, args.at]);
  }

  /** The service refused as if the allowance were spent: the week is spent whatever dvault counted. `reason` says what was seen. */
  async markExhausted(args: { accountId: number; weekStart: string; at: Date; reason: string }): Promise<void> {
    await this.db.query(MARK_EXHAUSTED, [args.accountId, args.weekStart, args.at, args.reason]);
  }

  /** One account's week (no row yet = nothing used). */
  async usage(args: { accountId: number; weekStart: string; defaultAllowance: number }): Promise<QuotaWeek> {
    const { rows } = await this.db.query<QuotaWeekRow>(USAGE, [args.accountId, args.weekStart, args.defaultAllowance]);
    return quotaWeekOf(rows[0] ?? { used: 0, configured: args.defaultAllowance, exhausted_at: null, exhausted_reason: null });
  }

  /** Every user account's week, by account id, in one read (status, the dashboard, metrics). */
  async usageOfAccounts(args: { weekStart: string; defaultAllowance: number }): Promise<Map<number, QuotaWeek>> {
    const { rows } = await this.db.query<QuotaWeekRow & { account_id: number }>(USAGE_OF_ACCOUNTS, [args.weekStart, args.defaultAllowance]);
    return new Map(rows.map((r) => [r.account_id, quotaWeekOf(r)]));
  }

  /** Sets (or with null clears) an account's own weekly allowance. Returns false when no such account. */
  async setAccountAllowance(accountName: string, allowance: number | null, at: Date): Promise<boolean> {
    const result = await this.db.query(SET_ALLOWANCE, [accountName, allowance, at]);
    return (result.rowCount ?? 0) === 1;
  }
}

const ALLOWANCE = `COALESCE((SELECT download_quota FROM accounts WHERE id = $1), $3::integer)`;

// The INSERT happens only when the allowance is above zero; on conflict the UPDATE only while used < allowance.
const TRY_CONSUME = `
INSERT INTO download_quota_usage AS q (account_id, week_start, used, updated_at)
SELECT $1, $2::date, 1, $4 WHERE ${ALLOWANCE} > 0
ON CONFLICT (account_id, week_start) DO UPDATE SET used = q.used + 1, updated_at = $4
  WHERE q.used < ${ALLOWANCE} AND q.exhausted_at IS NULL
RETURNING used, ${ALLOWANCE} AS allowance`;

const RELEASE = `
UPDATE download_quota_usage SET used = GREATEST(used - 1, 0), updated_at = $3
WHERE account_id = $1 AND week_start = $2::date`;

// The count stays what was used: the refusal, not an inflated count, is what closes the week (TRY_CONSUME's
// exhausted_at IS NULL), and the count at the refusal is the allowance the service really gave (quotaWeekOf).
const MARK_EXHAUSTED = `
INSERT INTO download_quota_usage AS q (account_id, week_start, used, exhausted_at, exhausted_reason, updated_at)
VALUES ($1, $2::date, 0, $3, $4, $3)
ON CONFLICT (account_id, week_start) DO UPDATE SET exhausted_at = COALESCE(q.exhausted_at, $3),
  exhausted_reason = COALESCE(q.exhausted_reason, $4), updated_at = $3`;

const USAGE = `
SELECT COALESCE(q.used, 0) AS used, ${ALLOWANCE} AS configured, q.exhausted_at, q.exhausted_reason
FROM (SELECT 1) AS one LEFT JOIN download_quota_usage q ON q.account_id = $1 AND q.week_start = $2::date`;

const USAGE_OF_ACCOUNTS = `
SELECT a.id AS account_id, COALESCE(q.used, 0) AS used, COALESCE(a.download_quota, $2::integer) AS configured, q.exhausted_at, q.exhausted_reason
FROM accounts a LEFT JOIN download_quota_usage q ON q.account_id = a.id AND q.week_start = $1::date
WHERE a.kind = 'user'`;

const SET_ALLOWANCE = `UPDATE accounts SET download_quota = $2, updated_at = $3 WHERE name = $1`;
