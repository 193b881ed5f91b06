// The dashboard's pages, rendered on the server with html`` (escaped by default), one inline stylesheet
// and no script: overview, archive browser, search results, item, failed jobs.
import type { FilterChoices, ItemCard, ItemDetail, StoredFileRef } from "../db/archive-browser.repository.ts";
import type { FailedJob } from "../queue/queue-admin.ts";
import { HIGHLIGHT_END, HIGHLIGHT_START, type SearchHit } from "../search/search.ts";
import type { StatusReport } from "../status/schema.ts";
import { formatDuration, formatNext, formatRate, formatRelative, formatTime } from "../status/units.ts";
import { formatBytes } from "../text/bytes.ts";
import { html, raw, type SafeHtml } from "../text/html.ts";
import { htmlToText } from "../text/html-to-text.ts";

export type NavKey = "overview" | "archive" | "jobs";

const STYLE = `
:root{--bg:#f5f6f8;--card:#fff;--ink:#1d2330;--muted:#667085;--line:#e4e7ec;--accent:#0f766e;--accent-soft:#e6f4f1;--warn:#b54708;--warn-soft:#fef0c7;--bad:#b42318;--bad-soft:#fee4e2;--ok:#067647;--ok-soft:#dcfae6}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Ubuntu,sans-serif;background:var(--bg);color:var(--ink)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
header{background:#111827;color:#fff;padding:0 24px;display:flex;align-items:center;gap:28px;height:52px}
header .brand{font-weight:700;font-size:16px;letter-spacing:.3px;color:#fff}
header .brand span{color:#5eead4}
header nav{display:flex;gap:4px;flex:1}
header nav a{color:#cbd5e1;padding:6px 12px;border-radius:6px}
header nav a:hover{background:#1f2937;text-decoration:none;color:#fff}
header nav a.on{background:#374151;color:#fff}
header form{display:flex}
header input{background:#1f2937;border:1px solid #374151;color:#fff;border-radius:6px;padding:6px 10px;width:240px}
main{max-width:1280px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 16px}h2{font-size:15px;margin:0 0 12px;color:#344054;text-transform:uppercase;letter-spacing:.6px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:16px;margin-bottom:16px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;margin-bottom:16px;overflow-x:auto}
.grid2 .card{margin-bottom:0}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-size:12px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.4px}
tr:last-child td{border-bottom:0}
.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:var(--muted)}.small{font-size:12px}
.pill{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;background:var(--line);color:#344054;white-space:nowrap}
.pill.ok{background:var(--ok-soft);color:var(--ok)}.pill.warn{background:var(--warn-soft);color:var(--warn)}.pill.bad{background:var(--bad-soft);color:var(--bad)}
.stats{display:flex;gap:28px;flex-wrap:wrap}.stat b{display:block;font-size:22px;font-variant-numeric:tabular-nums}.stat span{color:var(--muted);font-size:12px}
.bar{height:8px;background:var(--line);border-radius:4px;overflow:hidden;margin-top:6px}.bar i{display:block;height:100%;background:var(--accent)}
.fix{font-family:ui-monospace,Menlo,Consolas,monospace;background:#f2f4f7;padding:2px 6px;border-radius:4px}
.filters{display:flex;gap:10px;flex-wrap:wrap;align-items:end;margin-bottom:16px}
.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted);gap:4px}
.filters label.check{flex-direction:row;align-items:center;height:34px;font-size:13px;color:var(--ink)}
select,input[type=search],input[type=text]{font:inherit;padding:6px 8px;border:1px solid var(--line);border-radius:6px;background:#fff;min-width:180px}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
button.ghost{background:#fff;color:var(--accent)}button.danger{border-color:var(--bad);background:#fff;color:var(--bad)}
.thumbs{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:14px}
.thumb{background:var(--card);border:1px solid var(--line);border-radius:10px;overflow:hidden;display:block;color:inherit}
.thumb:hover{box-shadow:0 4px 14px rgba(16,24,40,.12);text-decoration:none}
.thumb .img{aspect-ratio:1/1;background:#eef0f3;display:flex;align-items:center;justify-content:center;overflow:hidden}
.thumb img{width:100%;height:100%;object-fit:cover;display:block}
.thumb .cap{padding:8px 10px}.thumb .t{font-weight:600;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.thumb .a{font-size:12px;color:var(--muted);white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.item{display:grid;grid-template-columns:minmax(0,3fr) minmax(280px,2fr);gap:20px;align-items:start}
.item .original{background:#0b0f17;border-radius:10px;display:flex;align-items:center;justify-content:center;min-height:320px;overflow:hidden}
.item .original img{max-width:100%;max-height:72vh;display:block}
dl.meta{display:grid;grid-template-columns:auto 1fr;gap:6px 14px;margin:0}dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-word}
.tags{display:flex;gap:6px;flex-wrap:wrap}.tag{background:var(--accent-soft);color:var(--accent);border-radius:999px;padding:2px 10px;font-size:12px}
.text{white-space:pre-wrap;word-break:break-word}.path{word-break:break-all}
.hit{display:grid;grid-template-columns:72px 1fr;gap:14px;padding:12px 0;border-bottom:1px solid var(--line)}.hit:last-child{border-bottom:0}
.hit .img{width:72px;height:72px;border-radius:8px;overflow:hidden;background:#eef0f3}.hit .img img{width:100%;height:100%;object-fit:cover}
.hit mark{background:#fef08a;padding:0 1px;border-radius:2px}
.pager{display:flex;gap:10px;justify-content:center;margin-top:18px}
.notice{padding:10px 14px;border-radius:8px;background:var(--accent-soft);color:var(--accent);margin-bottom:16px}
.notice.bad{background:var(--bad-soft);color:var(--bad)}
.notice.warn{background:var(--warn-soft);color:var(--warn)}
form.inline{display:inline}
`;

