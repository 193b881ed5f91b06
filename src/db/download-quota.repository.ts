// The weekly allowance of original downloads, counted in Postgres so it survives restarts and is shared
// by every process: one row per (account, service week), changed only by single atomic statements.
import type { Queryable } from "./with-transaction.ts";

export type QuotaUsageRow = { used: number; allowance: number; exhaustedAt: Date | null; exhaustedReason: string | null };

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
  async markExhausted(args: { accountId: number; weekStart: string; defaultAllowance: number; at: Date; reason: string }): Promise<void> {
    await this.db.query(MARK_EXHAUSTED, [args.accountId, args.weekStart, args.defaultAllowance, args.at, args.reason]);
  }

  /** The week's count and the allowance in force (no row yet = nothing used). */
  async usage(args: { accountId: number; weekStart: string; defaultAllowance: number }): Promise<QuotaUsageRow> {
    const { rows } = await this.db.query<{ used: number; allowance: number; exhausted_at: Date | null; exhausted_reason: string | null }>(USAGE, [
      args.accountId,
      args.weekStart,
      args.defaultAllowance,
    ]);
    const row = rows[0];
    return {
      used: row?.used ?? 0,
      allowance: row?.allowance ?? args.defaultAllowance,
      exhaustedAt: row?.exhausted_at ?? null,
      exhaustedReason: row?.exhausted_reason ?? null,
    };
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

const MARK_EXHAUSTED = `
INSERT INTO download_quota_usage AS q (account_id, week_start, used, exhausted_at, exhausted_reason, updated_at)
VALUES ($1, $2::date, ${ALLOWANCE}, $4, $5, $4)
ON CONFLICT (account_id, week_start) DO UPDATE SET used = GREATEST(q.used, ${ALLOWANCE}), exhausted_at = COALESCE(q.exhausted_at, $4),
  exhausted_reason = COALESCE(q.exhausted_reason, $5), updated_at = $4`;

const USAGE = `
SELECT COALESCE(q.used, 0) AS used, ${ALLOWANCE} AS allowance, q.exhausted_at, q.exhausted_reason
FROM (SELECT 1) AS one LEFT JOIN download_quota_usage q ON q.account_id = $1 AND q.week_start = $2::date`;

const SET_ALLOWANCE = `UPDATE accounts SET download_quota = $2, updated_at = $3 WHERE name = $1`;
