// The overview: accounts, downloads, sources, queues, the archive and workers; "Sync now" and "Download now".
import { countsInWords, NOT_ARCHIVABLE_WORDS, shortfallInWords, sourceInWords } from "../../text/not-archivable.ts";
import { quotaServedLine } from "../../status/quota-words.ts";
import { refusedWritesLine } from "../../status/refused-writes-words.ts";
import type { StatusReport } from "../../status/schema.ts";
import { formatDuration, formatNext, formatRate, formatRelative, formatTime } from "../../status/units.ts";
import { formatBytes } from "../../text/bytes.ts";
import { html, type SafeHtml } from "../../text/html.ts";
import { layout, type PageFeed, pill } from "./layout.ts";
import { addBox, trackBox, type UrlBoxes } from "./track.ts";

const RESULT_TONE: Record<string, "ok" | "warn" | "bad" | ""> = { ok: "ok", degraded: "warn", incomplete: "warn", skipped: "warn", failed: "bad" };
const STATE_TONE: Record<string, "ok" | "warn" | "bad"> = { ok: "ok", expiring: "warn", needs_reauth: "bad", revoked: "bad" };

// ---- overview ---------------------------------------------------------------------------------------

/** The state-changing buttons' CSRF token and the notice of the last one pressed; without them no buttons. */
export type OverviewActions = { csrf: string; notice?: string | undefined };

