// One digest of one channel, end to end: window from the channel's state, collect, render, record, deliver,
// then move the window — only after the delivery succeeded, in the transaction that marks it sent. A
// failed delivery is recorded and thrown (the queue retries with backoff); the window stays where it was,
// so the next attempt or the next tick covers it. Safe to run twice: the same window gets the same row,
// idempotency key and Message-ID.
import { z } from "zod";
import type { Coordinator } from "../coord/coordinator.ts";
import type { Config } from "../config.ts";
import type { InstallKey } from "../crypto/install-key.ts";
import { withTransaction } from "../db/with-transaction.ts";
import type { Logger } from "../log.ts";
import { thisWriterTag } from "../queue/holder.ts";
import { delayOf } from "../queue/job-definition.ts";
import { acquireLock } from "../coord/lock.ts";
import { scrubString } from "../redact.ts";
import { storedDownloadsPausedProbe, type DownloadsPausedProbe } from "./alerts.ts";
import { collectDigest, isEmptyDigest } from "./collect.ts";
import { DIGEST_CHANNELS, type DigestChannel } from "../config/digest.ts";
import { CronClock } from "./cron-time.ts";
import { DigestRepository, type DigestTrigger } from "../db/digest.repository.ts";
import { createDeliverers, messageDomainOf, messageIdFor } from "./deliver/index.ts";
import { reachedRecipients, refusedAfterDeferrals, refusedRecipients, SmtpDeliveryError } from "./deliver/smtp.ts";
import { imagesDirOf } from "./deliver/file.ts";
import { digestImages } from "./images.ts";
import { thumbLinkKey } from "../storage/thumb-link.ts";
import { existingSecretKey } from "../secret-key.ts";
import { openBlobStore } from "../storage/store.ts";
import { Thumbnails } from "../storage/thumbnails.ts";
import { renderDigest } from "./render.ts";
import type { Deliverer, DeliveryReceipt, DigestData, DigestWindow, OutgoingMessage } from "./types.ts";
import type { PgPool } from "../db/connect.ts";

export const DigestJobPayload = z.object({
  channel: z.enum(DIGEST_CHANNELS),
  /** The cron tick (or the moment of `dvault digest --send`): the end of the window. ISO. */
  tick: z.iso.datetime(),
  trigger: z.enum(["cron", "catch_up", "manual"]).default("cron"),
});
export type DigestJobPayload = z.infer<typeof DigestJobPayload>;

/** 2026-11-03T08:00:00.000Z → 20261103T080000Z (milliseconds kept when not zero). */
export function compactTime(at: Date): string {
  return at
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.(\d{3})Z$/, (_m, ms: string) => (ms === "000" ? "Z" : `.${ms}Z`));
}

/** The key every attempt of the (channel, window) digest shares: Message-ID, webhook id, file name. */
export function digestKey(channel: DigestChannel, window: DigestWindow): string {
  return `dvault-digest-${channel}-${compactTime(window.start)}-${compactTime(window.end)}`;
}

/**
 * The window of a digest ending at `tick`: from the end of the channel's last delivered window, or, for a
 * channel that never sent one, from the previous cron tick. Null when the tick is already covered.
 */
export function digestWindow(lastEnd: Date | null, tick: Date, clock: CronClock): DigestWindow | null {
  if (lastEnd && lastEnd.getTime() >= tick.getTime()) return null;
  const start = lastEnd ?? clock.previousTick(tick) ?? new Date(tick.getTime() - 86_400_000);
  return start.getTime() < tick.getTime() ? { start, end: tick } : null;
}

/** Another process is delivering this channel's digest right now; the job retries later. */
export class DigestBusyError extends Error {
  constructor(channel: DigestChannel) {
    super(`another process is delivering the ${channel} digest right now; retrying later`);
    this.name = "DigestBusyError";
  }
}

/** `pool` runs the digest's own rows (digests, digest_state) and reads the window's sections. */
export type DigestServices = {
  pool: PgPool;
  coord: Coordinator;
  config: Config;
  log: Logger;
  now(): number;
  /** The key the accounts' tokens are read with (Services.installKey): an account it cannot read needs a login. */
  installKey?(): InstallKey;
};

