// Immediate alerts: what needs the owner now, through the digest's channels without waiting for the
// digest. Checks read the current conditions (an account needing re-authorization, downloads paused for
// disk space, a source failing for a while, a worker whose heartbeat vanished); the evaluator opens an
// incident per condition, notifies it once, reminds at most daily and resolves what is gone.
import type { Coordinator } from "../coord/coordinator.ts";
import { readDownloadsPauseState } from "../coord/downloads-pause.ts";
import type { InstallKey } from "../crypto/install-key.ts";
import type { Queryable } from "../db/with-transaction.ts";
import type { Logger } from "../log.ts";
import { scrubString } from "../redact.ts";
import { AlertRepository, type AlertCondition, type AlertKind, type ChannelResults, type IncidentRow, type OpenIncident } from "../db/alert.repository.ts";
import { messageIdFor } from "./deliver/index.ts";
import { reachedRecipients, SmtpDeliveryError } from "./deliver/smtp.ts";
import { unreadableAccounts } from "./unreadable-accounts.ts";
import { type AlertNotice, renderAlert } from "./render-alert.ts";
import { type Deliverer, type DownloadsPaused, type OutgoingMessage, pausedHeadline } from "./types.ts";

export type { AlertCondition, AlertKind };

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;
/** A source counts as failing repeatedly once its last run has been failing this long (retries included). */
export const SOURCE_FAILING_GRACE_MS = 30 * MINUTE_MS;
/** A worker not seen for this long is forgotten (its machine is gone for good). */
const FORGET_WORKER_MS = 7 * DAY_MS;

/** Whether downloads are paused for disk space. The download worker owns the flag; this only reads it. */
export type DownloadsPausedProbe = () => Promise<DownloadsPaused>;

/**
 * Reads the download worker's pause switch as status reads it (src/coord/downloads-pause.ts). Point the evaluator at
 * another probe if the switch moves.
 */
export function storedDownloadsPausedProbe(coord: Coordinator, prefix: string): DownloadsPausedProbe {
  return () => readDownloadsPauseState(coord, prefix);
}

// ---- worker heartbeats --------------------------------------------------------------------------------

/** Workers seen alive by any evaluator: id → last seen (ISO). A graceful stop removes its entry. */
export const knownWorkersKey = (prefix: string) => `${prefix}:heartbeats:known`;

async function liveWorkers(coord: Coordinator, prefix: string): Promise<string[]> {
  const head = `${prefix}:heartbeat:`;
  return (await coord.keysStartingWith(head)).map((k) => k.slice(head.length));
}

const hostOf = (workerId: string) => workerId.slice(0, Math.max(0, workerId.lastIndexOf(":"))) || workerId;

/**
 * Workers whose heartbeat vanished without a graceful stop while no other worker runs on their machine.
 * Whichever process evaluates (a second worker, a restarted one, `dvault digest`) remembers the live
 * heartbeats it sees, so a worker that dies is noticed by the next process alive. The worker evaluating (`evaluator`)
 * is alive whatever its heartbeat says: its key expires while its machine sleeps or its store is away, and this job
 * may run on waking before the worker's next beat.
 */
export async function missingWorkers(coord: Coordinator, prefix: string, now: Date, evaluator?: string): Promise<Array<{ id: string; lastSeen: Date }>> {
  const live = await liveWorkers(coord, prefix);
  if (evaluator && !live.includes(evaluator)) live.push(evaluator);
  const key = knownWorkersKey(prefix);
  if (live.length) await coord.hashPut(key, Object.fromEntries(live.map((id) => [id, now.toISOString()])));
  const known = await coord.hashGetAll(key);
  const liveHosts = new Set(live.map(hostOf));
  const missing: Array<{ id: string; lastSeen: Date }> = [];
  for (const [id, seen] of Object.entries(known)) {
    if (live.includes(id)) continue;
    const lastSeen = new Date(seen);
    // Restarted on the same machine (a new pid), or gone for a week: nothing to report any more.
    if (liveHosts.has(hostOf(id)) || Number.isNaN(lastSeen.getTime()) || now.getTime() - lastSeen.getTime() > FORGET_WORKER_MS) {
      await coord.hashRemove(key, [id]);
      continue;
    }
    missing.push({ id, lastSeen });
  }
  return missing;
}

/** A worker stopping gracefully says so, so its vanished heartbeat is not an incident. */
export async function forgetWorker(coord: Coordinator, prefix: string, workerId: string): Promise<void> {
  await coord.hashRemove(knownWorkersKey(prefix), [workerId]);
}

