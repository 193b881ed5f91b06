// The digests table, each channel's window state and the accounts' baselines: one query per method.
// Takes a Queryable, so the same methods run on the pool or inside withTransaction.
import { storableJson } from "./storable-text.ts";
import type { Queryable } from "./with-transaction.ts";

/** The channels a digest goes out by; src/digest/config.ts lists the same names as DIGEST_CHANNELS (its settings). */
export type DigestChannel = "smtp" | "file" | "webhook" | "ntfy" | "discord";

/** What a digest held, per section, as kept on its row (src/digest/types.ts re-exports these shapes). */
export type DigestCounts = {
  faves: number;
  comments: number;
  watchers: number;
  mentions: number;
  notifications: number;
  notes: number;
  deviations: number;
  changes: number;
  /** Things that need the owner: re-authorization, failing sources, failed deliveries, low disk... */
  problems: number;
};

/** A digest that failed or is still retrying since a given time. */
export type DeliveryProblem = { channel: string; windowStart: Date; windowEnd: Date; status: string; attempts: number; error: string | null; at: Date };

/** What a channel answered when it accepted a digest, kept as JSON. */
export type DeliveryReceipt = Record<string, unknown>;

export type DigestTrigger = "cron" | "catch_up" | "manual";
export type DigestStatus = "pending" | "sent" | "failed" | "empty";

export type DigestRow = {
  id: string;
  channel: DigestChannel;
  windowStart: Date;
  windowEnd: Date;
  scheduledAt: Date;
  trigger: DigestTrigger;
  idempotencyKey: string;
  messageId: string;
  subject: string | null;
  counts: Partial<DigestCounts>;
  status: DigestStatus;
  attempts: number;
  lastError: string | null;
  delivery: DeliveryReceipt | null;
  sentAt: Date | null;
};

export type NewDigest = {
  channel: DigestChannel;
  windowStart: Date;
  windowEnd: Date;
  scheduledAt: Date;
  trigger: DigestTrigger;
  idempotencyKey: string;
  messageId: string;
  subject: string;
  counts: DigestCounts;
  at: Date;
};

/** The sources whose first complete sweep is the baseline of a digest section. */
export const BASELINE_SOURCES = ["messages", "notes", "watch_feed", "profile", "collections"] as const;

export class DigestRepository {
  constructor(private readonly db: Queryable) {}

  /** Where the channel's next window starts (the end of its last delivered or empty window), if any. */
  async lastWindowEnd(channel: DigestChannel): Promise<Date | null> {
    const { rows } = await this.db.query<{ last_window_end: Date }>("SELECT last_window_end FROM digest_state WHERE channel = $1", [channel]);
    return rows[0]?.last_window_end ?? null;
  }

  /**
   * The digest of (channel, window), created on its first attempt; later attempts get the same row (same
   * idempotency key and Message-ID) with the subject and counts of this attempt.
   */
  async openDigest(d: NewDigest): Promise<DigestRow> {
    const { rows } = await this.db.query<DigestRowDb>(OPEN, [
      d.channel,
      d.windowStart,
      d.windowEnd,
      d.scheduledAt,
      d.trigger,
      d.idempotencyKey,
      d.messageId,
      d.subject,
      storableJson(d.counts),
      d.at,
    ]);
    return toRow(rows[0] as DigestRowDb);
  }

  /** A delivery attempt failed: counted, with the reason; `final` when no attempt is left (status failed). */
  async recordDeliveryFailure({ id, error, final, at }: { id: string; error: string; final: boolean; at: Date }): Promise<void> {
    await this.db.query(
      `UPDATE digests SET attempts = attempts + 1, last_error = $2, status = CASE WHEN $3 THEN 'failed' ELSE 'pending' END::digest_status,
         updated_at = $4 WHERE id = $1 AND status <> 'sent'`,
      [id, error, final, at],
    );
  }

  /** Delivered (status sent, with the channel's receipt) or nothing to send (status empty). */
  async markDone({ id, status, receipt, at }: { id: string; status: "sent" | "empty"; receipt: DeliveryReceipt | null; at: Date }): Promise<void> {
    await this.db.query(
      `UPDATE digests SET status = $2::digest_status, delivery = $3::jsonb, last_error = NULL, updated_at = $4,
         attempts = attempts + CASE WHEN $2 = 'sent' THEN 1 ELSE 0 END, sent_at = CASE WHEN $2 = 'sent' THEN $4 ELSE sent_at END
       WHERE id = $1`,
      [id, status, receipt === null ? null : storableJson(receipt), at],
    );
  }

  /** Moves the channel's window forward to `end` (never backwards). Run in the transaction of markDone. */
  async advanceWindow({ channel, end, digestId, at }: { channel: DigestChannel; end: Date; digestId: string; at: Date }): Promise<void> {
    await this.db.query(
      `INSERT INTO digest_state AS s (channel, last_window_end, last_digest_id, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (channel) DO UPDATE SET last_window_end = GREATEST(s.last_window_end, EXCLUDED.last_window_end),
         last_digest_id = CASE WHEN EXCLUDED.last_window_end >= s.last_window_end THEN EXCLUDED.last_digest_id ELSE s.last_digest_id END,
         updated_at = EXCLUDED.updated_at`,
      [channel, end, digestId, at],
    );
  }