export type RunDigestOptions = {
  services: DigestServices;
  log?: Logger;
  /** 1-based attempt of the job, and how many it has: the last failure marks the digest failed. */
  attempt: number;
  maxAttempts: number;
  /** Overrides the configured channel's deliverer (tests); default from config. */
  deliverer?: Deliverer;
  downloadsPaused?: DownloadsPausedProbe;
};

export type RunDigestResult =
  | {
      status: "sent";
      digestId: string;
      window: DigestWindow;
      key: string;
      subject: string;
      counts: DigestData["counts"];
      retried: boolean;
      /** Recipients the SMTP server refused while it took the message for the others (smtp.ts refusedRecipients). */
      refused?: string[];
    }
  | { status: "empty"; digestId: string; window: DigestWindow; key: string }
  | { status: "skipped"; reason: string };

/**
 * The thumbnail link key, read from the secret key the first time a picture is linked (the dashboard checks with the
 * same key). None where the install has no key: a digest never makes one, which would stand in the way of the lost
 * key's return (only a login makes a key: src/cli/auth-context.ts).
 */
export function linkKeyOf(config: Config): () => Buffer | undefined {
  let key: Buffer | undefined;
  return () => {
    if (key) return key;
    const secret = existingSecretKey(config);
    if (secret) key = thumbLinkKey(secret.key);
    return key;
  };
}

/** "digest sent" in the log, and a warning naming the recipients the SMTP server refused; returns those. */
function loggedSent(
  log: Logger,
  sent: { channel: DigestChannel; key: string; counts: DigestData["counts"]; attempts: number },
  receipt: DeliveryReceipt,
): string[] {
  log.info(sent, "digest sent");
  const refused = refusedRecipients(receipt);
  const afterDeferrals = refusedAfterDeferrals(receipt);
  const typos = refused.filter((r) => !afterDeferrals.includes(r));
  if (typos.length > 0)
    log.warn(
      { channel: sent.channel, key: sent.key, refused: typos },
      "the SMTP server refused some recipients of the digest: they got nothing (check DVAULT_SMTP_TO)",
    );
  if (afterDeferrals.length > 0)
    log.warn(
      { channel: sent.channel, key: sent.key, refused: afterDeferrals },
      "the SMTP server deferred some recipients of the digest at every attempt (a full mailbox?): refused after deferrals, they got nothing",
    );
  return refused;
}

/** Whether this failure is the digest's last attempt: a 429 delays the job without spending one (its error asks for a delay). */
function isFinal(err: unknown, opts: RunDigestOptions): boolean {
  return opts.attempt >= opts.maxAttempts && delayOf(err) === undefined;
}

/**
 * The receipt of a last attempt that reached some recipients while the server still deferred the others (a full
 * mailbox's 452 at every attempt): the deferred are counted as refused, so the digest is sent and its window moves
 * rather than failing again with the next day's digest. Undefined for any other failure, or an earlier attempt.
 */
function settledAfterDeferrals(err: unknown, opts: RunDigestOptions, messageId: string): DeliveryReceipt | undefined {
  if (!(err instanceof SmtpDeliveryError) || err.deferred.length === 0 || err.reached.length === 0 || !isFinal(err, opts)) return undefined;
  return { messageId, response: err.message, accepted: [...err.reached], rejected: [...err.deferred], refusedAfterDeferrals: [...err.deferred] };
}

/** A failed delivery on the digest's row (with the recipients it reached all the same) and in the log. */
async function recordFailure(
  err: unknown,
  f: { repo: DigestRepository; id: string; at: Date; log: Logger; channel: DigestChannel; key: string; opts: RunDigestOptions },
): Promise<void> {
  const error = scrubString(err instanceof Error ? err.message : String(err));
  const final = isFinal(err, f.opts);
  const reached = err instanceof SmtpDeliveryError ? err.reached : [];
  await f.repo.recordDeliveryFailure({ id: f.id, error, final, at: f.at, reached });
  f.log.warn(
    { channel: f.channel, key: f.key, attempt: f.opts.attempt, final, error },
    final ? "digest delivery failed for good; the next digest covers its window" : "digest delivery failed; will retry",
  );
}

