// What every dashboard page shares: the frame (header, navigation, search box, the stylesheet and the script
// from /assets), and the small formatters the pages use. Rendered with html`` (escaped by default).
import { APP_CSS, APP_JS } from "../assets.ts";
import { html, raw, type SafeHtml } from "../../text/html.ts";

export type NavKey = "overview" | "archive" | "notes" | "messages" | "watch" | "artists" | "jobs" | "feeds" | "metrics";

/** An Atom feed the page advertises in its <head> (src/http/feeds/feed-adverts.ts). */
export type PageFeed = { title: string; href: string };

const MENU_ICON = html`<svg width="18" height="18" viewBox="0 0 18 18" aria-hidden="true"><path d="M2 4h14M2 9h14M2 14h14" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>`;

/**
 * The theme switch: plain links to /theme (src/http/theme.ts), so it works without script. The page comes with
 * `data-theme="system"` on <html>; sendPage writes the browser's choice there, and base.css marks that link.
 */
const THEME_ICONS = {
  system: html`<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="6.5" fill="none" stroke="currentColor" stroke-width="1.5"/><path d="M8 1.5a6.5 6.5 0 0 1 0 13z" fill="currentColor"/></svg>`,
  light: html`<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><circle cx="8" cy="8" r="3.2" fill="currentColor"/><path d="M8 1v2M8 13v2M1 8h2M13 8h2M3 3l1.4 1.4M11.6 11.6L13 13M3 13l1.4-1.4M11.6 4.4L13 3" stroke="currentColor" stroke-width="1.5" stroke-linecap="round"/></svg>`,
  dark: html`<svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><path d="M13.5 10.2A6 6 0 0 1 5.8 2.5a6 6 0 1 0 7.7 7.7z" fill="currentColor"/></svg>`,
};
const themeChoice = (choice: keyof typeof THEME_ICONS, label: string, hint: string) =>
  html`<a href="/theme?set=${choice}" data-choice="${choice}" title="${hint}">${THEME_ICONS[choice]}<span>${label}</span></a>`;

/**
 * The theme switch: plain links to /theme (src/http/theme.ts), so it works without script. The page comes with
 * `data-theme="system"` on <html>; sendPage writes the browser's choice there, and base.css marks that link.
 */
const THEME_SWITCH = html`<div class="theme" role="group" aria-label="Colour theme"><span class="label">Theme</span>${themeChoice("system", "Auto", "Theme: as the system is set")}${themeChoice("light", "Light", "Theme: light")}${themeChoice("dark", "Dark", "Theme: dark")}</div>`;

/**
 * The frame. At narrow widths the navigation and the theme switch sit behind the "Menu" button of a
 * <details> (no script needed); from 1024 px up base.css shows them in the header and hides the button.
 */
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
<html lang="en" data-theme="system"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · dvault</title>${feeds.map((f) => html`<link rel="alternate" type="application/atom+xml" title="${f.title}" href="${f.href}">`)}<link rel="stylesheet" href="${APP_CSS.url}"><script src="${APP_JS.url}" defer></script></head>
<body><a class="skip" href="#main">Skip to content</a><header><a class="brand" href="/">d<span>vault</span></a>
<details class="menu"><summary>${MENU_ICON}<span>Menu</span></summary><div class="menu-body">
<nav aria-label="Dashboard">${link("overview", "/", "Overview")}${link("archive", "/archive", "Archive")}${link("notes", "/notes", "Notes")}${link("messages", "/messages", "Messages")}${link("watch", "/watch", "Watch feed")}${link("artists", "/artists", "Artists")}${link("jobs", "/jobs", "Failed jobs")}${link("feeds", "/feeds", "Feeds")}<a href="/queues">Queues</a>${link("metrics", "/metrics", "Metrics")}</nav>
${THEME_SWITCH}</div></details>
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

/**
 * "49–96 of 1 812", with the numbers in data-* for app.js's infinite scroll; "of more than 10 000" (`more`) when the
 * count stopped at its bound.
 */
export function countLine(from: number, to: number, total: number, more = false): SafeHtml {
  if (total === 0) return html``;
  return html`<p class="count" data-from="${from}" data-to="${to}" data-total="${total}"${more ? raw(' data-more="1"') : ""}>${group(from)}–${group(to)} of ${more ? "more than " : ""}${group(total)}</p>`;
}