export function layout({ title, nav, body, query = "" }: { title: string; nav?: NavKey; body: SafeHtml; query?: string }): string {
  const link = (key: NavKey, href: string, label: string) => html`<a href="${href}" class="${nav === key ? "on" : ""}">${label}</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · dvault</title><style>${raw(STYLE)}</style></head>
<body><header><a class="brand" href="/">d<span>vault</span></a>
<nav>${link("overview", "/", "Overview")}${link("archive", "/archive", "Archive")}${link("jobs", "/jobs", "Failed jobs")}<a href="/queues">Queues</a><a href="/metrics">Metrics</a></nav>
<form action="/archive" method="get" role="search"><input type="search" name="q" value="${query}" placeholder="Search the archive…" aria-label="Search the archive"></form>
</header><main>${body}</main></body></html>`.text;
}

function pill(text: string, tone: "ok" | "warn" | "bad" | "" = ""): SafeHtml {
  return html`<span class="pill ${tone}">${text}</span>`;
}

const RESULT_TONE: Record<string, "ok" | "warn" | "bad" | ""> = { ok: "ok", degraded: "warn", incomplete: "warn", skipped: "warn", failed: "bad" };
const STATE_TONE: Record<string, "ok" | "warn" | "bad"> = { ok: "ok", expiring: "warn", needs_reauth: "bad", revoked: "bad" };

// ---- overview ---------------------------------------------------------------------------------------