export function overviewPage(r: StatusReport, actions?: OverviewActions, feeds: readonly PageFeed[] = [], boxes?: UrlBoxes): string {
  const now = Date.parse(r.generatedAt);
  const d = r.downloads;
  const failedJobs = r.queues.reduce((n, q) => n + q.failed, 0);
  const diskUsed = r.archive.totalBytes && r.archive.freeBytes !== null ? 1 - r.archive.freeBytes / r.archive.totalBytes : null;
  const refusedWrites = refusedWritesLine(r.database);
  const body = html`
<h1>Overview <span class="muted small">at ${formatTime(r.generatedAt)} · <a href="/">refresh</a></span></h1>
${actions?.notice ? html`<div class="notice" role="status">${actions.notice}</div>` : ""}
${actions ? actionsCard(actions.csrf, r) : ""}
${boxes ? html`<div class="grid2">${trackBox(boxes)}${addBox(boxes)}</div>` : ""}
${refusedWrites ? html`<div class="notice bad" role="alert">${refusedWrites}</div>` : ""}
${r.problems.length ? html`<div class="notice bad">Could not read: ${r.problems.join(" · ")}</div>` : ""}
${r.unreadable.count ? unreadableNotice(r.unreadable, now) : ""}
<div class="card"><div class="stats">
  <div class="stat"><b>${r.accounts.filter((a) => a.kind === "user").length}</b><span>accounts</span></div>
  <div class="stat"><b>${r.sources.length}</b><span>sync sources</span></div>
  <div class="stat"><b>${r.archive.files}</b><span>files archived</span></div>
  <div class="stat"><b>${formatBytes(r.archive.sizeBytes)}</b><span>archive size</span></div>
  <div class="stat"><b>${formatBytes(r.archive.freeBytes)}</b><span>free disk</span></div>
  <div class="stat"><b>${failedJobs}</b><span>failed jobs</span></div>
  <div class="stat"><b>${r.workers.length}</b><span>workers alive</span></div>
</div>${diskUsed !== null ? html`<div class="small muted" style="margin-top:12px">archive disk ${Math.round(diskUsed * 100)}% used</div><div class="bar"><i style="width:${Math.round(diskUsed * 100)}%"></i></div>` : ""}</div>

<div class="grid2">
<div class="card"><h2>Accounts</h2>
${r.accounts.length === 0 ? html`<p>No account yet: <a href="/connect">Connect DeviantArt</a> (or run <span class="fix">dvault auth login</span>).</p>` : ""}
<table class="cards">${r.accounts.map(
    (
      a,
    ) => html`<tr><td><b>${a.name}</b>${a.username && a.username !== a.name ? html` <span class="muted">(${a.username})</span>` : ""}<div class="small muted">${a.kind}${a.scopes.length ? ` · ${a.scopes.join(" ")}` : ""}</div></td>
<td>${pill(a.state.replace("_", " "), STATE_TONE[a.state] ?? "")}${a.stateReason && a.state !== "ok" ? html`<div class="small muted">${a.stateReason}</div>` : ""}${a.fix ? html`<div class="small">fix: <span class="fix">${a.fix}</span>${a.kind === "user" && a.needsReauth ? html` or <a href="/connect?account=${encodeURIComponent(a.name)}">reconnect in the browser</a>` : ""}</div>` : ""}</td>
<td class="small">token ${a.accessExpiresInS !== null && a.accessExpiresInS < 0 ? "expired" : "expires"} ${formatRelative(a.accessExpiresAt, now)}<div class="muted">refresh token ${a.refreshTokenAgeDays === null ? "none" : `${a.refreshTokenAgeDays} d old`}</div></td></tr>`,
  )}</table></div>

<div class="card"><h2>Downloads ${d.paused ? pill("paused", "warn") : ""}</h2>${d.pausedReason ? html`<p class="small">${d.pausedReason}</p>` : ""}
<table>${Object.entries(d.byStatus).map(([status, n]) => html`<tr><td>${status.replace("_", " ")}</td><td class="num">${n}</td></tr>`)}</table>
${d.deferredByQuota ? html`<p class="small">${d.deferredByQuota} deferred by the weekly quota, next window ${formatTime(d.nextWindowAt)} (${formatRelative(d.nextWindowAt, now)}).</p>` : ""}
${d.failedRetrying ? html`<p class="small">${d.failedRetrying} failed on a transient fault, retried on their own; next attempt ${formatTime(d.nextRetryAt)} (${formatRelative(d.nextRetryAt, now)}).</p>` : ""}
${d.waitingForLogin.rows ? html`<p class="small">${d.waitingForLogin.rows} wait for an account to log in again: not tried until then.</p>` : ""}
${(d.byStatus.failed ?? 0) - d.failedRetrying - d.waitingForLogin.failed > 0 ? html`<p class="small">${(d.byStatus.failed ?? 0) - d.failedRetrying - d.waitingForLogin.failed} failed for good (the service refused them): not retried.</p>` : ""}
${d.quota.map((q) => html`<div class="small">quota ${q.account}: ${q.used} of ${q.limit} this week${quotaServedLine(q) ? html`<div class="muted">${quotaServedLine(q)}</div>` : ""}${q.exhaustedReason ? html`<div class="muted">spent for this week: ${q.exhaustedReason}</div>` : ""}<div class="bar"><i style="width:${q.limit ? Math.min(100, Math.round((q.used / q.limit) * 100)) : 100}%"></i></div></div>`)}
</div>
</div>

<div class="card"><h2>Sync sources</h2>
${r.sources.length === 0 ? html`<p class="muted">No source has run yet.</p>` : ""}
<table class="cards"><thead><tr><th>account</th><th>source</th><th>last run</th><th>result</th><th>next run</th><th class="num">new</th><th class="num">changed</th><th class="num">removed</th><th>last full sweep</th><th>notes</th></tr></thead>
${r.sources.map(
  (
    s,
  ) => html`<tr><td data-label="account">${s.account}</td><td data-label="source">${s.source}${s.key ? html` <span class="muted">${s.key}</span>` : ""}</td><td data-label="last run">${formatRelative(s.lastRunAt, now)}</td>
<td data-label="result">${s.lastResult ? pill(s.lastResult, RESULT_TONE[s.lastResult] ?? "") : "—"}${s.inProgress ? html` ${pill("sweep unfinished")}` : ""}</td>
<td data-label="next run">${formatNext(s.nextRunAt, now)}${s.schedule ? ` (${s.schedule})` : ""}</td><td data-label="new" class="num">${s.items.new}</td><td data-label="changed" class="num">${s.items.changed}</td><td data-label="removed" class="num">${s.items.removed}</td>
<td data-label="last full sweep">${formatRelative(s.lastCompleteSweepAt, now)}</td>
<td data-label="notes" class="small">${s.unavailableReason ? html`<div>${s.unavailableReason}</div>` : ""}${s.lastError && s.lastResult !== "ok" ? html`<div class="muted">${s.lastError}</div>` : ""}${s.gaps.map((g) => html`<div>gap ${g.scope}: ${g.mirrored ?? "?"} of ${g.expected ?? "?"} (${g.reason})</div>`)}</td></tr>`,
)}</table></div>

<div class="grid2">
<div class="card"><h2>Queues</h2><table class="cards"><thead><tr><th>queue</th><th class="num">waiting</th><th class="num">active</th><th class="num">delayed</th><th class="num">failed</th><th>oldest waiting</th><th></th></tr></thead>
${r.queues.map(
  (q) =>
    html`<tr><td data-label="queue">${q.name}</td><td data-label="waiting" class="num">${q.waiting}</td><td data-label="active" class="num">${q.active}</td><td data-label="delayed" class="num">${q.delayed}</td><td data-label="failed" class="num">${q.failed ? html`<a href="/jobs?queue=${q.name}">${q.failed}</a>` : "0"}</td><td data-label="oldest waiting">${q.oldestWaitingS === null ? "—" : formatDuration(q.oldestWaitingS * 1000)}</td><td>${q.paused ? pill("paused", "warn") : ""}</td></tr>`,
)}</table></div>
<div class="card"><h2>Archive &amp; workers</h2>
<dl class="meta">${r.archive.storage === "s3" ? html`<dt>store</dt><dd>${r.archive.store}</dd>` : ""}<dt>${r.archive.storage === "s3" ? "working folder" : "directory"}</dt><dd>${r.archive.dir}${r.archive.exists ? "" : r.archive.files > 0 ? " (missing: is DVAULT_ARCHIVE_DIR right?)" : " (not created yet)"}</dd>
<dt>stored</dt><dd>${formatBytes(r.archive.sizeBytes)} in ${r.archive.files} files</dd>
<dt>disk</dt><dd>${formatBytes(r.archive.freeBytes)} free of ${formatBytes(r.archive.totalBytes)}</dd>
<dt>workers</dt><dd>${r.workers.length === 0 ? pill("none running", "bad") : r.workers.map((w) => html`<div>${w.id}${w.roles.length ? html` <span class="small muted">${w.roles.join(", ")}</span>` : ""} ${pill(w.ageS === null ? "alive" : `beat ${formatDuration(w.ageS * 1000)} ago`, "ok")}</div>`)}${r.missingRoles.map((role) => html`<div>${pill(`no worker runs ${role}`, "bad")}</div>`)}</dd></dl>
</div></div>
${r.notArchivable.total ? notArchivableCard(r.notArchivable) : ""}
${r.pacing.length ? pacingCard(r.pacing, now) : ""}`;
  return layout({ title: "Overview", nav: "overview", body, feeds });
}

