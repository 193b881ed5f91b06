// The digests table, each channel's window state and the accounts' baselines: one query per method.
// Takes a Queryable, so the same methods run on the pool or inside withTransaction.
import type { Kysely } from "kysely";
import { type CamelDB, kyselyCamel, sql } from "./kysely.ts";
import type { CamelRow, DigestChannel, DigestStatus } from "./schema.ts";
import { storableJson } from "./storable-text.ts";
import type { Queryable } from "./with-transaction.ts";

/** The channels a digest goes out by (the digest_channel enum); src/config/digest.ts lists the same names as DIGEST_CHANNELS. */
export type { DigestChannel, DigestStatus };

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

/** What asked for a digest (the text column's CHECK, digests_trigger_check). */
export type DigestTrigger = "cron" | "catch_up" | "manual";

/** A digest's row (camelCase names, through kyselyCamel), its JSON columns with their shapes. */
export type DigestRow = Pick<
  CamelRow<"digests">,
  "id" | "channel" | "windowStart" | "windowEnd" | "scheduledAt" | "idempotencyKey" | "messageId" | "subject" | "status" | "attempts" | "lastError" | "sentAt"
> & { trigger: DigestTrigger; counts: Partial<DigestCounts>; delivery: DeliveryReceipt | null };

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
  private readonly k: Kysely<CamelDB>;

  constructor(db: Queryable) {
    this.k = kyselyCamel(db);
  }

  /** Where the channel's next window starts (the end of its last delivered or empty window), if any. */
  async lastWindowEnd(channel: DigestChannel): Promise<Date | null> {
    const row = await this.k.selectFrom("digest_state").select("lastWindowEnd").where("channel", "=", channel).executeTakeFirst();
    return row?.lastWindowEnd ?? null;
  }

  /**
   * The digest of (channel, window), created on its first attempt; later attempts get the same row (same
   * idempotency key and Message-ID) with the subject and counts of this attempt.
   */
  async openDigest(d: NewDigest): Promise<DigestRow> {
    const { rows } = await sql<DigestRow>`
      INSERT INTO digests AS d (channel, window_start, window_end, scheduled_at, trigger, idempotency_key, message_id, subject, counts,
        created_at, updated_at)
      VALUES (${d.channel}, ${d.windowStart}, ${d.windowEnd}, ${d.scheduledAt}, ${d.trigger}, ${d.idempotencyKey}, ${d.messageId}, ${d.subject},
        ${storableJson(d.counts)}::jsonb, ${d.at}, ${d.at})
      ON CONFLICT (idempotency_key) DO UPDATE SET
        subject = CASE WHEN d.status = 'sent' THEN d.subject ELSE EXCLUDED.subject END,
        counts = CASE WHEN d.status = 'sent' THEN d.counts ELSE EXCLUDED.counts END,
        updated_at = EXCLUDED.updated_at
      RETURNING ${DIGEST}`.execute(this.k);
    return rows[0] as DigestRow;
  }

  /**
   * A delivery attempt failed: counted, with the reason; `final` when no attempt is left (status failed). `reached`:
   * the SMTP recipients that got it all the same (others deferred), kept as the delivery's `accepted` for the retry.
   */
  async recordDeliveryFailure({
    id,
    error,
    final,
    at,
    reached = [],
  }: {
    id: string;
    error: string;
    final: boolean;
    at: Date;
    reached?: readonly string[];
  }): Promise<void> {
    const delivery = reached.length > 0 ? storableJson({ accepted: reached }) : null;
    await sql`
      UPDATE digests SET attempts = attempts + 1, last_error = ${error}, status = CASE WHEN ${final} THEN 'failed' ELSE 'pending' END::digest_status,
        delivery = COALESCE(${delivery}::jsonb, delivery), updated_at = ${at} WHERE id = ${id} AND status <> 'sent'`.execute(this.k);
  }

  /** Delivered (status sent, with the channel's receipt) or nothing to send (status empty). */
  async markDone({ id, status, receipt, at }: { id: string; status: "sent" | "empty"; receipt: DeliveryReceipt | null; at: Date }): Promise<void> {
    const sent = status === "sent";
    await sql`
      UPDATE digests SET status = ${status}::digest_status, delivery = ${receipt === null ? null : storableJson(receipt)}::jsonb, last_error = NULL,
        updated_at = ${at}, attempts = attempts + ${sent ? 1 : 0}, sent_at = CASE WHEN ${sent} THEN ${at}::timestamptz ELSE sent_at END
      WHERE id = ${id}`.execute(this.k);
  }

  /** Moves the channel's window forward to `end` (never backwards). Run in the transaction of markDone. */
  async advanceWindow({ channel, end, digestId, at }: { channel: DigestChannel; end: Date; digestId: string; at: Date }): Promise<void> {
    await sql`
      INSERT INTO digest_state AS s (channel, last_window_end, last_digest_id, updated_at) VALUES (${channel}, ${end}, ${digestId}, ${at})
      ON CONFLICT (channel) DO UPDATE SET last_window_end = GREATEST(s.last_window_end, EXCLUDED.last_window_end),
        last_digest_id = CASE WHEN EXCLUDED.last_window_end >= s.last_window_end THEN EXCLUDED.last_digest_id ELSE s.last_digest_id END,
        updated_at = EXCLUDED.updated_at`.execute(this.k);
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
    const result = await sql`
      UPDATE digests SET status = 'failed', updated_at = ${at},
        last_error = concat_ws(' ', last_error, '(superseded: a later digest covered this window)')
      WHERE channel = ${channel} AND status = 'pending' AND window_end <= ${coveredUntil} AND id IS DISTINCT FROM ${exceptId}::bigint`.execute(this.k);
    return Number(result.numAffectedRows ?? 0);
  }

  /** Digests that could not be delivered (or are still being retried), changed after `since`, other than `exceptKey`. */
  listDeliveryProblems(since: Date, exceptKey: string | null): Promise<DeliveryProblem[]> {
    return this.k
      .selectFrom("digests")
      .select(["channel", "windowStart", "windowEnd", "status", "attempts", "lastError as error", "updatedAt as at"])
      .where((eb) => eb.or([eb("status", "=", "failed"), eb.and([eb("status", "=", "pending"), eb("attempts", ">", 0)])]))
      .where("updatedAt", ">", since)
      .where("idempotencyKey", "is distinct from", exceptKey)
      .orderBy("updatedAt", "desc")
      .limit(20)
      .execute();
  }

  /** The latest digests, newest first (for `dvault digest --history` and tests). */
  async listDigests(limit = 20): Promise<DigestRow[]> {
    const { rows } = await sql<DigestRow>`SELECT ${DIGEST} FROM digests ORDER BY created_at DESC, id DESC LIMIT ${limit}`.execute(this.k);
    return rows;
  }

  /**
   * Records, once per (account, source), when the source's initial full sync completed: the end of the
   * run that completed its first sweep (`updated_at` while that run is still the last one, else the
   * start of the later run, which is an upper bound). Returns how many baselines were new.
   */
  async recordBaselines(at: Date): Promise<number> {
    const result = await sql`
      INSERT INTO digest_baselines (account_id, source, baseline_at, recorded_at)
      SELECT s.account_id, s.source,
        max(CASE WHEN s.last_run_at IS NULL OR s.last_run_at <= s.last_complete_sweep_at THEN s.updated_at ELSE s.last_run_at END), ${at}
      FROM sync_sources s JOIN accounts a ON a.id = s.account_id
      WHERE a.kind = 'user' AND s.source = ANY(${[...BASELINE_SOURCES]}) AND s.last_complete_sweep_at IS NOT NULL
      GROUP BY s.account_id, s.source
      ON CONFLICT (account_id, source) DO NOTHING`.execute(this.k);
    return Number(result.numAffectedRows ?? 0);
  }
}

/** A digest's columns, as DigestRow names them once kyselyCamel renames the keys. */
const DIGEST = sql`id::text AS id, channel, window_start, window_end, scheduled_at, trigger, idempotency_key, message_id, subject,
  counts, status, attempts, last_error, delivery, sent_at`;