// ---- checks -------------------------------------------------------------------------------------------

export type CheckOptions = {
  db: Queryable;
  coord: Coordinator;
  prefix: string;
  now: Date;
  /** The heartbeat id (`<host>:<pid>`) of the worker that evaluates, when a worker does (missingWorkers). */
  evaluator?: string;
  downloadsPaused?: DownloadsPausedProbe;
  /**
   * The key the accounts' tokens are read with (Services.installKey): an account whose tokens it cannot read (a key
   * lost in a move) needs a login as much as one whose grant is gone, and a worker skips it as silently.
   */
  installKey?: InstallKey;
};

export async function currentConditions(opts: CheckOptions): Promise<AlertCondition[]> {
  const [accounts, sources, paused, workers] = await Promise.all([
    new AlertRepository(opts.db).listAccountsNeedingReauth(),
    new AlertRepository(opts.db).listFailingSources(),
    opts.downloadsPaused ? opts.downloadsPaused().catch((): DownloadsPaused => ({ paused: false })) : Promise.resolve<DownloadsPaused>({ paused: false }),
    missingWorkers(opts.coord, opts.prefix, opts.now, opts.evaluator),
  ]);
  const conditions: AlertCondition[] = [];
  for (const a of accounts) {
    conditions.push({
      kind: "needs_reauth",
      subject: `account:${a.id}`,
      title: `account “${a.name}” needs re-authorization`,
      details: { account: a.name, reason: a.state_reason, since: a.state_changed_at?.toISOString() ?? null },
    });
  }
  for (const a of opts.installKey ? await unreadableAccounts(opts.db, opts.installKey) : []) {
    conditions.push({
      kind: "needs_reauth",
      subject: `account:${a.id}`,
      title: `account “${a.name}” needs re-authorization`,
      details: { account: a.name, reason: a.reason, since: null },
    });
  }
  for (const s of sources) {
    conditions.push({
      kind: "source_failing",
      subject: `source:${s.account_id}:${s.source}:${s.key}`,
      title: `${s.name}: ${s.source}${s.key ? ` (${s.key})` : ""} keeps failing`,
      details: {
        account: s.name,
        source: s.source,
        key: s.key,
        error: s.last_error ? scrubString(s.last_error) : null,
        lastRunAt: s.last_run_at?.toISOString() ?? null,
      },
    });
  }
  if (paused.paused) {
    conditions.push({
      kind: "downloads_paused",
      subject: "downloads",
      title: pausedHeadline(paused.cause),
      details: { reason: paused.reason ?? null, since: paused.since?.toISOString() ?? null, cause: paused.cause ?? "disk" },
    });
  }
  for (const w of workers) {
    conditions.push({
      kind: "heartbeat_missing",
      subject: `worker:${w.id}`,
      title: `the dvault worker ${w.id} stopped without shutting down`,
      details: { worker: w.id, lastSeen: w.lastSeen.toISOString() },
    });
  }
  return conditions;
}

/** The words of an alert: what happened and, where there is one, the exact command that fixes it. */
export function describeIncident(incident: IncidentRow): { body: string; command?: string } {
  const d = incident.details as Record<string, string | null | undefined>;
  switch (incident.kind) {
    case "needs_reauth":
      return {
        body: `dvault can no longer use the grant of account “${d.account}”${d.reason ? `: ${d.reason}` : ""}. Its sync is paused until you log in again; nothing archived is lost.`,
        command: `dvault auth login --account ${d.account}`,
      };
    case "source_failing":
      return {
        body: `The ${d.source} sync of “${d.account}”${d.key ? ` (${d.key})` : ""} has been failing for more than ${SOURCE_FAILING_GRACE_MS / MINUTE_MS} minutes, retries included. Last error: ${d.error ?? "none recorded"}. dvault keeps retrying on its schedule.`,
      };
    case "downloads_paused":
      if (d.cause === "storage") {
        return {
          body: `Downloads are paused: ${d.reason ?? "the archive refuses files"}. No more of the weekly allowance is spent until the archive takes files again; the files stay wanted and nothing archived is lost. Syncing the mirror continues.`,
        };
      }
      if (d.cause === "archive_link") {
        return {
          body: `Downloads are paused: ${d.reason ?? "a folder of the archive leads outside it"}. Nothing was written outside the archive and no file was given up. Syncing the mirror continues.`,
        };
      }
      return {
        body: `Downloads are paused because the archive's disk is almost full${d.reason ? ` (${d.reason})` : ""}. Free some space: they resume on their own. Syncing the mirror continues.`,
      };
    case "heartbeat_missing":
      return {
        body: `The worker ${d.worker} last reported at ${d.lastSeen} and then stopped without shutting down: it crashed, was killed, or its machine went off. Nothing syncs there until it runs again.`,
        command: "dvault worker",
      };
    default: {
      const never: never = incident.kind;
      return { body: String(never) };
    }
  }
}