/** What the archive lists but could not archive in full: per reason with why and what to do, then per artist. */
function notArchivableCard(v: StatusReport["notArchivable"]) {
  return html`<div class="card" id="not-archivable"><h2>Not archived in full <span class="muted small">${v.total} work${v.total === 1 ? "" : "s"}</span></h2>
<table class="cards"><thead><tr><th class="num">works</th><th>reason</th><th>what you can do</th></tr></thead>
${v.byReason.map((r) => html`<tr><td data-label="works" class="num">${r.count}</td><td data-label="reason"><b>${NOT_ARCHIVABLE_WORDS[r.reason].label}</b><div class="small muted">${r.why}</div></td><td data-label="what to do" class="small">${r.action}</td></tr>`)}</table>
<table class="cards"><thead><tr><th>artist</th><th>where</th><th>counts</th></tr></thead>
${v.byArtist.map((a) => html`<tr><td data-label="artist">${a.artist}</td><td data-label="where" class="small">${sourceInWords(a)}</td><td data-label="counts" class="small">${countsInWords(a.counts)}${shortfallInWords(a)}</td></tr>`)}</table></div>`;
}

/** The API pace per pacer key (src/api/pacer.ts): what it runs at, what it learned, what throttling cost. */
function pacingCard(pacing: StatusReport["pacing"], now: number) {
  return html`<div class="card"><h2>API pace</h2><table class="cards"><thead><tr><th>key</th><th class="num">rate</th><th class="num">learned</th><th class="num">last refused at</th><th class="num">lost to throttling</th><th>held</th></tr></thead>
${pacing.map(
  (p) =>
    html`<tr><td data-label="key">${p.key}</td><td data-label="rate" class="num">${formatRate(p.rate)}</td><td data-label="learned" class="num">${formatRate(p.learnedRate)}</td><td data-label="last refused at" class="num">${formatRate(p.refusedRate)}</td><td data-label="lost to throttling" class="num">${formatDuration(p.throttledS * 1000)}</td><td data-label="held">${p.heldUntil ? pill(`until ${formatTime(p.heldUntil)} (${formatRelative(p.heldUntil, now)})`, "warn") : "—"}</td></tr>`,
)}</table></div>`;
}

