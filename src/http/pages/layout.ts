// What every dashboard page shares: the frame (header, navigation, search box, the stylesheet and the script
// from /assets), and the small formatters the pages use. Rendered with html`` (escaped by default).
import { APP_CSS, APP_JS } from "../assets.ts";
import { html, type SafeHtml } from "../../text/html.ts";

export type NavKey = "overview" | "archive" | "notes" | "messages" | "watch" | "artists" | "jobs" | "feeds";

/** An Atom feed the page advertises in its <head> (src/http/feeds/feed-adverts.ts). */
export type PageFeed = { title: string; href: string };

export function layout({
  title,
  nav,
  body,
  query = "",
  feeds = [],
}: {
  title: string;
  nav?: NavKey;
  body: SafeHtml;
  query?: string;
  feeds?: readonly PageFeed[];
}): string {
  const link = (key: NavKey, href: string, label: string) =>
    html`<a href="${href}" class="${nav === key ? "on" : ""}"${nav === key ? html` aria-current="page"` : ""}>${label}</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · dvault</title>${feeds.map((f) => html`<link rel="alternate" type="application/atom+xml" title="${f.title}" href="${f.href}">`)}<link rel="stylesheet" href="${APP_CSS.url}"><script src="${APP_JS.url}" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a><header><a class="brand" href="/">d<span>vault</span></a>
<nav aria-label="Dashboard">${link("overview", "/", "Overview")}${link("archive", "/archive", "Archive")}${link("notes", "/notes", "Notes")}${link("messages", "/messages", "Messages")}${link("watch", "/watch", "Watch feed")}${link("artists", "/artists", "Artists")}${link("jobs", "/jobs", "Failed jobs")}${link("feeds", "/feeds", "Feeds")}<a href="/queues">Queues</a><a href="/metrics">Metrics</a></nav>
<form action="/archive" method="get" role="search"><input type="search" name="q" value="${query}" placeholder="Search the archive…" aria-label="Search the archive"></form>
</header><main id="main">${body}</main></body></html>`.text;
}

export function pill(text: string, tone: "ok" | "warn" | "bad" | "" = ""): SafeHtml {
  return html`<span class="pill ${tone}">${text}</span>`;
}

export function title(t: string | null | undefined): string {
  const s = (t ?? "").trim();
  return s || "(untitled)";
}

/** 1812 → "1 812" (a no-break space between thousands), as app.js writes it too. */
export function group(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");
}

/** "1 comment", "2 comments". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${group(n)} ${n === 1 ? one : many}`;
}

export function queryString(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "" && v !== false) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** Page links with totals: "‹ 1 … 4 5 6 … 38 ›"; `data-next` lets app.js append the next page instead. */
export function pager(page: number, pages: number, href: (page: number) => string, label: string): SafeHtml {
  if (pages <= 1) return html``;
  const shown = [...new Set([1, page - 2, page - 1, page, page + 1, page + 2, pages])].filter((p) => p >= 1 && p <= pages).sort((a, b) => a - b);
  const parts: SafeHtml[] = [];
  if (page > 1) parts.push(html`<a href="${href(page - 1)}" rel="prev" aria-label="previous page">‹</a>`);
  shown.forEach((p, i) => {
    if (i > 0 && p - (shown[i - 1] ?? p) > 1) parts.push(html`<span class="gap">…</span>`);
    parts.push(p === page ? html`<span class="on" aria-current="page">${p}</span>` : html`<a href="${href(p)}">${p}</a>`);
  });
  if (page < pages) parts.push(html`<a href="${href(page + 1)}" rel="next" aria-label="next page">›</a>`);
  return html`<nav class="pager" aria-label="${label}"${page < pages ? html` data-next="${href(page + 1)}"` : ""}>${parts}</nav>`;
}

/** "49–96 of 1 812", with the numbers in data-* for app.js's infinite scroll. */
export function countLine(from: number, to: number, total: number): SafeHtml {
  if (total === 0) return html``;
  return html`<p class="count" data-from="${from}" data-to="${to}" data-total="${total}">${group(from)}–${group(to)} of ${group(total)}</p>`;
}