// ---- the evaluator ------------------------------------------------------------------------------------

export type EvaluateAlertsOptions = CheckOptions & {
  deliverers: readonly Deliverer[];
  timezone: string;
  log: Logger;
  /** Minimum age of an incident before its first notification, per kind (default: sources 30 min, others 0). */
  graceMs?: Partial<Record<AlertKind, number>>;
  /** Reminders at most this often (default daily). */
  remindAfterMs?: number;
  /** The domain of Message-IDs (the sender's). */
  messageDomain?: string;
};

export type EvaluateAlertsResult = { open: number; notified: string[]; reminded: string[]; resolved: string[]; failed: string[] };

export async function evaluateAlerts(opts: EvaluateAlertsOptions): Promise<EvaluateAlertsResult> {
  const repo = new AlertRepository(opts.db);
  const { now } = opts;
  const conditions = await currentConditions(opts);
  const open = await repo.openIncidents(conditions, now);
  const resolved = await repo.resolveMissing(conditions, now);
  const grace: Record<AlertKind, number> = {
    needs_reauth: 0,
    downloads_paused: 0,
    heartbeat_missing: 0,
    source_failing: SOURCE_FAILING_GRACE_MS,
    ...opts.graceMs,
  };
  const remindAfterMs = opts.remindAfterMs ?? DAY_MS;
  const result: EvaluateAlertsResult = { open: open.length, notified: [], reminded: [], resolved: resolved.map((r) => r.title), failed: [] };

  for (const incident of open) {
    if (now.getTime() - incident.openedAt.getTime() < grace[incident.kind]) continue;
    if (incident.lastNotifiedAt && now.getTime() - incident.lastNotifiedAt.getTime() < remindAfterMs) {
      await sendOwed(repo, incident, opts, result);
      continue;
    }
    const claimed = await repo.claimNotification({ id: incident.id, at: now, remindAfterMs });
    if (!claimed) continue; // another process notifies it
    const reminder = claimed.notifyCount > 1;
    const results = await notify(claimed, reminder, opts);
    const outcomes = Object.values(results);
    await repo.recordDelivery({ id: claimed.id, at: now, reminder, results });
    if (outcomes.length > 0 && outcomes.every((r) => !r.ok)) {
      await repo.releaseNotification({ id: claimed.id, previous: incident.lastNotifiedAt });
      result.failed.push(claimed.title);
      continue;
    }
    (reminder ? result.reminded : result.notified).push(claimed.title);
  }
  return result;
}

/**
 * How long after a channel was last sent an alert again it is sent it again: longer than an SMTP send may take (smtp.ts
 * timeouts), so a claim is left to the evaluator sending it, and a channel that keeps failing is tried 12 times an
 * hour rather than at every evaluation; a greylisting server takes a retry after about 5 minutes.
 */
const OWED_SEND_EVERY_MS = 5 * MINUTE_MS;
/**
 * How many sends a notification gets on a channel that failed it while another took it, or whose mail server deferred
 * some recipients: the first and 5 more, over about 20 minutes, enough for a greylisting server. A channel that fails
 * for good (a deleted webhook, a full mailbox) is left to the daily reminder, which tries every channel again, rather
 * than sent to every 5 minutes for the incident's life.
 */
export const OWED_SENDS = 6;

type ChannelResult = ChannelResults[string];

/** Whether a channel still owes the last notification: it failed it, or reached some recipients and not the deferred. */
const owes = (r: ChannelResult | undefined): r is ChannelResult => r !== undefined && (r.ok === false || (r.deferred?.length ?? 0) > 0);

/**
 * Sends the incident's last notification again on the channels that owe it (failed while another took it, a
 * greylisting mail server's 451; or SMTP recipients deferred): same key and Message-ID, at the next evaluation, then
 * every OWED_SEND_EVERY_MS until taken, at most OWED_SENDS sends in all; the channels that took it get nothing more.
 */
