// Answers of the service dvault could not read, with their raw JSON (docs/service-behaviour.md#tolerant-reading):
// recorded by the transport when it skips an item or a page, counted by status, the dashboard and the digest.
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import { type CamelDB, kysely, kyselyCamel, sql } from "./kysely.ts";
import { recordset } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

/** An answer the transport could not read, as it reports it (src/api/transport.ts passes its reports as they are). */
export type UnreadableReport = {
  operation: string;
  /** The request's path and parameters (tokens travel in headers, never here). */
  request: { method: string; path: string; params: Readonly<Record<string, unknown>> };
  /** "" for a whole response, "item <id>" for one item of a page. */
  subject: string;
  detail: string;
  /** The item or body as received. */
  raw: unknown;
  account?: string | undefined;
};

/** Raw answers larger than this are kept as their first characters only (the row is a clue, not a copy). */
const RAW_LIMIT_CHARS = 256 * 1024;

export type UnreadableSummary = {
  /** Distinct (request, subject) pairs seen since `since`. */
  count: number;
  /** Of those, whole responses (the rest are single items of readable pages). */
  responses: number;
  lastSeenAt: Date | null;
  /** The most recent few, newest first. */
  recent: Array<{ operation: string; subject: string; error: string; count: number; lastSeenAt: Date }>;
};

/** The same request asked again hashes the same: operation, method, path and its sorted parameters. */
export function requestKey(report: Pick<UnreadableReport, "operation" | "request">): string {
  const params = Object.fromEntries(
    Object.entries(report.request.params)
      .filter(([, v]) => v !== undefined && v !== null)
      .sort(([a], [b]) => a.localeCompare(b)),
  );
  return createHash("sha256")
    .update(JSON.stringify([report.operation, report.request.method, report.request.path, params]))
    .digest("hex");
}

function boundedRaw(raw: unknown): unknown {
  const text = JSON.stringify(raw ?? null);
  return text.length <= RAW_LIMIT_CHARS ? raw : { dvault_truncated: true, chars: text.length, head: text.slice(0, RAW_LIMIT_CHARS) };
}

export class UnreadableResponseRepository {
  private readonly camel: Kysely<CamelDB>;

  constructor(private readonly db: Queryable) {
    this.camel = kyselyCamel(db);
  }

  /** Records one unreadable answer, or counts a repeat of the same (request, subject). */
  async recordUnreadable(report: UnreadableReport, at: Date): Promise<void> {
    const row = {
      request_key: requestKey(report),
      subject: report.subject,
      operation: report.operation,
      method: report.request.method,
      path: report.request.path,
      params: report.request.params,
      account: report.account ?? null,
      error: report.detail,
      raw: boundedRaw(report.raw),
    };
    await sql`
      INSERT INTO unreadable_responses AS u (request_key, subject, operation, method, path, params, account, error, raw, first_seen_at, last_seen_at)
      SELECT request_key, subject, operation, method, path, params, account, error, raw, ${at}, ${at}
      FROM ${recordset([row], sql`request_key text, subject text, operation text, method text, path text, params jsonb, account text, error text, raw jsonb`)}
      ON CONFLICT (request_key, subject) DO UPDATE SET
        count = u.count + 1,
        error = EXCLUDED.error,
        raw = EXCLUDED.raw,
        last_seen_at = GREATEST(u.last_seen_at, EXCLUDED.last_seen_at)`.execute(kysely(this.db));
  }

  /** What status, the dashboard and the digest show: how many since `since`, and the latest few. */
  async summarizeUnreadable(since: Date, limit = 5): Promise<UnreadableSummary> {
    const head = await this.camel
      .selectFrom("unreadable_responses")
      .select([
        sql<number>`count(*)::int`.as("count"),
        sql<number>`count(*) FILTER (WHERE subject = '')::int`.as("responses"),
        sql<Date | null>`max(last_seen_at)`.as("lastSeenAt"),
      ])
      .where("lastSeenAt", ">=", since)
      .executeTakeFirst();
    const recent = await this.camel
      .selectFrom("unreadable_responses")
      .select(["operation", "subject", "error", "count", "lastSeenAt"])
      .where("lastSeenAt", ">=", since)
      .orderBy("lastSeenAt", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return { count: head?.count ?? 0, responses: head?.responses ?? 0, lastSeenAt: head?.lastSeenAt ?? null, recent };
  }
}