export function overviewPage(r: StatusReport): string {
  const now = Date.parse(r.generatedAt);
  const d = r.downloads;
  const stored = (d.byStatus.done ?? 0) + (d.byStatus.degraded ?? 0);
  const failedJobs = r.queues.reduce((n, q) => n + q.failed, 0);
  const diskUsed = r.archive.totalBytes && r.archive.freeBytes !== null ? 1 - r.archive.freeBytes / r.archive.totalBytes : null;
  const body = html`
<h1>Overview <span class="muted small">at ${formatTime(r.generatedAt)} · <a href="/">refresh</a></span></h1>
${r.problems.length ? html`<div class="notice bad">Could not read: ${r.problems.join(" · ")}</div>` : ""}
${r.unreadable.count ? unreadableNotice(r.unreadable, now) : ""}
<div class="card"><div class="stats">
  <div class="stat"><b>${r.accounts.filter((a) => a.kind === "user").length}</b><span>accounts</span></div>
  <div class="stat"><b>${r.sources.length}</b><span>sync sources</span></div>
  <div class="stat"><b>${stored}</b><span>files archived</span></div>
  <div class="stat"><b>${formatBytes(r.archive.sizeBytes)}</b><span>archive size</span></div>
  <div class="stat"><b>${formatBytes(r.archive.freeBytes)}</b><span>free disk</span></div>
  <div class="stat"><b>${failedJobs}</b><span>failed jobs</span></div>
  <div class="stat"><b>${r.workers.length}</b><span>workers alive</span></div>
</div>${diskUsed !== null ? html`<div class="small muted" style="margin-top:12px">archive disk ${Math.round(diskUsed * 100)}% used</div><div class="bar"><i style="width:${Math.round(diskUsed * 100)}%"></i></div>` : ""}</div>

<div class="grid2">
<div class="card"><h2>Accounts</h2>
${r.accounts.length === 0 ? html`<p class="muted">No account yet: run <span class="fix">dvault auth login</span>.</p>` : ""}
<table>${r.accounts.map(
    (
      a,
    ) => html`<tr><td><b>${a.name}</b>${a.username && a.username !== a.name ? html` <span class="muted">(${a.username})</span>` : ""}<div class="small muted">${a.kind}${a.scopes.length ? ` · ${a.scopes.join(" ")}` : ""}</div></td>
<td>${pill(a.state.replace("_", " "), STATE_TONE[a.state] ?? "")}${a.stateReason && a.state !== "ok" ? html`<div class="small muted">${a.stateReason}</div>` : ""}${a.fix ? html`<div class="small">fix: <span class="fix">${a.fix}</span></div>` : ""}</td>
<td class="small">token ${a.accessExpiresInS !== null && a.accessExpiresInS < 0 ? "expired" : "expires"} ${formatRelative(a.accessExpiresAt, now)}<div class="muted">refresh token ${a.refreshTokenAgeDays === null ? "none" : `${a.refreshTokenAgeDays} d old`}</div></td></tr>`,
  )}</table></div>

<div class="card"><h2>Downloads ${d.paused ? pill("paused", "warn") : ""}</h2>${d.pausedReason ? html`<p class="small">${d.pausedReason}</p>` : ""}
<table>${Object.entries(d.byStatus).map(([status, n]) => html`<tr><td>${status.replace("_", " ")}</td><td class="num">${n}</td></tr>`)}</table>
${d.deferredByQuota ? html`<p class="small">${d.deferredByQuota} deferred by the weekly quota, next window ${formatTime(d.nextWindowAt)} (${formatRelative(d.nextWindowAt, now)}).</p>` : ""}
${d.failedRetrying ? html`<p class="small">${d.failedRetrying} failed on a transient fault, retried on their own; next attempt ${formatTime(d.nextRetryAt)} (${formatRelative(d.nextRetryAt, now)}).</p>` : ""}
${d.waitingForLogin.rows ? html`<p class="small">${d.waitingForLogin.rows} wait for an account to log in again: not tried until then.</p>` : ""}
${(d.byStatus.failed ?? 0) - d.failedRetrying - d.waitingForLogin.failed > 0 ? html`<p class="small">${(d.byStatus.failed ?? 0) - d.failedRetrying - d.waitingForLogin.failed} failed for good (the service refused them): not retried.</p>` : ""}
${d.quota.map((q) => html`<div class="small">quota ${q.account}: ${q.used} of ${q.limit} this week${q.exhaustedReason ? html`<div class="muted">spent for this week: ${q.exhaustedReason}</div>` : ""}<div class="bar"><i style="width:${q.limit ? Math.min(100, Math.round((q.used / q.limit) * 100)) : 100}%"></i></div></div>`)}
</div>
</div>

<div class="card"><h2>Sync sources</h2>
${r.sources.length === 0 ? html`<p class="muted">No source has run yet.</p>` : ""}
<table><tr><th>account</th><th>source</th><th>last run</th><th>result</th><th>next run</th><th class="num">new</th><th class="num">changed</th><th class="num">removed</th><th>last full sweep</th><th>notes</th></tr>
${r.sources.map(
  (
    s,
  ) => html`<tr><td>${s.account}</td><td>${s.source}${s.key ? html` <span class="muted">${s.key}</span>` : ""}</td><td>${formatRelative(s.lastRunAt, now)}</td>
<td>${s.lastResult ? pill(s.lastResult, RESULT_TONE[s.lastResult] ?? "") : "—"}${s.inProgress ? html` ${pill("sweep unfinished")}` : ""}</td>
<td>${formatNext(s.nextRunAt, now)}</td><td class="num">${s.items.new}</td><td class="num">${s.items.changed}</td><td class="num">${s.items.removed}</td>
<td>${formatRelative(s.lastCompleteSweepAt, now)}</td>
<td class="small">${s.unavailableReason ? html`<div>${s.unavailableReason}</div>` : ""}${s.lastError && s.lastResult !== "ok" ? html`<div class="muted">${s.lastError}</div>` : ""}${s.gaps.map((g) => html`<div>gap ${g.scope}: ${g.mirrored ?? "?"} of ${g.expected ?? "?"} (${g.reason})</div>`)}</td></tr>`,
)}</table></div>

<div class="grid2">
<div class="card"><h2>Queues</h2><table><tr><th>queue</th><th class="num">waiting</th><th class="num">active</th><th class="num">delayed</th><th class="num">failed</th><th>oldest waiting</th><th></th></tr>
${r.queues.map(
  (q) =>
    html`<tr><td>${q.name}</td><td class="num">${q.waiting}</td><td class="num">${q.active}</td><td class="num">${q.delayed}</td><td class="num">${q.failed ? html`<a href="/jobs?queue=${q.name}">${q.failed}</a>` : "0"}</td><td>${q.oldestWaitingS === null ? "—" : formatDuration(q.oldestWaitingS * 1000)}</td><td>${q.paused ? pill("paused", "warn") : ""}</td></tr>`,
)}</table></div>
<div class="card"><h2>Archive &amp; workers</h2>
<dl class="meta"><dt>directory</dt><dd>${r.archive.dir}${r.archive.exists ? "" : " (not created yet)"}</dd>
<dt>stored</dt><dd>${formatBytes(r.archive.sizeBytes)} in ${r.archive.files} files</dd>
<dt>disk</dt><dd>${formatBytes(r.archive.freeBytes)} free of ${formatBytes(r.archive.totalBytes)}</dd>
<dt>workers</dt><dd>${r.workers.length === 0 ? pill("none running", "bad") : r.workers.map((w) => html`<div>${w.id} ${pill(w.ageS === null ? "alive" : `beat ${formatDuration(w.ageS * 1000)} ago`, "ok")}</div>`)}</dd></dl>
</div></div>
${r.pacing.length ? pacingCard(r.pacing, now) : ""}`;
  return layout({ title: "Overview", nav: "overview", body });
}