/** "Sync now", "Download now" and the running work, which app.js refreshes from /api/activity. */
function actionsCard(csrf: string, r: StatusReport): SafeHtml {
  const busy = r.queues.filter((q) => q.waiting + q.active > 0);
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  const lastSync = r.sources
    .map((s) => s.lastRunAt)
    .filter((t): t is string => !!t)
    .sort()
    .at(-1);
  return html`<div class="card actions">
<form method="post" action="/actions/sync">${hidden}<button type="submit">Sync now</button></form>
<form method="post" action="/actions/download">${hidden}<button type="submit" class="ghost">Download now</button></form>
<div class="activity" data-activity="/api/activity" aria-live="polite"><span data-state class="${busy.length ? "busy" : "idle"}">${activitySummary(busy)}</span>
<div class="small muted" data-last="${lastSync ?? ""}">${lastSync ? `last sync finished ${formatTime(lastSync)}` : "no sync has run yet"}</div></div>
${actionsWaiting(r)}
</div>`;
}

/** The roles a button's work needs: "Download now" is a maintenance job that hands the due files to the downloads queue. */
const ROLES_OF_ACTION = { sync: ["sync"], download: ["maintenance", "downloads"] } as const;

/**
 * What the work a button queues waits for, or undefined when a live worker takes it: no worker at all, or none with
 * the role (a dashboard on an http-only host, src/status/redis-state.ts missingRoles).
 */
export function waitingFor(action: keyof typeof ROLES_OF_ACTION, workers: number, missing: readonly string[]): string | undefined {
  if (workers === 0) return "no worker is running, so nothing runs until one starts (dvault worker)";
  const roles = ROLES_OF_ACTION[action].filter((role) => missing.includes(role));
  if (roles.length === 0) return undefined;
  const named = roles.join(" and ");
  return `no running worker has the ${named} role${roles.length === 1 ? "" : "s"}, so nothing runs until one starts whose DVAULT_WORKER_ROLES includes ${named}`;
}

function actionsWaiting(r: StatusReport): SafeHtml | string {
  if (r.workers.length === 0) return html`<div class="small muted">No worker is running: queued work waits until one starts (dvault worker).</div>`;
  const lines = (["sync", "download"] as const).flatMap((action) => {
    const wait = waitingFor(action, r.workers.length, r.missingRoles);
    return wait ? [html`<div class="small muted">${action === "sync" ? "Sync now" : "Download now"}: ${wait}.</div>`] : [];
  });
  return html`${lines}`;
}

/** "running: sync 1 active, 3 waiting" or "nothing running"; the JSON endpoint says the same. */
export function activitySummary(queues: ReadonlyArray<{ name: string; waiting: number; active: number }>): string {
  const busy = queues.filter((q) => q.waiting + q.active > 0);
  if (busy.length === 0) return "nothing running";
  return `running: ${busy.map((q) => `${q.name} ${q.active} active, ${q.waiting} waiting`).join("; ")}`;
}

/** Answers of the service skipped as unreadable (docs/service-behaviour.md#tolerant-reading): kept, counted, listed. */
function unreadableNotice(u: StatusReport["unreadable"], now: number) {
  return html`<div class="notice warn"><b>${u.count} answer${u.count === 1 ? "" : "s"} of the service could not be read</b> in the last 30 days and
${u.count === 1 ? "was" : "were"} skipped (last ${formatRelative(u.lastSeenAt, now)}); each is kept with its raw JSON in the
<code>unreadable_responses</code> table, and everything else was archived.
<ul class="small">${u.recent.map((x) => html`<li>${x.operation} ${x.subject || "(response)"}: ${x.error}${x.count > 1 ? ` (${x.count} times)` : ""}</li>`)}</ul></div>`;
}
