// An item's page: the picture (the medium thumbnail, linked to the original), previous/next in the grid's order
// (under the filter it was opened with), a summary the lightbox shows too (data-info: title, artist, date,
// folders, tags, what was archived and why), text, history, metadata and every file stored for it.
import type { ItemDetail } from "../../db/archive-browser.repository.ts";
import { formatTime } from "../../status/units.ts";
import { formatBytes } from "../../text/bytes.ts";
import { html, type SafeHtml } from "../../text/html.ts";
import { htmlToText } from "../../text/html-to-text.ts";
import { doneNotice } from "./track.ts";
import { fileKind, thumbUrl } from "./files.ts";
import { layout, pill, title } from "./layout.ts";

function historyValue(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return htmlToText(v);
  if (Array.isArray(v)) return v.join(", ");
  return JSON.stringify(v);
}

/** A neighbour in the grid's order, linked with the filter the item came with. */
export type ItemLink = { href: string; title: string | null };
export type ItemNav = { prev?: ItemLink | undefined; next?: ItemLink | undefined; back?: string | undefined };

/** What was archived of an item and why not more, in one line. */
function archivedLine(item: ItemDetail): SafeHtml {
  const best = item.files[0];
  if (best) {
    const k = fileKind(best);
    return html`${k.label}${best.mime ? ` (${best.mime.replace(/^\w+\//, "").toUpperCase()}, ${formatBytes(best.size)})` : ""}${k.why ? html` — ${k.why}` : ""}`;
  }
  const p = item.pending[0];
  if (p) return html`not archived: ${p.kind} ${p.status.replace("_", " ")}${p.reason ? ` — ${p.reason}` : ""}`;
  return html`not archived${item.type === "journal" || item.type === "literature" ? "" : " yet"}`;
}

/** The item's summary: the page shows it, and the lightbox adopts it (app.js reads [data-info] from this page). */
function infoHtml(item: ItemDetail): SafeHtml {
  const original = item.files[0];
  return html`<section class="card info" data-info aria-label="About this item"><h2><a href="/item/${encodeURIComponent(item.deviationid)}">${title(item.title)}</a></h2>
<dl class="meta"><dt>artist</dt><dd>${item.artist ? html`<a href="/artists/${encodeURIComponent(item.artist)}">${item.artist}</a>` : "unknown"}</dd>
<dt>date</dt><dd>${item.publishedAt ? item.publishedAt.toISOString().slice(0, 10) : "—"}</dd>
<dt>archived</dt><dd>${archivedLine(item)}</dd>
<dt>folders</dt><dd>${item.folders.length ? item.folders.map((f, i) => html`${i ? ", " : ""}<a href="/archive?${f.kind === "gallery" ? "folder" : "collection"}=${encodeURIComponent(f.folderid)}">${f.name ?? "(unnamed)"}</a>`) : "—"}</dd>
<dt>tags</dt><dd>${item.tags.length ? html`<span class="tags">${item.tags.map((t) => html`<a class="tag" href="/archive?tag=${encodeURIComponent(t)}">#${t}</a>`)}</span>` : "—"}</dd></dl>
${original ? html`<p><a class="original-link" href="/files/${original.downloadId}">open original</a></p>` : ""}</section>`;
}

function navHtml(nav: ItemNav): SafeHtml {
  if (!nav.prev && !nav.next && !nav.back) return html``;
  return html`<nav class="item-nav" aria-label="Previous and next">${nav.prev ? html`<a href="${nav.prev.href}" rel="prev" data-key="ArrowLeft">‹ ${title(nav.prev.title)}</a>` : html`<span></span>`}${nav.back ? html`<a href="${nav.back}">back to the grid</a>` : ""}${nav.next ? html`<a href="${nav.next.href}" rel="next" data-key="ArrowRight">${title(nav.next.title)} ›</a>` : html`<span></span>`}</nav>`;
}

export function itemPage(item: ItemDetail, nav: ItemNav = {}, comments: SafeHtml = html``, notice?: string): string {
  const original = item.files[0];
  const text = htmlToText(item.text ?? item.excerpt);
  const body = html`
<h1>${title(item.title)}</h1>
${doneNotice(notice)}${navHtml(nav)}
<div class="item">
<div>
  <div class="original">${original ? html`<a href="/files/${original.downloadId}" title="open the stored file"><img src="${thumbUrl(original, "m", item.type)}" alt="${title(item.title)}"></a>` : html`<img src="${thumbUrl(null, "m", item.type)}" alt="not archived" width="260">`}</div>
  ${text ? html`<div class="card"><h2>${item.type === "literature" ? "Text" : "Journal"}</h2><div class="text">${text}</div></div>` : ""}
  <div class="card"><h2>History of changes</h2>
  ${item.history.length === 0 ? html`<p class="muted">No edits seen since dvault first archived it (${formatTime(item.firstSeenAt.toISOString())}).</p>` : ""}
  <table>${item.history.map((h) => html`<tr><td class="small">${formatTime(h.changedAt.toISOString())}</td><td>${h.field}</td><td><div class="small muted">before</div><div class="text">${historyValue(h.oldValue)}</div><div class="small muted">after</div><div class="text">${historyValue(h.newValue)}</div></td></tr>`)}</table>
  </div>
</div>
<div>
  ${infoHtml(item)}
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
  ${item.files.map((f) => {
    const k = fileKind(f);
    return html`<div><a href="/files/${f.downloadId}">${k.label}</a> ${pill(f.status.replace("_", " "), k.tone)} <span class="muted small">${formatBytes(f.size)}${f.width && f.height ? ` · ${f.width}×${f.height}` : ""}</span>${k.why ? html`<div class="small">${k.why}</div>` : ""}<div class="small muted path">${f.path}</div></div>`;
  })}
  ${item.pending.map((p) => html`<div class="small">${p.kind}: ${pill(p.status.replace("_", " "), p.status === "failed" ? "bad" : "warn")} ${p.reason ?? ""} ${p.lastError ?? ""}</div>`)}
  </div>
  ${item.folders.length ? html`<div class="card"><h2>In folders</h2>${item.folders.map((f) => html`<div><a href="/archive?${f.kind === "gallery" ? "folder" : "collection"}=${encodeURIComponent(f.folderid)}">${f.owner ?? "?"} / ${f.name ?? "(unnamed)"}</a> <span class="muted small">${f.kind}</span></div>`)}</div>` : ""}
</div></div>${comments}`;
  return layout({ title: title(item.title), nav: "archive", body });
}

/** Only http(s) links from the service become hrefs. */
function safeUrl(url: string): string {
  return /^https?:\/\//i.test(url) ? url : "#";
}