/** The API pace per pacer key (src/api/pacer.ts): what it runs at, what it learned, what throttling cost. */
function pacingCard(pacing: StatusReport["pacing"], now: number) {
  return html`<div class="card"><h2>API pace</h2><table><tr><th>key</th><th class="num">rate</th><th class="num">learned</th><th class="num">last refused at</th><th class="num">lost to throttling</th><th>held</th></tr>
${pacing.map(
  (p) =>
    html`<tr><td>${p.key}</td><td class="num">${formatRate(p.rate)}</td><td class="num">${formatRate(p.learnedRate)}</td><td class="num">${formatRate(p.refusedRate)}</td><td class="num">${formatDuration(p.throttledS * 1000)}</td><td>${p.heldUntil ? pill(`until ${formatTime(p.heldUntil)} (${formatRelative(p.heldUntil, now)})`, "warn") : "—"}</td></tr>`,
)}</table></div>`;
}

/** Answers of the service skipped as unreadable (docs/service-behaviour.md#tolerant-reading): kept, counted, listed. */
function unreadableNotice(u: StatusReport["unreadable"], now: number) {
  return html`<div class="notice warn"><b>${u.count} answer${u.count === 1 ? "" : "s"} of the service could not be read</b> in the last 30 days and
${u.count === 1 ? "was" : "were"} skipped (last ${formatRelative(u.lastSeenAt, now)}); each is kept with its raw JSON in the
<code>unreadable_responses</code> table, and everything else was archived.
<ul class="small">${u.recent.map((x) => html`<li>${x.operation} ${x.subject || "(response)"}: ${x.error}${x.count > 1 ? ` (${x.count} times)` : ""}</li>`)}</ul></div>`;
}

