// Alert incidents: opened once per (kind, subject) while a condition holds, claimed for a notification at
// most once a day, resolved when the condition is gone. Each statement is atomic on its own, so any
// number of processes may evaluate at the same moment and an alert still goes out once.
import type { Kysely } from "kysely";
import { type CamelDB, kysely, kyselyCamel, sql } from "./kysely.ts";
import type { AlertKind, CamelRow, DB, Row } from "./schema.ts";
import { storableJson } from "./storable-text.ts";
import { recordset } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export type { AlertKind };

/** A condition as a check sees it now. */
export type AlertCondition = {
  kind: AlertKind;
  /** What it is about: account:<id>, source:<account>:<source>:<key>, worker:<host>:<pid>, downloads. */
  subject: string;
  title: string;
  details: Record<string, unknown>;
};

/** An incident as the alerts read it (camelCase names, through kyselyCamel). */
export type IncidentRow = Pick<CamelRow<"alerts">, "id" | "kind" | "subject" | "title" | "openedAt" | "lastNotifiedAt" | "notifyCount"> & {
  details: Record<string, unknown>;
};

/**
 * How each channel answered a notification. A channel that failed while another took it is sent again: `tries`
 * counts its sends, `sending` is when an evaluator last claimed one (AlertRepository.claimOwedChannels). A failure
 * names the notification's `key`, and keeps in `receipt` the SMTP recipients it reached while the others were deferred.
 * An SMTP send that reached some recipients is taken (`ok`), owing the `deferred` ones (a 4xx at RCPT), sent again.
 */
export type ChannelResults = Record<
  string,
  { ok: boolean; at: string; error?: string; receipt?: Record<string, unknown>; tries?: number; sending?: string; key?: string; deferred?: string[] }
>;

/** An open incident with its last notification's per-channel results. */
export type OpenIncident = IncidentRow & { channelResults: ChannelResults };

export type FailingSourceRow = Pick<Row<"sync_sources">, "account_id" | "source" | "key" | "last_error" | "last_run_at"> & Pick<Row<"accounts">, "name">;

export class AlertRepository {
  /** The incidents' statements, camelCase like IncidentRow; `plain` for the rows the checks read as the tables name them. */
  private readonly k: Kysely<CamelDB>;
  private readonly plain: Kysely<DB>;

  constructor(db: Queryable) {
    this.k = kyselyCamel(db);
    this.plain = kysely(db);
  }

  /**
   * Opens an incident for every condition without an open one and refreshes the open ones (title,
   * details, last_seen_at), in one statement. Returns every open incident of these conditions.
   */
  async openIncidents(conditions: readonly AlertCondition[], at: Date): Promise<OpenIncident[]> {
    if (conditions.length === 0) return [];
    const { rows } = await sql<OpenIncident>`
      INSERT INTO alerts AS a (kind, subject, title, details, opened_at, last_seen_at)
      SELECT kind, subject, title, details, ${at}, ${at}
      FROM ${recordset(conditions, sql`kind alert_kind, subject text, title text, details jsonb`)}
      ORDER BY kind, subject
      ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE SET
        title = EXCLUDED.title, details = EXCLUDED.details, last_seen_at = EXCLUDED.last_seen_at
      RETURNING ${INCIDENT}, channel_results`.execute(this.k);
    return rows;
  }

  /** Closes open incidents whose condition is gone (not among `current`); returns them. */
  async resolveMissing(current: readonly AlertCondition[], at: Date): Promise<IncidentRow[]> {
    const { rows } = await sql<IncidentRow>`
      UPDATE alerts AS a SET resolved_at = ${at} WHERE a.resolved_at IS NULL
        AND NOT EXISTS (
          SELECT 1 FROM unnest(${current.map((c) => c.kind)}::text[], ${current.map((c) => c.subject)}::text[]) AS c(kind, subject)
          WHERE c.kind = a.kind::text AND c.subject = a.subject)
      RETURNING ${INCIDENT}`.execute(this.k);
    return rows;
  }

  /**
   * Claims the next notification of an incident: the first one, or a reminder once `remindAfterMs` has
   * passed since the last. One UPDATE ... WHERE: of several evaluators, exactly one gets it.
   */
  async claimNotification({ id, at, remindAfterMs }: { id: string; at: Date; remindAfterMs: number }): Promise<OpenIncident | null> {
    const { rows } = await sql<OpenIncident>`
      UPDATE alerts SET last_notified_at = ${at}, notify_count = notify_count + 1
      WHERE id = ${id} AND resolved_at IS NULL
        AND (last_notified_at IS NULL OR last_notified_at <= ${at}::timestamptz - (${remindAfterMs} * interval '1 millisecond'))
      RETURNING ${INCIDENT}, channel_results`.execute(this.k);
    return rows[0] ?? null;
  }

