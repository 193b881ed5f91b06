// `dvault status [--json]`: is the archive working? Accounts, sync sources, queues, downloads, disk, the API
// pace and workers in one screen; --json prints the documented, stable form (docs/status.md, src/status/schema.ts).
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { movedAtText } from "../queue/holder.ts";
import { QueueAdmin } from "../queue/queue-admin.ts";
import { createServices } from "../services.ts";
import { collectStatus } from "../status/collect.ts";
import { quotaServedLine } from "../status/quota-words.ts";
import { refusedWritesLine } from "../status/refused-writes-words.ts";
import { notArchivableLines } from "../text/not-archivable.ts";
import type { StatusReport } from "../status/schema.ts";
import { formatDuration, formatNext, formatRate, formatRelative, formatTime } from "../status/units.ts";
import { formatBytes } from "../text/bytes.ts";
import { plural } from "../text/plural.ts";

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    "  " +
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** Read on an engine the install left (src/queue/holder.ts#noteMovedTo): what follows of queues, workers and the pace is stale there. */
function movedAwayWarning({ name, movedTo }: StatusReport["engine"]): string[] {
  if (!movedTo) return [];
  return [
    `WARNING: this install was moved to ${movedTo.to} by dvault engine migrate (${movedAtText(movedTo)}); this status was read on ${name}, which it left: its queues, workers and pace are not the install's. Set DVAULT_ENGINE=${movedTo.to} where it is set (the settings file or the environment)`,
    "",
  ];
}

/** A database that refuses writes: the worker's jobs wait for it (src/queue/outage.ts), and nothing is archived. */
function refusedWritesWarning(database: StatusReport["database"]): string[] {
  const line = refusedWritesLine(database);
  return line ? [`WARNING: ${line}`, ""] : [];
}

/**
 * The files deferred by the weekly quota and their window. The earliest window (repo.nextQuotaWindow) may have opened
 * with no run since: its files are due now, not waiting for it.
 */
function deferredLine(d: StatusReport["downloads"], now: number): string {
  const at = `${formatTime(d.nextWindowAt)} (${formatRelative(d.nextWindowAt, now)})`;
  return d.nextWindowAt !== null && Date.parse(d.nextWindowAt) <= now
    ? `  ${d.deferredByQuota} deferred by the weekly quota; the earliest window opened ${at}: its files are due now`
    : `  ${d.deferredByQuota} deferred by the weekly quota; next window ${at}`;
}

export function formatStatus(r: StatusReport): string {
  const now = Date.parse(r.generatedAt);
  const out: string[] = [`dvault status at ${formatTime(r.generatedAt)}`, "", ...movedAwayWarning(r.engine), ...refusedWritesWarning(r.database)];

  out.push("Accounts");
  if (r.accounts.length === 0) out.push("  none yet: log in with dvault auth login");
  for (const a of r.accounts) {
    const who = a.username && a.username !== a.name ? `${a.name} (${a.username})` : a.name;
    const token = a.accessExpiresAt
      ? `access token ${a.accessExpiresInS !== null && a.accessExpiresInS < 0 ? "expired" : "expires"} ${formatRelative(a.accessExpiresAt, now)}`
      : "no access token";
    const refresh = a.refreshTokenAgeDays !== null ? `, refresh token ${a.refreshTokenAgeDays} d old` : a.hasRefreshToken ? "" : ", no refresh token";
    out.push(`  ${who} [${a.kind}] ${a.state.toUpperCase()}: ${token}${refresh}`);
    if (a.scopes.length) out.push(`    scopes: ${a.scopes.join(" ")}`);
    if (a.stateReason && a.state !== "ok") out.push(`    ${a.stateReason}`);
    if (a.fix) out.push(`    fix: ${a.fix}`);
  }

  out.push("", "Sources");
  if (r.sources.length === 0) out.push("  none has run yet: start dvault worker, or run dvault sync --once");
  else {
    out.push(
      ...table(
        ["account", "source", "last run", "result", "schedule", "next run", "new/chg/rem", "last full sweep", "note"],
        r.sources.map((s) => [
          s.account,
          s.source + (s.key ? `:${s.key}` : ""),
          formatRelative(s.lastRunAt, now),
          (s.lastResult ?? "—") + (s.inProgress ? " (sweep unfinished)" : ""),
          s.schedule ?? "—",
          formatNext(s.nextRunAt, now),
          `${s.items.new}/${s.items.changed}/${s.items.removed}`,
          formatRelative(s.lastCompleteSweepAt, now),
          [
            s.unavailableReason,
            s.lastResult === "failed" || s.lastResult === "skipped" ? s.lastError : null,
            s.gaps.length
              ? `${s.gaps.length} gap(s): ${s.gaps.map((g) => `${g.scope} ${g.mirrored ?? "?"}/${g.expected ?? "?"} ${g.reason}`).join("; ")}`
              : null,
          ]
            .filter(Boolean)
            .join(" | "),
        ]),
      ),
    );
  }

  out.push("", "Queues");
  out.push(
    ...table(
      ["queue", "waiting", "active", "delayed", "failed", "oldest waiting", "state"],
      r.queues.map((q) => [
        q.name,
        String(q.waiting),
        String(q.active),
        String(q.delayed),
        String(q.failed),
        q.oldestWaitingS === null ? "—" : formatDuration(q.oldestWaitingS * 1000),
        // Not paused is not running: without a worker nothing takes the waiting jobs.
        q.paused ? "PAUSED" : r.workers.length > 0 ? "running" : "no worker",
      ]),
    ),
  );
  if (r.queues.some((q) => q.failed > 0)) out.push("  inspect failures with: dvault jobs failed");

  const d = r.downloads;
  out.push("", `Downloads${d.paused ? ` (PAUSED${d.pausedReason ? `: ${d.pausedReason}` : ""})` : ""}`);
  const counts = Object.entries(d.byStatus)
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${status.replace("_", " ")} ${n}`);
  out.push(`  ${counts.length ? counts.join(" · ") : "nothing wanted yet"}`);
  // "Done for now" by the one definition download --once and its exit code use (DownloadsLeft): nothing due, and
  // what a queue holds is held by a worker that runs.
  const held = r.workers.length > 0 ? 0 : d.queued;
  if (d.dueNow + held === 0) out.push(`  done for now${d.queued ? `: ${d.queued} in the worker's queue` : ": nothing is due"}`);
  else
    out.push(
      `  ${d.dueNow + held} due now${held ? ` (${held} queued for a worker that is not running)` : ""}: ${r.workers.length ? "the worker takes them" : "start the worker, or run dvault download --once"}`,
    );
  if (d.deferredByQuota) out.push(deferredLine(d, now));
  const failedForGood = (d.byStatus.failed ?? 0) - d.failedRetrying - d.waitingForLogin.failed;
  if (d.waitingForLogin.rows) {
    const logins = r.accounts.filter((a) => a.kind === "user" && a.needsReauth && a.fix).map((a) => a.fix);
    out.push(`  ${d.waitingForLogin.rows} wait for an account to log in again, not tried until then: ${logins.join(", ") || "dvault auth login"}`);
  }
  if (d.failedRetrying)
    out.push(
      `  ${d.failedRetrying} failed on a transient fault, retried on their own; next attempt ${formatTime(d.nextRetryAt)} (${formatRelative(d.nextRetryAt, now)})`,
    );
  if (failedForGood > 0) out.push(`  ${failedForGood} failed for good (the service refused them): not retried`);
  for (const q of d.quota) {
    out.push(`  quota ${q.account}: ${q.used} of ${q.limit} used this week, ${q.remaining} left`);
    const served = quotaServedLine(q);
    if (served) out.push(`    ${served}`);
    if (q.exhaustedReason) out.push(`    spent for this week: ${q.exhaustedReason}`);
  }

  const a = r.archive;
  out.push("", "Archive");
  // A directory that is not there while the database lists files in it is the wrong directory, not a new one.
  const where = a.exists ? "" : a.files > 0 ? " (not found: is DVAULT_ARCHIVE_DIR the archive's directory?)" : " (not created yet)";
  if (a.storage === "local") out.push(`  ${a.dir}${where}: ${formatBytes(a.sizeBytes)} in ${plural(a.files, "file")}`);
  else {
    out.push(`  ${a.store}: ${formatBytes(a.sizeBytes)} in ${plural(a.files, "file")}`);
    out.push(`  working folder (partial files) ${a.dir}${a.exists ? "" : " (not created yet)"}`);
  }
  if (a.freeBytes !== null) out.push(`  disk: ${formatBytes(a.freeBytes)} free of ${formatBytes(a.totalBytes)}`);

  const na = r.notArchivable;
  if (na.total > 0) {
    const lines = notArchivableLines(na);
    out.push("", `Not archived in full (${plural(na.total, "work")})`);
    for (const l of lines.reasons) out.push(`  ${l}`);
    out.push("  per artist:");
    for (const l of lines.artists) out.push(`    ${l}`);
  }

  const u = r.unreadable;
  if (u.count > 0) {
    out.push("", "Unreadable answers (last 30 days)");
    out.push(
      `  ${u.count} answer(s) of the service could not be read and were skipped, kept with their raw JSON in the unreadable_responses table (${u.responses} whole response(s), ${u.count - u.responses} single item(s)); last ${formatRelative(u.lastSeenAt, now)}`,
    );
    for (const x of u.recent) out.push(`    ${x.operation} ${x.subject || "(response)"}: ${x.error}${x.count > 1 ? ` (${x.count} times)` : ""}`);
  }

  if (r.pacing.length) {
    out.push("", "API pace (per client and user; cdn: file downloads)");
    out.push(
      ...table(
        ["key", "rate", "learned", "last refused at", "lost to throttling", "held"],
        r.pacing.map((p) => [
          p.key,
          formatRate(p.rate),
          formatRate(p.learnedRate),
          formatRate(p.refusedRate),
          formatDuration(p.throttledS * 1000),
          p.heldUntil ? `until ${formatTime(p.heldUntil)} (${formatRelative(p.heldUntil, now)})` : "no",
        ]),
      ),
    );
  }

  out.push("", "Workers");
  if (r.workers.length === 0) out.push("  no worker is running (start one with dvault worker)");
  for (const w of r.workers) {
    const roles = w.roles.length ? ` (${w.roles.join(", ")})` : "";
    out.push(`  ${w.id}${roles}: last heartbeat ${w.ageS === null ? "recently" : `${formatDuration(w.ageS * 1000)} ago`}`);
  }
  for (const role of r.missingRoles) out.push(`  WARNING: no running worker has the ${role} role: start one whose DVAULT_WORKER_ROLES includes ${role}`);
  if (r.redis?.legacy) {
    out.push(
      `  Redis keys stay under the prefix "${r.redis.prefix}" of an older install, which Redis Cluster cannot run (README.md#running-on-several-machines)`,
    );
  }

  if (r.problems.length) {
    out.push("", "Could not read");
    for (const p of r.problems) out.push(`  ${p}`);
  }
  return out.join("\n");
}

export function registerStatusCommand(program: Command): void {
  program
    .command("status")
    .description("show accounts, sync sources, queues, downloads, disk and workers at a glance")
    .option("--json", "print the documented JSON form (docs/status.md)")
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      const log = cliLogger(config);
      const services = await createServices({ config, log });
      const queues = new QueueAdmin(services.queues);
      try {
        const report = await collectStatus({ ...services, queues, tokens: services.tokens });
        if (opts.json) printJson(report);
        else printOut(formatStatus(report));
      } finally {
        await queues.close();
        await services.close();
      }
    });
}
