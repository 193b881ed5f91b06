// `dvault digest`: --preview renders the next digest to files without sending it or moving its window;
// --send sends one now through the same digest job the cron enqueues (processed here, or by a running
// worker); --history lists what was sent; --alerts evaluates the alert conditions now through the worker's alerts job.
// A composition root for --send and --alerts: it runs their queue with the job catalogue, like the worker (src/queue/run-now.ts).
import type { Command } from "commander";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { loadConfig } from "../config.ts";
import { AlertRepository } from "../db/alert.repository.ts";
import { DigestRepository } from "../db/digest.repository.ts";
import { previewDigest } from "../digest/preview.ts";
import { refusedAfterDeferrals, refusedRecipients } from "../digest/deliver/smtp.ts";
import type { DigestJobPayload } from "../digest/run-digest.ts";
import { EXIT_FAILED, UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { cliLogger } from "./output/mode.ts";
import { runHere } from "../../jobs/run-here.ts";
import { printJson, printOut } from "./output/print.ts";
import { Producer } from "../queue/producer.ts";
import type { RunNowOutcome } from "../queue/run-now.ts";
import { createServices, type Services } from "../services.ts";

type DigestOptions = { preview?: boolean; send?: boolean; history?: boolean; alerts?: boolean; since?: string; out?: string; json?: boolean };

/** An ISO date, or an ISO date and time with its zone (Z or ±hh:mm): "2026-11-01", "2026-11-01T09:00+01:00". */
const ISO_SINCE = /^(\d{4})-(\d{2})-(\d{2})(T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/i;

const SINCE_FORMS =
  "give an ISO time with its zone (2026-11-01T08:00Z or 2026-11-01T09:00+01:00), a date (2026-11-01, from 00:00 UTC) or a duration such as 36h or 2d";

/**
 * "2026-11-01" (00:00 UTC), "2026-11-01T08:00Z", "2026-11-01T09:00+01:00", or a duration back from now: "36h", "2d",
 * "90m"; a time in the past. Date.parse alone took "5" for May 2001, "2026-02-30" for 2 March, and a time without
 * its zone in this machine's zone.
 */
export function parseSince(raw: string, now: number): Date {
  const text = raw.trim();
  const rel = /^(\d+(?:\.\d+)?)\s*(m|min|h|d|w)$/i.exec(text);
  let at: number;
  if (rel) {
    const unit = { m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 }[(rel[2] ?? "h").toLowerCase() as "m" | "min" | "h" | "d" | "w"];
    at = now - Number(rel[1]) * unit;
  } else {
    const iso = ISO_SINCE.exec(text);
    if (iso?.[4] && !iso[5]) throw new UserError(`--since "${raw}" has no zone: add Z for UTC or its offset (${text}Z, ${text}+01:00)`);
    const day = iso ? new Date(Date.UTC(Number(iso[1]), Number(iso[2]) - 1, Number(iso[3]))) : undefined;
    at = day?.toISOString().startsWith(`${iso?.[1]}-${iso?.[2]}-${iso?.[3]}`) ? Date.parse(text) : Number.NaN;
  }
  const since = new Date(at);
  // NaN, or further back than a date goes (99999999999w).
  if (Number.isNaN(since.getTime())) throw new UserError(`--since "${raw}" is not a time: ${SINCE_FORMS}`);
  if (at >= now) throw new UserError(`--since "${raw}" is ${since.toISOString()}, not in the past: give an earlier time`);
  return since;
}

export function registerDigestCommand(program: Command): void {
  program
    .command("digest")
    .description("digests of what happened: --preview renders one without sending, --send sends one now")
    .option("--preview", "render the next digest to files; nothing is sent and the window does not move")
    .option("--since <time>", "with --preview: start the window here (an ISO time with its zone, a date from 00:00 UTC, or 36h / 2d back from now)")
    .option("--out <dir>", "with --preview: write digest.html, digest.txt and digest.json here (default: a new temporary directory)")
    .option(
      "--send",
      "send a digest now through every configured channel (the same job the schedule runs); exit code 1 when a channel did not deliver (a running worker retries it)",
    )
    .option("--history", "list the latest digests and alerts sent, with their delivery results")
    .option("--alerts", "check the alert conditions now and notify new incidents (what the worker does every minute)")
    .option("--json", "print the result as JSON")
    .action(async (opts: DigestOptions) => {
      if ((opts.since || opts.out) && !opts.preview) throw new UserError("--since and --out go with --preview");
      const modes = [opts.preview, opts.send, opts.history, opts.alerts].filter(Boolean).length;
      if (modes !== 1) throw new UserError("choose one of --preview, --send, --history or --alerts (see dvault digest --help)");
      const config = loadConfig();
      const log = cliLogger(config);
      const services = await createServices({ config, log });
      try {
        if (opts.preview) return await preview(services, opts);
        if (opts.history) return await history(services, opts.json === true);
        if (opts.alerts) return await alerts(services, log, opts.json === true);
        return await send(services, log, opts.json === true);
      } finally {
        await services.close();
      }
    });
}

async function preview(services: Services, opts: DigestOptions): Promise<void> {
  const since = opts.since ? parseSince(opts.since, services.now()) : undefined;
  const result = await previewDigest(services, { ...(since ? { since } : {}), ...(opts.out ? { out: opts.out } : {}) });
  if (opts.json) return printJson({ subject: result.subject, window: result.window, files: result.files });
  printOut(result.subject);
  printOut(`window: ${result.window.start.toISOString()} – ${result.window.end.toISOString()}`);
  printOut(`  html: ${result.files.html}`);
  printOut(`  text: ${result.files.text}`);
  printOut(`  json: ${result.files.json}`);
  printOut("Preview only: nothing was sent and no digest window moved.");
}

async function history(services: Services, json: boolean): Promise<void> {
  const digests = await new DigestRepository(services.pool).listDigests(20);
  const alerts = await new AlertRepository(services.pool).listDeliveries(10);
  if (json) return printJson({ digests, alerts });
  if (digests.length === 0 && alerts.length === 0) return printOut("no digest or alert has been sent yet");
  for (const d of digests) {
    const result =
      d.status === "sent" ? `sent ${d.sentAt?.toISOString() ?? ""}` : d.status === "empty" ? "empty (nothing sent)" : `${d.status}: ${d.lastError ?? ""}`;
    printOut(
      `${d.channel.padEnd(7)} ${d.windowStart.toISOString()} – ${d.windowEnd.toISOString()}  ${result}  (${d.attempts} attempt${d.attempts === 1 ? "" : "s"})`,
    );
    if (d.subject) printOut(`        ${d.subject}`);
    const refused = d.status === "sent" ? refusedWords(refusedRecipients(d.delivery), refusedAfterDeferrals(d.delivery)) : "";
    if (refused) printOut(`       ${refused}`);
  }
  for (const a of alerts) {
    const channels = Object.entries(a.results).map(([c, r]) => `${c} ${r.ok ? "ok" : `failed: ${r.error ?? ""}`}`);
    printOut(
      `alert   ${a.notifiedAt.toISOString()}  ${a.reminder ? "reminder: " : ""}${a.title}${a.resolvedAt ? " (resolved)" : ""}  ${channels.join(", ") || "no channel configured"}`,
    );
  }
}

/** What alerts.evaluate returns (jobs/alerts/handler.ts). */
type AlertsResult = { notified?: string[]; reminded?: string[]; failed?: string[]; resolved?: string[]; open?: number };

/** The alerts.evaluate job the worker runs every minute, through its handler and WorkerHost here (src/queue/run-now.ts). */
async function alerts(services: Services, log: Logger, json: boolean): Promise<void> {
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  try {
    const [outcome] = await runHere({ services, log, producer, queue: "maintenance", signal: AbortSignal.timeout(SEND_WAIT_MS) }, [
      { name: "alerts.evaluate", payload: {} },
    ]);
    if (outcome?.state !== "completed")
      throw new UserError(`the alert check did not finish: ${outcome && "reason" in outcome ? outcome.reason : "no outcome"}`);
    const result = (outcome.value ?? {}) as AlertsResult;
    if (json) return printJson(result);
    const lines = [
      ...(result.notified ?? []).map((t) => `notified: ${t}`),
      ...(result.reminded ?? []).map((t) => `reminded: ${t}`),
      ...(result.failed ?? []).map((t) => `could not notify (every channel failed; retried next time): ${t}`),
      ...(result.resolved ?? []).map((t) => `resolved: ${t}`),
    ];
    printOut(lines.length ? lines.join("\n") : `${result.open ?? 0} open incident(s), nothing new to notify`);
  } finally {
    await producer.close();
  }
}

const SEND_WAIT_MS = 120_000;

/**
 * The digest job of each channel through the worker's handler and WorkerHost, here on a private queue
 * (src/queue/run-now.ts); a delivery that must be retried, or that outlasts the wait, goes to the worker's queue.
 */
async function send(services: Services, log: Logger, json: boolean): Promise<void> {
  const { config } = services;
  if (config.digest.channels.length === 0) {
    throw new UserError("no digest channel is configured: set DVAULT_DIGEST_CHANNELS (smtp, file, webhook, ntfy, discord), or use dvault digest --preview");
  }
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  const tick = new Date(services.now()).toISOString();
  const payloads: DigestJobPayload[] = config.digest.channels.map((channel) => ({ channel, tick, trigger: "manual" }));
  try {
    const outcomes = await runHere(
      {
        services,
        log,
        producer,
        queue: "digest",
        handOver: (job) => producer.enqueue("digest.send", job.payload as DigestJobPayload),
        signal: AbortSignal.timeout(SEND_WAIT_MS),
      },
      payloads.map((payload) => ({ name: "digest.send", payload })),
    );
    if (json)
      printJson(outcomes.map((o, i) => ({ channel: payloads[i]!.channel, state: o.state, ...("value" in o ? { value: o.value } : { reason: o.reason }) })));
    else for (const [i, o] of outcomes.entries()) printOut(describeOutcome(o, payloads[i]!.channel));
    // A channel that did not deliver (refused, unreachable, still trying) is a failure for a script (`digest --send ||`),
    // whatever a running worker does with its retries.
    if (outcomes.some((o) => o.state !== "completed")) process.exitCode = EXIT_FAILED;
  } finally {
    await producer.close();
  }
}

/**
 * " (not to a@x, b@y: the SMTP server refused them; check DVAULT_SMTP_TO)", or "" when it refused nobody; those it
 * deferred at every attempt until the last (`afterDeferrals`, a full mailbox) are said apart, as no typo.
 */
function refusedWords(refused: readonly string[], afterDeferrals: readonly string[] = []): string {
  const typos = refused.filter((r) => !afterDeferrals.includes(r));
  const them = (n: number) => (n === 1 ? "it" : "them");
  const words = [
    ...(typos.length ? [`not to ${typos.join(", ")}: the SMTP server refused ${them(typos.length)}; check DVAULT_SMTP_TO`] : []),
    ...(afterDeferrals.length
      ? [`not to ${afterDeferrals.join(", ")}: the SMTP server deferred ${them(afterDeferrals.length)} at every attempt, refused after deferrals`]
      : []),
  ];
  return words.length === 0 ? "" : ` (${words.join("; ")})`;
}

function describeOutcome(o: RunNowOutcome, channel: string): string {
  switch (o.state) {
    case "completed": {
      const r = o.value as { status?: string; subject?: string; reason?: string; refused?: string[] } | null;
      if (r?.status !== "done") return `${channel}: nothing sent (${r?.reason ?? "skipped"})`;
      return `${channel}: sent — ${r.subject ?? ""}${refusedWords(r.refused ?? [])}`;
    }
    case "failed":
      return `${channel}: failed — ${o.reason}`;
    case "retrying":
      return `${channel}: delivery failed (${o.reason}); retrying with backoff — a running worker continues (see dvault digest --history)`;
    // (never "delayed": it comes only to a runNow given `settled`)
    case "delayed":
    case "interrupted":
      return `${channel}: still running after ${SEND_WAIT_MS / 1000} s; a running worker continues (see dvault digest --history)`;
  }
}