// ---- archive ----------------------------------------------------------------------------------------

export type ArchiveView = {
  filter: { artist?: string | undefined; folder?: string | undefined; collection?: string | undefined; archived: boolean };
  choices: FilterChoices;
  items: ItemCard[];
  page: number;
  hasMore: boolean;
};

/** The picture of an item: its archived image, else a placeholder (a page for journals and literature). */
function fileUrl(file: StoredFileRef | null | undefined, type?: string | null): string {
  if (file && isImage(file)) return `/files/${file.downloadId}`;
  return type === "journal" || type === "literature" ? "/static/text.svg" : "/static/placeholder.svg";
}

function isImage(file: StoredFileRef): boolean {
  return file.mime ? file.mime.startsWith("image/") : /\.(jpe?g|png|gif|webp|avif|bmp)$/i.test(file.path);
}

function title(t: string | null | undefined): string {
  const s = (t ?? "").trim();
  return s || "(untitled)";
}

function queryString(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "" && v !== false) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

export function archivePage(v: ArchiveView): string {
  const f = v.filter;
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}" ${selected ? raw("selected") : ""}>${label}</option>`;
  const base = { artist: f.artist, folder: f.folder, collection: f.collection, archived: f.archived };
  const body = html`
<h1>Archive</h1>
<form class="filters" method="get" action="/archive">
  <label>Search<input type="search" name="q" placeholder="words, tags, text…"></label>
  <label>Artist<select name="artist">${option("", "all artists", !f.artist)}${v.choices.artists.map((a) => option(a.username, `${a.username} (${a.items})`, a.username.toLowerCase() === f.artist?.toLowerCase()))}</select></label>
  <label>Gallery folder<select name="folder">${option("", "any folder", !f.folder)}${v.choices.galleries.map((g) => option(g.folderid, `${g.owner ?? "?"} / ${g.name} (${g.size})`, g.folderid === f.folder))}</select></label>
  <label>Collection<select name="collection">${option("", "any collection", !f.collection)}${v.choices.collections.map((c) => option(c.folderid, `${c.owner ?? "?"} / ${c.name} (${c.size})`, c.folderid === f.collection))}</select></label>
  <label class="check"><input type="checkbox" name="archived" value="1" ${f.archived ? raw("checked") : ""}> archived only</label>
  <button type="submit">Apply</button>
</form>
${v.items.length === 0 ? html`<div class="card muted">Nothing matches these filters.</div>` : ""}
<div class="thumbs">${v.items.map(
    (it) => html`<a class="thumb" href="/item/${encodeURIComponent(it.deviationid)}" title="${title(it.title)}">