async function sendOwed(repo: AlertRepository, incident: OpenIncident, opts: EvaluateAlertsOptions, result: EvaluateAlertsResult): Promise<void> {
  const owed = opts.deliverers.filter((d) => {
    const r = incident.channelResults[d.channel];
    return owes(r) && (r.tries ?? 1) < OWED_SENDS && !(r.sending && opts.now.getTime() - Date.parse(r.sending) < OWED_SEND_EVERY_MS);
  });
  if (owed.length === 0) return;
  const claimed = await repo.claimOwedChannels({ incident, channels: owed.map((d) => d.channel), at: opts.now });
  if (!claimed) return; // another process sends them
  const reminder = claimed.notifyCount > 1;
  const results = await notify(claimed, reminder, { ...opts, deliverers: owed });
  const latest: ChannelResults = { ...claimed.channelResults };
  for (const [channel, r] of Object.entries(results)) {
    const { tries, sending } = claimed.channelResults[channel] ?? {};
    latest[channel] = { ...r, tries, sending };
    if (owes(r) && (tries ?? 1) >= OWED_SENDS)
      opts.log.warn({ channel, alert: incident.kind, tries }, "alert channel still failing: not sent again until the daily reminder");
  }
  await repo.recordDelivery({ id: claimed.id, at: opts.now, reminder, results, latest });
  const taken = Object.values(results).some((r) => r.ok);
  (taken ? (reminder ? result.reminded : result.notified) : result.failed).push(claimed.title);
}

/** The SMTP recipients an earlier failed attempt of this very notification (`key`) reached while the server deferred the others. */
function reachedBefore(incident: OpenIncident, key: string): string[] {
  const last = incident.channelResults.smtp;
  return owes(last) && last.key === key ? reachedRecipients(last.receipt) : [];
}

async function notify(incident: OpenIncident, reminder: boolean, opts: EvaluateAlertsOptions): Promise<ChannelResults> {
  const { body, command } = describeIncident(incident);
  const notice: AlertNotice = {
    id: incident.id,
    kind: incident.kind,
    subject: incident.subject,
    title: incident.title,
    body,
    ...(command ? { command } : {}),
    openedAt: incident.openedAt,
    reminder,
  };
  const key = `dvault-alert-${incident.id}-${incident.notifyCount}`;
  const rendered = renderAlert(notice, { timezone: opts.timezone, idempotencyKey: key });
  const message: OutgoingMessage = {
    kind: "alert",
    idempotencyKey: key,
    messageId: messageIdFor(key, opts.messageDomain),
    subject: rendered.subject,
    html: rendered.html,
    text: rendered.text,
    payload: {
      alert: {
        kind: notice.kind,
        subject: notice.subject,
        title: notice.title,
        body,
        command: command ?? null,
        openedAt: notice.openedAt.toISOString(),
        reminder,
      },
    },
    fileBase: `dvault-alert-${incident.id}-${incident.notifyCount}-${incident.kind}`,
    date: opts.now,
    alert: { kind: notice.kind, title: notice.title, body, command: command ?? null, reminder },
    reached: reachedBefore(incident, key),
  };
  const results: ChannelResults = {};
  for (const deliverer of opts.deliverers) {
    const at = new Date().toISOString();
    try {
      const receipt = await deliverer.deliver(message);
      results[deliverer.channel] = { ok: true, at, receipt };
    } catch (err) {
      const error = scrubString(err instanceof Error ? err.message : String(err));
      // Reached some recipients while the server deferred the others: taken, owing the deferred (sendOwed).
      if (err instanceof SmtpDeliveryError && err.reached.length > 0 && err.deferred.length > 0) {
        opts.log.warn({ channel: deliverer.channel, alert: incident.kind, error }, "alert delivered; some recipients deferred, sent it again later");
        results[deliverer.channel] = { ok: true, at, error, key, receipt: { accepted: [...err.reached] }, deferred: [...err.deferred] };
        continue;
      }
      opts.log.warn({ channel: deliverer.channel, alert: incident.kind, error }, "alert delivery failed");
      const reached = err instanceof SmtpDeliveryError && err.reached.length > 0 ? err.reached : deliverer.channel === "smtp" ? (message.reached ?? []) : [];
      results[deliverer.channel] = { ok: false, at, error, key, ...(reached.length > 0 ? { receipt: { accepted: [...reached] } } : {}) };
    }
  }
  // Said of the channels that took it: one that failed has its warning above, and none may have taken it.
  const channels = Object.keys(results).filter((c) => results[c]?.ok);
  if (channels.length > 0)
    opts.log.info({ alert: incident.kind, subject: incident.subject, reminder, channels }, reminder ? "alert reminder sent" : "alert sent");
  return results;
}