  /**
   * Older digests of the channel still pending (a retry of a tick that a later digest already covered):
   * failed, with the reason. Their windows are not lost: the delivered digest covered them.
   */
  async supersedePending({
    channel,
    coveredUntil,
    exceptId,
    at,
  }: {
    channel: DigestChannel;
    coveredUntil: Date;
    exceptId: string | null;
    at: Date;
  }): Promise<number> {
    const result = await this.db.query(
      `UPDATE digests SET status = 'failed', updated_at = $4,
         last_error = concat_ws(' ', last_error, '(superseded: a later digest covered this window)')
       WHERE channel = $1 AND status = 'pending' AND window_end <= $2 AND id IS DISTINCT FROM $3::bigint`,
      [channel, coveredUntil, exceptId, at],
    );
    return result.rowCount ?? 0;
  }

  /** Digests that could not be delivered (or are still being retried), changed after `since`, other than `exceptKey`. */
  async listDeliveryProblems(since: Date, exceptKey: string | null): Promise<DeliveryProblem[]> {
    const { rows } = await this.db.query<{
      channel: string;
      window_start: Date;
      window_end: Date;
      status: string;
      attempts: number;
      last_error: string | null;
      updated_at: Date;
    }>(
      `SELECT channel, window_start, window_end, status, attempts, last_error, updated_at FROM digests
       WHERE (status = 'failed' OR (status = 'pending' AND attempts > 0)) AND updated_at > $1
         AND idempotency_key IS DISTINCT FROM $2
       ORDER BY updated_at DESC LIMIT 20`,
      [since, exceptKey],
    );
    return rows.map((r) => ({
      channel: r.channel,
      windowStart: r.window_start,
      windowEnd: r.window_end,
      status: r.status,
      attempts: r.attempts,
      error: r.last_error,
      at: r.updated_at,
    }));
  }

  /** The latest digests, newest first (for `dvault digest --history` and tests). */
  async listDigests(limit = 20): Promise<DigestRow[]> {
    const { rows } = await this.db.query<DigestRowDb>(`SELECT ${COLUMNS} FROM digests ORDER BY created_at DESC, id DESC LIMIT $1`, [limit]);
    return rows.map(toRow);
  }

  /**
   * Records, once per (account, source), when the source's initial full sync completed: the end of the
   * run that completed its first sweep (`updated_at` while that run is still the last one, else the
   * start of the later run, which is an upper bound). Returns how many baselines were new.
   */
  async recordBaselines(at: Date): Promise<number> {
    const result = await this.db.query(
      `INSERT INTO digest_baselines (account_id, source, baseline_at, recorded_at)
       SELECT s.account_id, s.source,
         max(CASE WHEN s.last_run_at IS NULL OR s.last_run_at <= s.last_complete_sweep_at THEN s.updated_at ELSE s.last_run_at END), $2
       FROM sync_sources s JOIN accounts a ON a.id = s.account_id
       WHERE a.kind = 'user' AND s.source = ANY($1) AND s.last_complete_sweep_at IS NOT NULL
       GROUP BY s.account_id, s.source
       ON CONFLICT (account_id, source) DO NOTHING`,
      [[...BASELINE_SOURCES], at],
    );
    return result.rowCount ?? 0;
  }
}

type DigestRowDb = {
  id: string;
  channel: DigestChannel;
  window_start: Date;
  window_end: Date;
  scheduled_at: Date;
  trigger: DigestTrigger;
  idempotency_key: string;
  message_id: string;
  subject: string | null;
  counts: Partial<DigestCounts>;
  status: DigestStatus;
  attempts: number;
  last_error: string | null;
  delivery: DeliveryReceipt | null;
  sent_at: Date | null;
};

const COLUMNS = `id::text AS id, channel, window_start, window_end, scheduled_at, trigger, idempotency_key, message_id, subject,
  counts, status, attempts, last_error, delivery, sent_at`;

const OPEN = `
INSERT INTO digests AS d (channel, window_start, window_end, scheduled_at, trigger, idempotency_key, message_id, subject, counts,
  created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $10)
ON CONFLICT (idempotency_key) DO UPDATE SET
  subject = CASE WHEN d.status = 'sent' THEN d.subject ELSE EXCLUDED.subject END,
  counts = CASE WHEN d.status = 'sent' THEN d.counts ELSE EXCLUDED.counts END,
  updated_at = EXCLUDED.updated_at
RETURNING ${COLUMNS}`;

function toRow(r: DigestRowDb): DigestRow {
  return {
    id: r.id,
    channel: r.channel,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    scheduledAt: r.scheduled_at,
    trigger: r.trigger,
    idempotencyKey: r.idempotency_key,
    messageId: r.message_id,
    subject: r.subject,
    counts: r.counts,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    delivery: r.delivery,
    sentAt: r.sent_at,
  };
}
