// Alert incidents: opened once per (kind, subject) while a condition holds, claimed for a notification at
// most once a day, resolved when the condition is gone. Each statement is atomic on its own, so any
// number of processes may evaluate at the same moment and an alert still goes out once.
import { kysely, sql } from "./kysely.ts";
import { recordset } from "./upsert-page.ts";
import { storableJson } from "./storable-text.ts";
import type { Queryable } from "./with-transaction.ts";

export type AlertKind = "needs_reauth" | "downloads_paused" | "source_failing" | "heartbeat_missing";

/** A condition as a check sees it now. */
export type AlertCondition = {
  kind: AlertKind;
  /** What it is about: account:<id>, source:<account>:<source>:<key>, worker:<host>:<pid>, downloads. */
  subject: string;
  title: string;
  details: Record<string, unknown>;
};

export type IncidentRow = {
  id: string;
  kind: AlertKind;
  subject: string;
  title: string;
  details: Record<string, unknown>;
  openedAt: Date;
  lastNotifiedAt: Date | null;
  notifyCount: number;
};

export type ChannelResults = Record<string, { ok: boolean; at: string; error?: string; receipt?: Record<string, unknown> }>;

export type FailingSourceRow = { account_id: number; name: string; source: string; key: string; last_error: string | null; last_run_at: Date | null };