<div class="img"><img loading="lazy" src="${fileUrl(it.file, it.type)}" alt="${title(it.title)}"></div>
<div class="cap"><div class="t">${title(it.title)}</div><div class="a">${it.artist ?? "unknown artist"}${it.publishedAt ? ` · ${it.publishedAt.toISOString().slice(0, 10)}` : ""}${it.file || it.type === "journal" || it.type === "literature" ? "" : " · not archived"}</div></div></a>`,
  )}</div>
<div class="pager">${v.page > 1 ? html`<a href="/archive${queryString({ ...base, page: v.page - 1 })}">← newer</a>` : ""}
${v.hasMore ? html`<a href="/archive${queryString({ ...base, page: v.page + 1 })}">older →</a>` : ""}</div>`;
  return layout({ title: "Archive", nav: "archive", body });
}

/** A snippet with its highlight markers turned into <mark>, everything else escaped. */
function snippetHtml(snippet: string): SafeHtml {
  const parts = snippet.split(new RegExp(`(${HIGHLIGHT_START}[^${HIGHLIGHT_END}]*${HIGHLIGHT_END})`));
  return html`${parts.map((p) => (p.startsWith(HIGHLIGHT_START) ? html`<mark>${p.slice(1, -1)}</mark>` : p))}`;
}

export function searchPage({
  query,
  type,
  hits,
  files,
}: {
  query: string;
  type?: string | undefined;
  hits: SearchHit[];
  files: Map<string, StoredFileRef>;
}): string {
  const kinds = ["deviation", "journal", "literature", "comment", "note", "message"];
  const body = html`
<h1>Search</h1>
<form class="filters" method="get" action="/archive">
  <label>Words<input type="search" name="q" value="${query}"></label>
  <label>Kind<select name="type"><option value="">everything</option>${kinds.map((k) => html`<option value="${k}" ${k === type ? raw("selected") : ""}>${k}</option>`)}</select></label>
  <button type="submit">Search</button>
</form>
<div class="card"><p class="muted small">${hits.length} result${hits.length === 1 ? "" : "s"} for “${query}”</p>
${hits.map((h) => {
  const file = h.deviationid ? files.get(h.deviationid) : undefined;
  const href = h.deviationid ? `/item/${encodeURIComponent(h.deviationid)}` : undefined;
  const type = h.kind === "journal" || h.kind === "literature" ? h.kind : undefined;
  return html`<div class="hit"><div class="img">${h.deviationid ? html`<img loading="lazy" src="${fileUrl(file, type)}" alt="">` : ""}</div>
<div><div>${pill(h.kind)} ${href ? html`<a href="${href}"><b>${title(h.title)}</b></a>` : html`<b>${title(h.title)}</b>`}
<span class="muted small">${h.artist ? `by ${h.artist}` : ""}${h.date ? ` · ${h.date.slice(0, 10)}` : ""}</span></div>
<div class="small">${snippetHtml(h.snippet)}</div>
${h.localPath ? html`<div class="small muted">archived: ${h.localPath}</div>` : ""}</div></div>`;
})}</div>`;
  return layout({ title: `Search: ${query}`, nav: "archive", body, query });
}

// ---- item -------------------------------------------------------------------------------------------

function historyValue(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return htmlToText(v);
  if (Array.isArray(v)) return v.join(", ");
  return JSON.stringify(v);
}