  /** Every channel failed: the claim is given back, so the next evaluation tries again. */
  async releaseNotification({ id, previous }: { id: string; previous: Date | null }): Promise<void> {
    await this.k.updateTable("alerts").set({ lastNotifiedAt: previous, notifyCount: sql`greatest(notify_count - 1, 0)` }).where("id", "=", id).execute();
  }

  /**
   * Claims the sending again of `channels`, which failed on the incident's last notification while another channel
   * took it: marked `sending` at `at` only if the results are still those `incident` read, so of several evaluators
   * one sends. A process killed mid-send leaves them failed and marked, to be claimed again once the mark is old
   * (src/digest/alerts.ts OWED_SEND_EVERY_MS).
   */
  async claimOwedChannels({ incident, channels, at }: { incident: OpenIncident; channels: readonly string[]; at: Date }): Promise<OpenIncident | null> {
    const marked: ChannelResults = { ...incident.channelResults };
    for (const c of channels) {
      const was = incident.channelResults[c];
      if (was) marked[c] = { ...was, tries: (was.tries ?? 1) + 1, sending: at.toISOString() };
    }
    const { rows } = await sql<OpenIncident>`
      UPDATE alerts SET channel_results = ${storableJson(marked)}::jsonb
      WHERE id = ${incident.id} AND resolved_at IS NULL AND notify_count = ${incident.notifyCount}
        AND channel_results = ${storableJson(incident.channelResults)}::jsonb
      RETURNING ${INCIDENT}, channel_results`.execute(this.k);
    return rows[0] ?? null;
  }

  /**
   * The record of one notification and its per-channel results; `latest`, when given, is what the incident keeps as
   * its last notification's results (those of a first send with the channels sent again merged in).
   */
  async recordDelivery({
    id,
    at,
    reminder,
    results,
    latest,
  }: {
    id: string;
    at: Date;
    reminder: boolean;
    results: ChannelResults;
    latest?: ChannelResults;
  }): Promise<void> {
    const json = storableJson(results);
    await sql`
      WITH d AS (INSERT INTO alert_deliveries (alert_id, notified_at, is_reminder, channel_results) VALUES (${id}, ${at}, ${reminder}, ${json}::jsonb))
      UPDATE alerts SET channel_results = ${latest ? storableJson(latest) : json}::jsonb WHERE id = ${id}`.execute(this.k);
  }

  /** The latest notifications, newest first: what was sent, when, and how each channel answered. */
  async listDeliveries(
    limit = 20,
  ): Promise<
    Array<{ kind: AlertKind; subject: string; title: string; notifiedAt: Date; reminder: boolean; resolvedAt: Date | null; results: ChannelResults }>
  > {
    const rows = await this.k
      .selectFrom("alert_deliveries as d")
      .innerJoin("alerts as a", "a.id", "d.alertId")
      .select(["a.kind", "a.subject", "a.title", "d.notifiedAt", "d.isReminder as reminder", "a.resolvedAt", "d.channelResults as results"])
      .orderBy("d.notifiedAt", "desc")
      .orderBy("d.id", "desc")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ ...r, results: r.results as ChannelResults }));
  }

  /** Open incidents, oldest first. */
  async listOpen(): Promise<IncidentRow[]> {
    const rows = await this.k
      .selectFrom("alerts")
      .select(["id", "kind", "subject", "title", "details", "openedAt", "lastNotifiedAt", "notifyCount"])
      .where("resolvedAt", "is", null)
      .orderBy("openedAt")
      .orderBy("id")
      .execute();
    return rows.map((r) => ({ ...r, details: r.details as Record<string, unknown> }));
  }

  /** User accounts that must log in again: the condition of a needs_reauth alert. */
  async listAccountsNeedingReauth(): Promise<Array<Pick<Row<"accounts">, "id" | "name" | "state_reason" | "state_changed_at">>> {
    const { rows } = await sql<Pick<Row<"accounts">, "id" | "name" | "state_reason" | "state_changed_at">>`
      SELECT id, name, state_reason, state_changed_at FROM accounts WHERE kind = 'user' AND state = 'needs_reauth' ORDER BY id`.execute(this.plain);
    return rows;
  }

  /** Sources whose last run failed, of user accounts that can still sync: the condition of a source_failing alert. */
  async listFailingSources(): Promise<FailingSourceRow[]> {
    const { rows } = await sql<FailingSourceRow>`
      SELECT s.account_id, a.name, s.source, s.key, s.last_error, s.last_run_at FROM sync_sources s JOIN accounts a ON a.id = s.account_id
      WHERE s.last_result = 'failed' AND a.kind = 'user' AND a.state NOT IN ('needs_reauth', 'revoked') ORDER BY s.account_id, s.source, s.key`.execute(
      this.plain,
    );
    return rows;
  }
}

/** The incident's columns, as IncidentRow names them once kyselyCamel renames the keys. */
const INCIDENT = sql`id::text AS id, kind, subject, title, details, opened_at, last_notified_at, notify_count`;