export class AlertRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Opens an incident for every condition without an open one and refreshes the open ones (title,
   * details, last_seen_at), in one statement. Returns every open incident of these conditions.
   */
  async openIncidents(conditions: readonly AlertCondition[], at: Date): Promise<IncidentRow[]> {
    if (conditions.length === 0) return [];
    const { rows } = await sql<IncidentRowDb>`
      INSERT INTO alerts AS a (kind, subject, title, details, opened_at, last_seen_at)
      SELECT kind, subject, title, details, ${at}, ${at}
      FROM ${recordset(conditions, sql`kind alert_kind, subject text, title text, details jsonb`)}
      ORDER BY kind, subject
      ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE SET
        title = EXCLUDED.title, details = EXCLUDED.details, last_seen_at = EXCLUDED.last_seen_at
      RETURNING ${sql.raw(COLUMNS)}`.execute(kysely(this.db));
    return rows.map(toIncident);
  }

  /** Closes open incidents whose condition is gone (not among `current`); returns them. */
  async resolveMissing(current: readonly AlertCondition[], at: Date): Promise<IncidentRow[]> {
    const { rows } = await this.db.query<IncidentRowDb>(
      `UPDATE alerts AS a SET resolved_at = $3 WHERE a.resolved_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM unnest($1::text[], $2::text[]) AS c(kind, subject) WHERE c.kind = a.kind::text AND c.subject = a.subject)
       RETURNING ${COLUMNS}`,
      [current.map((c) => c.kind), current.map((c) => c.subject), at],
    );
    return rows.map(toIncident);
  }

  /**
   * Claims the next notification of an incident: the first one, or a reminder once `remindAfterMs` has
   * passed since the last. One UPDATE ... WHERE: of several evaluators, exactly one gets it.
   */
  async claimNotification({ id, at, remindAfterMs }: { id: string; at: Date; remindAfterMs: number }): Promise<IncidentRow | null> {
    const { rows } = await this.db.query<IncidentRowDb>(
      `UPDATE alerts SET last_notified_at = $2, notify_count = notify_count + 1
       WHERE id = $1 AND resolved_at IS NULL AND (last_notified_at IS NULL OR last_notified_at <= $2::timestamptz - ($3 * interval '1 millisecond'))
       RETURNING ${COLUMNS}`,
      [id, at, remindAfterMs],
    );
    return rows[0] ? toIncident(rows[0]) : null;
  }

  /** Every channel failed: the claim is given back, so the next evaluation tries again. */
  async releaseNotification({ id, previous }: { id: string; previous: Date | null }): Promise<void> {
    await this.db.query("UPDATE alerts SET last_notified_at = $2, notify_count = greatest(notify_count - 1, 0) WHERE id = $1", [id, previous]);
  }

  /** The record of one notification and its per-channel results. */
  async recordDelivery({ id, at, reminder, results }: { id: string; at: Date; reminder: boolean; results: ChannelResults }): Promise<void> {
    await this.db.query(
      `WITH d AS (INSERT INTO alert_deliveries (alert_id, notified_at, is_reminder, channel_results) VALUES ($1, $2, $3, $4::jsonb))
       UPDATE alerts SET channel_results = $4::jsonb WHERE id = $1`,
      [id, at, reminder, storableJson(results)],
    );
  }

  /** The latest notifications, newest first: what was sent, when, and how each channel answered. */
  async listDeliveries(
    limit = 20,
  ): Promise<
    Array<{ kind: AlertKind; subject: string; title: string; notifiedAt: Date; reminder: boolean; resolvedAt: Date | null; results: ChannelResults }>
  > {
    const { rows } = await this.db.query<{
      kind: AlertKind;
      subject: string;
      title: string;
      notified_at: Date;
      is_reminder: boolean;
      resolved_at: Date | null;
      channel_results: ChannelResults;
    }>(
      `SELECT a.kind, a.subject, a.title, d.notified_at, d.is_reminder, a.resolved_at, d.channel_results
       FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id ORDER BY d.notified_at DESC, d.id DESC LIMIT $1`,
      [limit],
    );
    return rows.map((r) => ({
      kind: r.kind,
      subject: r.subject,
      title: r.title,
      notifiedAt: r.notified_at,
      reminder: r.is_reminder,
      resolvedAt: r.resolved_at,
      results: r.channel_results,
    }));
  }

  /** Open incidents, oldest first. */
  async listOpen(): Promise<IncidentRow[]> {
    const { rows } = await this.db.query<IncidentRowDb>(`SELECT ${COLUMNS} FROM alerts WHERE resolved_at IS NULL ORDER BY opened_at, id`);
    return rows.map(toIncident);
  }

  /** User accounts that must log in again: the condition of a needs_reauth alert. */
  async listAccountsNeedingReauth(): Promise<Array<{ id: number; name: string; state_reason: string | null; state_changed_at: Date | null }>> {
    const { rows } = await this.db.query<{ id: number; name: string; state_reason: string | null; state_changed_at: Date | null }>(
      "SELECT id, name, state_reason, state_changed_at FROM accounts WHERE kind = 'user' AND state = 'needs_reauth' ORDER BY id",
    );
    return rows;
  }

  /** Sources whose last run failed, of user accounts that can still sync: the condition of a source_failing alert. */
  async listFailingSources(): Promise<FailingSourceRow[]> {
    const { rows } = await this.db.query<FailingSourceRow>(
      `SELECT s.account_id, a.name, s.source, s.key, s.last_error, s.last_run_at FROM sync_sources s JOIN accounts a ON a.id = s.account_id
       WHERE s.last_result = 'failed' AND a.kind = 'user' AND a.state NOT IN ('needs_reauth', 'revoked') ORDER BY s.account_id, s.source, s.key`,
    );
    return rows;
  }
}

type IncidentRowDb = {
  id: string;
  kind: AlertKind;
  subject: string;
  title: string;
  details: Record<string, unknown>;
  opened_at: Date;
  last_notified_at: Date | null;
  notify_count: number;
};

const COLUMNS = "id::text AS id, kind, subject, title, details, opened_at, last_notified_at, notify_count";

function toIncident(r: IncidentRowDb): IncidentRow {
  return {
    id: r.id,
    kind: r.kind,
    subject: r.subject,
    title: r.title,
    details: r.details,
    openedAt: r.opened_at,
    lastNotifiedAt: r.last_notified_at,
    notifyCount: r.notify_count,
  };
}