export function itemPage(item: ItemDetail): string {
  const original = item.files[0];
  const text = htmlToText(item.text ?? item.excerpt);
  const body = html`
<h1>${title(item.title)}</h1>
<div class="item">
<div>
  <div class="original">${original && isImage(original) ? html`<a href="/files/${original.downloadId}"><img src="/files/${original.downloadId}" alt="${title(item.title)}"></a>` : html`<img src="${fileUrl(null, item.type)}" alt="not archived" style="width:260px">`}</div>
  ${text ? html`<div class="card" style="margin-top:16px"><h2>${item.type === "literature" ? "Text" : "Journal"}</h2><div class="text">${text}</div></div>` : ""}
  <div class="card" style="margin-top:16px"><h2>History of changes</h2>
  ${item.history.length === 0 ? html`<p class="muted">No edits seen since dvault first archived it (${formatTime(item.firstSeenAt.toISOString())}).</p>` : ""}
  <table>${item.history.map((h) => html`<tr><td class="small">${formatTime(h.changedAt.toISOString())}</td><td>${h.field}</td><td><div class="small muted">before</div><div class="text">${historyValue(h.oldValue)}</div><div class="small muted">after</div><div class="text">${historyValue(h.newValue)}</div></td></tr>`)}</table>
  </div>
</div>
<div>
  <div class="card"><h2>Metadata</h2><dl class="meta">
    <dt>artist</dt><dd>${item.artist ? html`<a href="/archive?artist=${encodeURIComponent(item.artist)}">${item.artist}</a>` : "unknown"}</dd>
    <dt>type</dt><dd>${item.type ?? "—"}${item.isMature ? html` ${pill("mature", "warn")}` : ""}</dd>
    <dt>published</dt><dd>${formatTime(item.publishedAt?.toISOString())}</dd>
    <dt>first seen</dt><dd>${formatTime(item.firstSeenAt.toISOString())}</dd>
    <dt>last seen</dt><dd>${formatTime(item.lastSeenAt.toISOString())}</dd>
    ${item.removedAt ? html`<dt>removed</dt><dd>${pill(item.removedReason ?? "removed", "bad")} ${formatTime(item.removedAt.toISOString())}</dd>` : ""}
    <dt>favourites</dt><dd>${item.favourites ?? "—"}</dd>
    <dt>comments</dt><dd>${item.comments ?? "—"}</dd>
    <dt>license</dt><dd>${item.license ?? "—"}</dd>
    <dt>on the service</dt><dd>${item.url ? html`<a href="${safeUrl(item.url)}" rel="noopener noreferrer">${item.url}</a>` : "—"}</dd>
    <dt>id</dt><dd class="small">${item.deviationid}</dd>
  </dl></div>
  <div class="card"><h2>Tags</h2>${item.tags.length ? html`<div class="tags">${item.tags.map((t) => html`<span class="tag">#${t}</span>`)}</div>` : html`<span class="muted">none</span>`}</div>
  <div class="card"><h2>Description</h2>${item.description ? html`<div class="text">${htmlToText(item.description)}</div>` : html`<span class="muted">none</span>`}</div>
  <div class="card"><h2>Local files</h2>
  ${item.files.length === 0 && item.pending.length === 0 ? html`<span class="muted">not archived</span>` : ""}
  ${item.files.map((f) => html`<div><a href="/files/${f.downloadId}">${f.kind} (${f.status})</a> <span class="muted small">${formatBytes(f.size)}${f.width && f.height ? ` · ${f.width}×${f.height}` : ""}</span><div class="small muted path">${f.path}</div></div>`)}
  ${item.pending.map((p) => html`<div class="small">${p.kind}: ${pill(p.status.replace("_", " "), p.status === "failed" ? "bad" : "warn")} ${p.reason ?? ""} ${p.lastError ?? ""}</div>`)}
  </div>
  ${item.folders.length ? html`<div class="card"><h2>In folders</h2>${item.folders.map((f) => html`<div><a href="/archive?${f.kind === "gallery" ? "folder" : "collection"}=${encodeURIComponent(f.folderid)}">${f.owner ?? "?"} / ${f.name ?? "(unnamed)"}</a> <span class="muted small">${f.kind}</span></div>`)}</div>` : ""}
</div></div>`;
  return layout({ title: title(item.title), nav: "archive", body });
}

/** Only http(s) links from the service become hrefs. */
function safeUrl(url: string): string {
  return /^https?:\/\//i.test(url) ? url : "#";
}

// ---- failed jobs ------------------------------------------------------------------------------------