export async function runDigest(payload: DigestJobPayload, opts: RunDigestOptions): Promise<RunDigestResult> {
  const { services } = opts;
  const { config } = services;
  const log = opts.log ?? services.log;
  const channel = payload.channel;
  if (!config.digest.channels.includes(channel) && !opts.deliverer) {
    return { status: "skipped", reason: `the ${channel} channel is not in DVAULT_DIGEST_CHANNELS any more` };
  }
  const lock = await acquireLock(services.coord, `${config.redisPrefix}:digest-lock:${channel}`, 120_000);
  if (!lock) throw new DigestBusyError(channel);
  const clock = new CronClock(config.digest.cron, config.digest.timezone);
  try {
    const repo = new DigestRepository(services.pool);
    const tick = new Date(payload.tick);
    const window = digestWindow(await repo.lastWindowEnd(channel), tick, clock);
    if (!window) {
      const covered = (await repo.lastWindowEnd(channel)) ?? tick;
      await repo.supersedePending({ channel, coveredUntil: covered, exceptId: null, at: new Date(services.now()) });
      return { status: "skipped", reason: `the ${channel} digest already covers ${payload.tick}` };
    }
    const key = digestKey(channel, window);
    const now = new Date(services.now());
    const downloadsPaused = opts.downloadsPaused ?? storedDownloadsPausedProbe(services.coord, config.redisPrefix);
    const installKey = services.installKey?.();
    const data = await collectDigest({ db: services.pool, window, now, archiveDir: config.archiveDir, downloadsPaused, installKey, digestKey: key });
    const fileBase = `dvault-digest-${compactTime(window.start)}-${compactTime(window.end)}`;
    const shown = await digestImages(data, {
      channel,
      thumbs: new Thumbnails(openBlobStore(config, { writer: thisWriterTag() })),
      dashboard: config.publicUrl ? { url: config.publicUrl, linkKey: linkKeyOf(config) } : undefined,
      filesDir: imagesDirOf(fileBase),
    });
    const rendered = renderDigest(shown.data, { timezone: config.digest.timezone, idempotencyKey: key });
    const messageId = messageIdFor(key, messageDomainOf(config.digest));
    const row = await repo.openDigest({
      channel,
      windowStart: window.start,
      windowEnd: window.end,
      scheduledAt: tick,
      trigger: payload.trigger as DigestTrigger,
      idempotencyKey: key,
      messageId,
      subject: rendered.subject,
      counts: data.counts,
      at: now,
    });
    const finish = (status: "sent" | "empty", receipt: Record<string, unknown> | null) =>
      withTransaction(services.pool, async (tx) => {
        const r = new DigestRepository(tx);
        await r.markDone({ id: row.id, status, receipt, at: new Date(services.now()) });
        await r.advanceWindow({ channel, end: window.end, digestId: row.id, at: new Date(services.now()) });
        await r.supersedePending({ channel, coveredUntil: window.end, exceptId: row.id, at: new Date(services.now()) });
      });

    if (row.status === "sent") {
      // Delivered by an attempt that crashed before moving the window: move it now, send nothing.
      await finish("sent", row.delivery);
      return { status: "sent", digestId: row.id, window, key, subject: row.subject ?? rendered.subject, counts: data.counts, retried: false };
    }
    if (isEmptyDigest(data.counts) && !config.digest.sendEmpty) {
      await finish("empty", null);
      log.info({ channel, window }, "digest window empty: nothing sent");
      return { status: "empty", digestId: row.id, window, key };
    }

    const message: OutgoingMessage = {
      kind: "digest",
      idempotencyKey: key,
      messageId,
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      payload: { window: { start: window.start.toISOString(), end: window.end.toISOString() }, counts: data.counts, digest: shown.data },
      fileBase,
      date: now,
      images: shown.images,
      digest: shown.data,
      // An earlier attempt's recipients, when the server deferred the others (smtp.ts): not sent it again.
      reached: reachedRecipients(row.delivery),
    };
    const deliverer = opts.deliverer ?? (createDeliverers(config.digest, [channel])[0] as Deliverer);
    const receipt = await deliverer.deliver(message).catch(async (err: unknown) => {
      const settled = settledAfterDeferrals(err, opts, messageId);
      if (settled) return settled;
      await recordFailure(err, { repo, id: row.id, at: new Date(services.now()), log, channel, key, opts });
      throw err;
    });
    await finish("sent", receipt);
    const refused = loggedSent(log, { channel, key, counts: data.counts, attempts: row.attempts + 1 }, receipt);
    return { status: "sent", digestId: row.id, window, key, subject: rendered.subject, counts: data.counts, retried: row.attempts > 0, refused };
  } finally {
    clock.destroy();
    await lock.release();
  }
}