export function jobsPage({
  failed,
  queues,
  csrf,
  notice,
  queue,
}: {
  failed: FailedJob[];
  queues: StatusReport["queues"];
  csrf: string;
  notice?: string | undefined;
  queue?: string | undefined;
}): string {
  const now = Date.now();
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  const body = html`
<h1>Failed jobs</h1>
${notice ? html`<div class="notice">${notice}</div>` : ""}
<div class="card"><h2>Queues</h2><table><tr><th>queue</th><th class="num">waiting</th><th class="num">active</th><th class="num">delayed</th><th class="num">failed</th><th></th></tr>
${queues.map(
  (
    q,
  ) => html`<tr><td><a href="/jobs?queue=${q.name}">${q.name}</a> ${q.paused ? pill("paused", "warn") : ""}</td><td class="num">${q.waiting}</td><td class="num">${q.active}</td><td class="num">${q.delayed}</td><td class="num">${q.failed}</td>
<td><form class="inline" method="post" action="/jobs/${q.paused ? "resume" : "pause"}">${hidden}<input type="hidden" name="queue" value="${q.name}"><button class="ghost" type="submit">${q.paused ? "Resume" : "Pause"}</button></form>
${q.failed ? html` <form class="inline" method="post" action="/jobs/retry-all">${hidden}<input type="hidden" name="queue" value="${q.name}"><button class="ghost" type="submit">Retry all ${q.failed}</button></form>` : ""}</td></tr>`,
)}</table></div>
<div class="card"><h2>${queue ? `Failed in ${queue}` : "Failed"} (${failed.length})</h2>
${failed.length === 0 ? html`<p class="muted">Nothing failed. 🎉</p>` : ""}
<table>${failed.length ? html`<tr><th>job</th><th>payload</th><th>reason</th><th>attempts</th><th>failed</th><th></th></tr>` : ""}
${failed.map(
  (j) => html`<tr><td><b>${j.name}</b><div class="small muted">${j.queue}/${j.id}</div></td>
<td class="small">${Object.entries(j.data).map(([k, v]) => html`<div>${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}</div>`)}</td>
<td class="small" style="max-width:420px">${j.reason || "(no reason recorded)"}</td>
<td class="num">${j.attemptsMade}/${j.attempts}</td>
<td class="small">${formatRelative(j.failedAt, now)}<div class="muted">created ${formatRelative(j.createdAt, now)}</div></td>
<td><form method="post" action="/jobs/retry">${hidden}<input type="hidden" name="queue" value="${j.queue}"><input type="hidden" name="id" value="${j.id}"><button type="submit">Retry</button></form></td></tr>`,
)}</table></div>`;
  return layout({ title: "Failed jobs", nav: "jobs", body });
}

export function messagePage(status: number, heading: string, text: string): string {
  return layout({ title: heading, body: html`<div class="card"><h1>${heading}</h1><p>${text}</p><p class="muted small">HTTP ${status}</p></div>` });
}

export const TEXT_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<rect width="400" height="400" fill="#f3f1ea"/>
<rect x="105" y="80" width="190" height="240" rx="10" fill="#fff" stroke="#d6d0bf" stroke-width="4"/>
<g stroke="#b9b19a" stroke-width="9" stroke-linecap="round"><path d="M135 130h130M135 160h130M135 190h100M135 220h130M135 250h80"/></g>
<text x="200" y="360" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22" fill="#857c64">text</text></svg>`;

export const PLACEHOLDER_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
<rect width="400" height="400" fill="#eef0f3"/>
<g fill="none" stroke="#98a2b3" stroke-width="10" stroke-linejoin="round"><rect x="110" y="120" width="180" height="150" rx="14"/><path d="M120 250l50-55 40 40 30-25 50 45"/></g>
<circle cx="245" cy="165" r="14" fill="#98a2b3"/>
<text x="200" y="320" text-anchor="middle" font-family="system-ui,sans-serif" font-size="22" fill="#667085">not archived yet</text></svg>`;
