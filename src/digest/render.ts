// Turns a digest (and an alert) into what people read: an HTML mail built from tables with inline styles
// (what survives Gmail, Outlook and Apple Mail), a plain-text twin, and a subject line with the counts.
// Every string the service provided goes through esc(clean(...)): a title like `<script>` is shown as text.
import type { AlertNotice } from "./alerts.ts";
import { formatBytes } from "../text/bytes.ts";
import { escapeHtml as esc } from "../text/html.ts";
import { clean, plural, shorten } from "./text.ts";
import type { ChangeItem, DeviationRef, DigestCounts, DigestData, Health } from "./types.ts";

export type RenderedMessage = { subject: string; html: string; text: string; preheader: string };

export type RenderOptions = {
  /** IANA zone for the times shown (DVAULT_DIGEST_TZ). */
  timezone: string;
  /** Shown small in the footer, so a duplicate delivery can be recognised. */
  idempotencyKey?: string;
  /** "preview": says that nothing was sent. */
  mode?: "send" | "preview";
};

// ---- palette and type -----------------------------------------------------------------------------------

const FONT = `-apple-system,BlinkMacSystemFont,'Segoe UI',Roboto,Helvetica,Arial,sans-serif`;
const C = {
  page: "#eceee9",
  card: "#ffffff",
  border: "#dde2da",
  ink: "#1d2b26",
  muted: "#68766f",
  faint: "#98a39d",
  band: "#17312b",
  bandInk: "#e6f2ec",
  bandMuted: "#9fc2b3",
  accent: "#36b37e",
  accentSoft: "#e7f5ee",
  quote: "#f5f7f4",
  okInk: "#1e7a46",
  okBg: "#e6f5ec",
  warnInk: "#8a5a00",
  warnBg: "#fff3d6",
  badInk: "#a4271b",
  badBg: "#fdecea",
  link: "#1f6f55",
};

const text = (size: number, color: string, weight = 400, extra = "") =>
  `font-family:${FONT};font-size:${size}px;line-height:1.45;color:${color};font-weight:${weight};${extra}`;

// ---- the digest -----------------------------------------------------------------------------------------

export function renderDigest(data: DigestData, opts: RenderOptions): RenderedMessage {
  const subject = digestSubject(data.counts, data.window.end, opts.timezone);
  const preheader = summaryLine(data.counts) || "Nothing new in this window.";
  return { subject, preheader, html: digestHtml(data, opts, subject, preheader), text: digestText(data, opts) };
}

const COUNT_LABELS: Array<[keyof DigestCounts, string, string]> = [
  ["faves", "fave", "faves"],
  ["comments", "comment", "comments"],
  ["watchers", "new watcher", "new watchers"],
  ["mentions", "mention", "mentions"],
  ["notifications", "notification", "notifications"],
  ["notes", "unread note", "unread notes"],
  ["deviations", "new deviation", "new deviations"],
  ["changes", "change", "changes"],
];

function summaryParts(counts: DigestCounts): string[] {
  const parts = COUNT_LABELS.filter(([key]) => counts[key] > 0).map(([key, one, many]) => plural(counts[key], one, many));
  if (counts.problems > 0) parts.push(`${counts.problems} ${counts.problems === 1 ? "needs" : "need"} attention`);
  return parts;
}

function summaryLine(counts: DigestCounts): string {
  return summaryParts(counts).join(", ");
}

export function digestSubject(counts: DigestCounts, end: Date, timezone: string): string {
  const day = new Intl.DateTimeFormat("en-GB", { timeZone: timezone, day: "numeric", month: "short" }).format(end);
  const parts = summaryParts(counts);
  return `dvault digest ${day}: ${parts.length ? parts.join(", ") : "nothing new"}`;
}

function formatTime(at: Date | null | undefined, tz: string, withYear = false): string {
  if (!at) return "";
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: tz,
    day: "numeric",
    month: "short",
    ...(withYear ? { year: "numeric" } : {}),
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).format(at);
}

function windowLabel(data: DigestData, tz: string): string {
  return `${formatTime(data.window.start, tz)} – ${formatTime(data.window.end, tz, true)} (${tz})`;
}

/** Only the service's own pages are linked: http(s) URLs, escaped. */
function safeUrl(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.toString() : null;
  } catch {
    return null;
  }
}

const title = (d: DeviationRef | null | undefined) => (d?.title ? clean(d.title) : "an untitled deviation");
const name = (s: string | null | undefined) => (s ? clean(s) : "someone");

function link(url: string | null | undefined, inner: string, color = C.link): string {
  const href = safeUrl(url);
  return href ? `<a href="${esc(href)}" style="color:${color};text-decoration:none;">${inner}</a>` : inner;
}

function badge(label: string, ink: string, bg: string): string {
  return `<span style="display:inline-block;padding:1px 7px;border-radius:9px;background:${bg};${text(11, ink, 600, "line-height:16px;")}white-space:nowrap;">${esc(label)}</span>`;
}

function archivedBadge(d: DeviationRef | null | undefined): string {
  if (d?.archived === "original") return badge("✓ archived", C.okInk, C.okBg);
  if (d?.archived === "reduced") return badge("✓ archived (reduced)", C.warnInk, C.warnBg);
  return "";
}

/** An image source: an http(s) URL, or an inline raster or SVG image (inert inside <img>). */
function safeImageSrc(src: string | null | undefined): string | null {
  if (src && /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=]+$/.test(src)) return src;
  return safeUrl(src);
}

/** A round placeholder with a person's initial, where a list row is about someone rather than a work. */
function avatar(person: string | null | undefined, size = 64): string {
  const initial = Array.from(clean(person) || "?")[0]?.toUpperCase() ?? "?";
  return `<table role="presentation" width="${size}" cellpadding="0" cellspacing="0" border="0"><tr><td width="${size}" height="${size}" align="center" valign="middle" style="width:${size}px;height:${size}px;border-radius:${size / 2}px;background:#d9e4de;${text(Math.round(size * 0.42), C.muted, 700)}">${esc(initial)}</td></tr></table>`;
}

/** A thumbnail linked to the deviation's page; mature works and missing images get a quiet placeholder. */
function thumb(d: DeviationRef | null | undefined, w: number, h: number): string {
  const src = d && !d.isMature ? safeImageSrc(d.thumbUrl) : null;
  const inner = src
    ? `<img src="${esc(src)}" width="${w}" height="${h}" alt="${esc(title(d))}" style="display:block;width:${w}px;height:${h}px;object-fit:cover;border:0;border-radius:6px;background:#dfe7e2;${text(11, C.muted)}">`
    : `<table role="presentation" width="${w}" cellpadding="0" cellspacing="0" border="0"><tr><td width="${w}" height="${h}" align="center" valign="middle" style="width:${w}px;height:${h}px;border-radius:6px;background:#dfe7e2;${text(11, C.muted, 600)}">${d?.isMature ? "mature" : "no preview"}</td></tr></table>`;
  return link(d?.url, inner);
}

function sectionHeader(heading: string, count?: string): string {
  return `<tr><td style="padding:26px 32px 4px 32px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr>
<td style="border-left:4px solid ${C.accent};padding:0 0 0 10px;${text(17, C.ink, 700, "letter-spacing:-0.2px;")}">${esc(heading)}${
    count ? ` <span style="${text(14, C.faint, 400)}">${esc(count)}</span>` : ""
  }</td></tr></table></td></tr>`;
}

function sectionBody(inner: string): string {
  return `<tr><td style="padding:8px 32px 4px 32px;">${inner}</td></tr>`;
}

/** One row of a list: an optional picture on the left, lines on the right. */
type ListRow = { left: string | null; right: string; leftWidth?: number };

function listRow(left: string | null, right: string, leftWidth = 76): ListRow {
  return { left, right, leftWidth };
}

/** Rows with a hairline between them; rows without a picture span both columns, so mixed lists stay aligned. */
function list(rows: readonly ListRow[]): string {
  const html = rows.map((r, i) => {
    const border = i < rows.length - 1 ? "border-bottom:1px solid #eef1ec;" : "";
    const w = r.leftWidth ?? 76;
    const left = r.left ? `<td width="${w}" valign="top" style="width:${w}px;padding:10px 12px 10px 0;${border}">${r.left}</td>` : "";
    return `<tr>${left}<td valign="top"${r.left ? "" : ' colspan="2"'} style="padding:10px 0;${border}">${r.right}</td></tr>`;
  });
  return `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">${html.join("")}</table>`;
}

function quoteBlock(body: string): string {
  return `<div style="margin-top:6px;padding:8px 12px;border-left:3px solid ${C.border};border-radius:0 6px 6px 0;background:${C.quote};${text(14, C.ink)}white-space:pre-wrap;">${esc(body)}</div>`;
}

const multiCache = new WeakMap<DigestData, boolean>();

/** Items are labelled with their account only when the news comes from more than one account. */
function multiAccount(data: DigestData): boolean {
  let multi = multiCache.get(data);
  if (multi === undefined) {
    const f = data.feedback;
    const accounts = new Set(
      [...f.faves, ...f.comments, ...f.watchers, ...f.other, ...data.mentions, ...data.notes.unread, ...data.deviations.items, ...data.changes].map((i) => i.account),
    );
    multi = accounts.size > 1;
    multiCache.set(data, multi);
  }
  return multi;
}

const accountTag = (data: DigestData, account: string) =>
  multiAccount(data) ? `<span style="${text(12, C.faint)}">${esc(clean(account))} · </span>` : "";

/** Watchers by account (one group when the digest is about one account). */
function watchersByAccount(data: DigestData): Array<[string | null, string[]]> {
  if (!multiAccount(data)) return data.feedback.watchers.length ? [[null, data.feedback.watchers.map((w) => clean(w.username))]] : [];
  const groups = new Map<string, string[]>();
  for (const w of data.feedback.watchers) groups.set(w.account, [...(groups.get(w.account) ?? []), clean(w.username)]);
  return [...groups.entries()];
}

function more(shown: number, total: number, what: string): string {
  return total > shown ? `<p style="margin:8px 0 0 0;${text(13, C.muted)}">…and ${esc(plural(total - shown, what))} more.</p>` : "";
}

function feedbackHtml(data: DigestData, tz: string): string {
  const f = data.feedback;
  const rows: ListRow[] = [];
  for (const g of f.faves) {
    const people = g.people === 1 ? `<b>${esc(name(g.names[0]))}</b> faved` : `<b>${esc(plural(g.people, "person", "people"))}</b> faved`;
    const who = g.people > 1 && g.names.length ? `<div style="${text(13, C.muted)}">${esc(namesList(g.names, g.people))}</div>` : "";
    rows.push(
      listRow(
        thumb(g.deviation, 64, 64),
        `<div style="${text(15, C.ink)}">${accountTag(data, g.account)}${people} ${link(g.deviation.url, `<b>${esc(title(g.deviation))}</b>`)} ${archivedBadge(g.deviation)}</div>${who}`,
      ),
    );
  }
  for (const c of f.comments) {
    const verb = c.kind === "reply" ? "replied" : "commented";
    const on = c.deviation ? ` on ${link(c.deviation.url, `<b>${esc(title(c.deviation))}</b>`)}` : "";
    rows.push(
      listRow(
        c.deviation ? thumb(c.deviation, 64, 64) : null,
        `<div style="${text(15, C.ink)}">${accountTag(data, c.account)}<b>${esc(name(c.author))}</b> ${verb}${on} <span style="${text(12, C.faint)}">${esc(formatTime(c.postedAt, tz))}</span></div>${c.body ? quoteBlock(c.body) : ""}`,
      ),
    );
  }
  for (const o of f.other) {
    rows.push(listRow(null, `<div style="${text(14, C.ink)}">${accountTag(data, o.account)}${esc(plural(o.count, `${clean(o.type)} notification`))}</div>`));
  }
  let html = rows.length ? list(rows) : "";
  html += more(f.comments.length, f.commentsTotal, "comment");
  for (const [account, names] of watchersByAccount(data)) {
    html += `<p style="margin:14px 0 6px 0;${text(15, C.ink, 600)}">${esc(plural(names.length, "new watcher"))}${account ? ` of ${esc(clean(account))}` : ""}</p><div>${names
      .map((n) => `<span style="display:inline-block;margin:0 6px 6px 0;padding:3px 10px;border-radius:12px;background:${C.accentSoft};${text(13, C.ink)}">${esc(n)}</span>`)
      .join("")}</div>`;
  }
  return html;
}

function namesList(names: string[], total: number): string {
  const shown = names.slice(0, 4).map(name);
  const rest = total - shown.length;
  return rest > 0 ? `${shown.join(", ")} and ${plural(rest, "other")}` : shown.join(", ").replace(/, ([^,]*)$/, " and $1");
}

function mentionsHtml(data: DigestData, tz: string): string {
  const rows = data.mentions.map((m) =>
    listRow(
      m.deviation ? thumb(m.deviation, 64, 64) : null,
      `<div style="${text(15, C.ink)}">${accountTag(data, m.account)}<b>${esc(name(m.by))}</b> mentioned you${
        m.deviation ? ` in ${link(m.deviation.url, `<b>${esc(title(m.deviation))}</b>`)}` : ""
      } <span style="${text(12, C.faint)}">${esc(formatTime(m.at, tz))}</span></div>${m.body ? quoteBlock(m.body) : ""}`,
    ),
  );
  return list(rows) + more(data.mentions.length, data.mentionsTotal, "mention");
}

function notesHtml(data: DigestData, tz: string): string {
  const n = data.notes;
  const rows = n.unread.map((note) =>
    listRow(
      avatar(note.sender, 44),
      `<div style="${text(15, C.ink)}">${accountTag(data, note.account)}<b>${esc(name(note.sender))}</b> · ${esc(clean(note.subject) || "(no subject)")} <span style="${text(12, C.faint)}">${esc(formatTime(note.sentAt, tz))}</span></div>${
        note.preview ? `<div style="${text(14, C.muted)}">${esc(clean(note.preview))}</div>` : ""
      }`,
      56,
    ),
  );
  let html = list(rows) + more(n.unread.length, n.total, "note");
  if (n.olderUnread > 0) html += `<p style="margin:8px 0 0 0;${text(13, C.muted)}">${esc(plural(n.olderUnread, "older note"))} still unread.</p>`;
  return html;
}

function deviationsHtml(data: DigestData, tz: string): string {
  const items = data.deviations.items;
  const cells = items.map((item) => {
    const d = item.deviation;
    return `<td width="192" valign="top" style="width:192px;padding:0 6px 18px 6px;">${thumb(d, 180, 135)}
<div style="margin-top:6px;${text(14, C.ink, 600)}">${link(d.url, esc(shorten(title(d), 48)), C.ink)}</div>
<div style="${text(12, C.muted)}">${accountTag(data, item.account)}by ${esc(name(item.artist))}${item.publishedAt ? ` · ${esc(formatTime(item.publishedAt, tz))}` : ""}</div>
${archivedBadge(d) ? `<div style="margin-top:3px;">${archivedBadge(d)}</div>` : ""}</td>`;
  });
  const rows: string[] = [];
  for (let i = 0; i < cells.length; i += 3) {
    const row = cells.slice(i, i + 3);
    while (row.length < 3) row.push(`<td width="192" style="width:192px;padding:0 6px;"></td>`);
    rows.push(`<tr>${row.join("")}</tr>`);
  }
  return `<table role="presentation" width="576" cellpadding="0" cellspacing="0" border="0" style="width:576px;max-width:100%;">${rows.join("")}</table>${more(items.length, data.deviations.total, "deviation")}`;
}

const REMOVED_WORDS: Record<string, string> = {
  deleted: "was deleted by its artist",
  access_lost: "is no longer visible to you",
};

/** What the service answered about an artist (docs/service-behaviour.md#user-error-codes). */
const ARTIST_WORDS: Record<string, string> = {
  artist_suspended: "is suspended",
  artist_deactivated: "deactivated their account",
  artist_not_found: "is no longer found under that name (renamed, deactivated or deleted)",
};

const RELATION_WORDS: Record<string, string> = {
  watching: "You were watching them.",
  tracked: "You track them.",
  favourites: "Some of your favourites are theirs.",
};

function changeSentence(c: ChangeItem): { lead: string; rest: string } {
  if (c.kind === "artist_unavailable") {
    const keeps = c.works ? ` Your archive keeps ${plural(c.works, "work")} of theirs; they come back if the account does.` : "";
    const what = ARTIST_WORDS[c.reason ?? ""] ?? "is unavailable";
    return { lead: name(c.username), rest: `${what}. ${RELATION_WORDS[c.relation ?? ""] ?? ""}${keeps}`.replace(/\s+/g, " ").trim() };
  }
  const what = REMOVED_WORDS[c.reason ?? ""] ?? "was removed";
  return { lead: `“${title(c.deviation)}”`, rest: `by ${name(c.username)}, one of your favourites, ${what}.` };
}

function changesHtml(data: DigestData, tz: string): string {
  const rows = data.changes.map((c) => {
    const s = changeSentence(c);
    const keep =
      c.kind === "favourite_removed"
        ? c.deviation?.archived
          ? ` ${badge("your archive keeps it", C.okInk, C.okBg)}`
          : ` ${badge("not archived", C.warnInk, C.warnBg)}`
        : "";
    return listRow(
      c.deviation ? thumb(c.deviation, 64, 64) : avatar(c.username),
      `<div style="${text(15, C.ink)}">${accountTag(data, c.account)}<b>${esc(s.lead)}</b> ${esc(s.rest)}${keep}</div><div style="${text(12, C.faint)}">${esc(formatTime(c.at, tz))}</div>`,
    );
  });
  return list(rows);
}

type HealthLine = { level: "bad" | "warn" | "info" | "ok"; head: string; detail?: string; command?: string };

function healthLines(h: Health, tz: string): HealthLine[] {
  const lines: HealthLine[] = [];
  for (const a of h.accounts) {
    if (a.problem === "needs_reauth" || a.problem === "revoked") {
      lines.push({ level: "bad", head: `Account “${clean(a.name)}” needs re-authorization; its sync is paused.`, ...(a.reason ? { detail: clean(a.reason) } : {}), command: a.command });
    } else if (a.problem === "refresh_token_old") {
      lines.push({
        level: "warn",
        head: `Account “${clean(a.name)}”: its refresh token is ${a.refreshAgeDays} days old; the service ends it at about 90.`,
        detail: "Log in again before then to keep syncing without a gap.",
        command: a.command,
      });
    } else {
      lines.push({ level: "warn", head: `Account “${clean(a.name)}” will need a new login soon.`, ...(a.reason ? { detail: clean(a.reason) } : {}), command: a.command });
    }
  }
  for (const s of h.failingSources) {
    lines.push({
      level: "bad",
      head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is failing.`,
      detail: `${s.error ? clean(s.error) : "no reason recorded"}${s.lastRunAt ? ` · last run ${formatTime(s.lastRunAt, tz)}` : ""}`,
    });
  }
  for (const d of h.deliveries) {
    lines.push({
      level: "bad",
      head: `The ${d.channel} digest for ${formatTime(d.windowStart, tz)} – ${formatTime(d.windowEnd, tz)} could not be delivered (${plural(d.attempts, "attempt")}).`,
      detail: `${d.error ? clean(d.error) : "unknown error"} · this digest covers that period too.`,
    });
  }
  if (h.downloadsPaused.paused) {
    lines.push({ level: "bad", head: h.downloadsPaused.cause === "archive_link" ? "Downloads are paused: the archive contains a link that points outside it." : "Downloads are paused: the archive's disk is almost full.", ...(h.downloadsPaused.reason ? { detail: clean(h.downloadsPaused.reason) } : {}) });
  }
  if ("error" in h.disk) lines.push({ level: "warn", head: `Could not read the free space of ${h.disk.path}.`, detail: h.disk.error });
  else if (h.disk.low) lines.push({ level: "bad", head: `Low disk space: ${formatBytes(h.disk.freeBytes)} free of ${formatBytes(h.disk.totalBytes)}.`, detail: h.disk.path });
  for (const a of h.alerts) lines.push({ level: "bad", head: clean(a.title), detail: `since ${formatTime(a.openedAt, tz)}` });
  if (h.deferredDownloads.count > 0) {
    lines.push({
      level: "info",
      head: `${plural(h.deferredDownloads.count, "original download")} deferred by the weekly quota.`,
      detail: "They continue on their own when the next allowance starts.",
    });
  }
  if (h.importedOriginals > 0) {
    lines.push({
      level: "info",
      head: `${plural(h.importedOriginals, "original")} came from an import.`,
      detail: "Adopted from a folder on disk (dvault import gallery-dl): no download allowance was spent on them.",
    });
  }
  for (const s of h.unavailableSources) {
    lines.push({ level: "info", head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is partly unavailable upstream.`, detail: clean(s.unavailable ?? "") });
  }
  for (const s of h.incompleteSources) {
    lines.push({
      level: "warn",
      head: `${clean(s.account)}: ${s.source}${s.key ? ` (${clean(s.key)})` : ""} is incomplete: some of it could not be reached.`,
      ...(s.missing.length ? { detail: s.missing.map(clean).join(" · ") } : {}),
    });
  }
  if (h.unreadable.count > 0) {
    lines.push({
      level: "warn",
      head: `${plural(h.unreadable.count, "answer")} of the service could not be read and ${h.unreadable.count === 1 ? "was" : "were"} skipped.`,
      detail: "Each is kept with its raw JSON; dvault status lists them. Everything else was archived.",
      command: "dvault status",
    });
  }
  if (!("error" in h.disk) && !h.disk.low) lines.push({ level: "ok", head: `Disk: ${formatBytes(h.disk.freeBytes)} free of ${formatBytes(h.disk.totalBytes)}.`, detail: h.disk.path });
  return lines;
}

const LEVEL_STYLE: Record<HealthLine["level"], { ink: string; bg: string; label: string }> = {
  bad: { ink: C.badInk, bg: C.badBg, label: "ACTION" },
  warn: { ink: C.warnInk, bg: C.warnBg, label: "SOON" },
  info: { ink: C.muted, bg: "#eef1ec", label: "INFO" },
  ok: { ink: C.okInk, bg: C.okBg, label: "OK" },
};

function healthHtml(h: Health, tz: string, problems: number): string {
  const lines = healthLines(h, tz);
  const rows = lines.map((l) => {
    const st = LEVEL_STYLE[l.level];
    const command = l.command
      ? `<div style="margin-top:6px;"><code style="display:inline-block;padding:4px 10px;border-radius:5px;background:${C.band};color:#d7f5e6;font-family:SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;">${esc(l.command)}</code></div>`
      : "";
    return listRow(
      `<span style="display:inline-block;width:56px;text-align:center;padding:2px 0;border-radius:4px;background:${st.bg};${text(10, st.ink, 700, "letter-spacing:0.6px;")}">${st.label}</span>`,
      `<div style="${text(14, C.ink, l.level === "bad" ? 600 : 400)}">${esc(l.head)}</div>${l.detail ? `<div style="${text(13, C.muted)}">${esc(l.detail)}</div>` : ""}${command}`,
    );
  });
  const intro =
    problems === 0
      ? `<p style="margin:0 0 4px 0;${text(14, C.okInk, 600)}">All good: every account is authorized and every source is syncing.</p>`
      : "";
  return intro + list(rows);
}

function chip(count: number, label: string): string {
  return `<td style="padding:0 8px 8px 0;"><table role="presentation" cellpadding="0" cellspacing="0" border="0"><tr><td style="padding:8px 12px;border-radius:8px;background:rgba(255,255,255,0.08);border:1px solid rgba(255,255,255,0.14);"><div style="${text(20, "#ffffff", 700, "line-height:1.1;")}">${count}</div><div style="${text(11, C.bandMuted, 600, "letter-spacing:0.4px;text-transform:uppercase;")}">${esc(label)}</div></td></tr></table></td>`;
}

function digestHtml(data: DigestData, opts: RenderOptions, subject: string, preheader: string): string {
  const tz = opts.timezone;
  const c = data.counts;
  const chipList: Array<[number, string]> = [
    [c.faves, "faves"],
    [c.comments, "comments"],
    [c.watchers, "watchers"],
    [c.mentions, "mentions"],
    [c.notes, "notes"],
    [c.deviations, "new works"],
  ];
  const chips = chipList.filter(([n]) => n > 0);
  const sections: string[] = [];
  const feedbackCount = c.faves + c.comments + c.watchers + c.notifications;
  if (feedbackCount > 0) sections.push(sectionHeader("Feedback", summaryLine({ ...zero(), faves: c.faves, comments: c.comments, watchers: c.watchers })), sectionBody(feedbackHtml(data, tz)));
  if (data.mentions.length) sections.push(sectionHeader("Mentions", String(data.mentionsTotal)), sectionBody(mentionsHtml(data, tz)));
  if (data.notes.unread.length) sections.push(sectionHeader("Unread notes", String(data.notes.total)), sectionBody(notesHtml(data, tz)));
  if (data.deviations.items.length) sections.push(sectionHeader("New from artists you watch", String(data.deviations.total)), sectionBody(deviationsHtml(data, tz)));
  if (data.changes.length) sections.push(sectionHeader("Changes worth knowing", String(data.changes.length)), sectionBody(changesHtml(data, tz)));
  if (sections.length === 0) {
    const waiting = data.accounts.filter((a) => !a.baselineComplete);
    const note = waiting.length
      ? `The first full sync of ${waiting.map((a) => `“${clean(a.name)}”`).join(", ")} has not completed yet: what it brings in is your archive's starting point, not news.`
      : "Nothing new reached your archive in this window.";
    sections.push(sectionBody(`<p style="margin:18px 0 0 0;${text(15, C.muted)}">${esc(note)}</p>`));
  }
  sections.push(sectionHeader("Archive health", c.problems ? plural(c.problems, "item") + " to look at" : undefined), sectionBody(healthHtml(data.health, tz, c.problems)));

  const previewNote =
    opts.mode === "preview"
      ? `<tr><td style="padding:10px 32px;background:${C.warnBg};${text(13, C.warnInk, 600)}">Preview: nothing was sent and the digest window did not move.</td></tr>`
      : "";
  const accounts = data.accounts.map((a) => clean(a.username ?? a.name)).join(", ");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light only"><meta name="supported-color-schemes" content="light"><title>${esc(subject)}</title></head>
<body style="margin:0;padding:0;background:${C.page};-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;opacity:0;">${esc(preheader)}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:${C.page};"><tr><td align="center" style="padding:28px 12px;">
<table role="presentation" width="640" cellpadding="0" cellspacing="0" border="0" style="width:640px;max-width:100%;background:${C.card};border:1px solid ${C.border};border-radius:12px;overflow:hidden;">
<tr><td style="background:${C.band};padding:26px 32px 18px 32px;">
<div style="${text(13, C.bandMuted, 700, "letter-spacing:2px;text-transform:uppercase;")}">dvault <span style="color:${C.accent};">●</span> digest</div>
<div style="margin-top:6px;${text(24, "#ffffff", 700, "letter-spacing:-0.3px;line-height:1.25;")}">${esc(headline(c))}</div>
<div style="margin-top:4px;${text(13, C.bandMuted)}">${esc(windowLabel(data, tz))}${accounts ? ` · ${esc(accounts)}` : ""}</div>
${chips.length ? `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin-top:16px;"><tr>${chips.map(([n, l]) => chip(n, l)).join("")}</tr></table>` : ""}
</td></tr>
${previewNote}
${sections.join("\n")}
<tr><td style="padding:26px 32px 26px 32px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr><td style="border-top:1px solid ${C.border};padding-top:14px;${text(12, C.faint)}">
New means new to your archive in this window: first seen by dvault, whatever the service's own dates say. Thumbnails link to the service; “archived” means the file is on your disk.${
    opts.idempotencyKey ? `<br>Digest ${esc(opts.idempotencyKey)}` : ""
  }</td></tr></table></td></tr>
</table></td></tr></table></body></html>`;
}

function zero(): DigestCounts {
  return { faves: 0, comments: 0, watchers: 0, mentions: 0, notifications: 0, notes: 0, deviations: 0, changes: 0, problems: 0 };
}

function headline(c: DigestCounts): string {
  const news = c.faves + c.comments + c.watchers + c.mentions + c.notifications + c.notes + c.deviations + c.changes;
  if (news === 0 && c.problems === 0) return "A quiet day in your archive";
  if (news === 0) return `Your archive needs you: ${plural(c.problems, "thing")} to look at`;
  const bits: string[] = [];
  if (c.faves) bits.push(plural(c.faves, "fave"));
  if (c.comments) bits.push(plural(c.comments, "comment"));
  if (c.deviations) bits.push(plural(c.deviations, "new work"));
  if (c.notes && bits.length < 3) bits.push(plural(c.notes, "unread note"));
  if (c.watchers && bits.length < 3) bits.push(plural(c.watchers, "new watcher"));
  if (bits.length === 0) bits.push(summaryLine({ ...c, problems: 0 }));
  return `${bits.slice(0, 3).join(", ")} since last time`;
}

// ---- plain text -------------------------------------------------------------------------------------

function digestText(data: DigestData, opts: RenderOptions): string {
  const tz = opts.timezone;
  const out: string[] = [];
  const line = (s = "") => out.push(s);
  const acct = (a: string) => (multiAccount(data) ? `[${clean(a)}] ` : "");
  line(`dvault digest · ${windowLabel(data, tz)}`);
  line(summaryLine(data.counts) || "Nothing new in this window.");
  if (opts.mode === "preview") line("(Preview: nothing was sent and the digest window did not move.)");
  const f = data.feedback;
  if (f.faves.length || f.comments.length || f.watchers.length || f.other.length) {
    line();
    line("FEEDBACK");
    for (const g of f.faves) {
      const who = g.people === 1 ? `${name(g.names[0])} faved` : `${plural(g.people, "person", "people")} faved`;
      line(`  ${acct(g.account)}${who} “${title(g.deviation)}”${archivedText(g.deviation)}`);
      if (g.people > 1 && g.names.length) line(`    ${namesList(g.names, g.people)}`);
      if (safeUrl(g.deviation.url)) line(`    ${safeUrl(g.deviation.url)}`);
    }
    for (const c of f.comments) {
      line(`  ${acct(c.account)}${name(c.author)} ${c.kind === "reply" ? "replied" : "commented"}${c.deviation ? ` on “${title(c.deviation)}”` : ""} (${formatTime(c.postedAt, tz)})`);
      for (const l of c.body.split("\n")) line(`    > ${l}`);
    }
    if (f.commentsTotal > f.comments.length) line(`  …and ${plural(f.commentsTotal - f.comments.length, "comment")} more`);
    for (const o of f.other) line(`  ${acct(o.account)}${plural(o.count, `${clean(o.type)} notification`)}`);
    for (const [account, names] of watchersByAccount(data)) line(`  New watchers${account ? ` of ${clean(account)}` : ""}: ${names.join(", ")}`);
  }
  if (data.mentions.length) {
    line();
    line("MENTIONS");
    for (const m of data.mentions) {
      line(`  ${acct(m.account)}${name(m.by)} mentioned you${m.deviation ? ` in “${title(m.deviation)}”` : ""} (${formatTime(m.at, tz)})`);
      if (m.body) for (const l of m.body.split("\n")) line(`    > ${l}`);
    }
  }
  if (data.notes.unread.length) {
    line();
    line("UNREAD NOTES");
    for (const n of data.notes.unread) {
      line(`  ${acct(n.account)}From ${name(n.sender)}: “${clean(n.subject) || "(no subject)"}” (${formatTime(n.sentAt, tz)})`);
      if (n.preview) line(`    ${clean(n.preview)}`);
    }
    if (data.notes.olderUnread > 0) line(`  ${plural(data.notes.olderUnread, "older note")} still unread`);
  }
  if (data.deviations.items.length) {
    line();
    line("NEW FROM ARTISTS YOU WATCH");
    for (const d of data.deviations.items) {
      line(`  ${acct(d.account)}“${title(d.deviation)}” by ${name(d.artist)}${archivedText(d.deviation)}`);
      if (safeUrl(d.deviation.url)) line(`    ${safeUrl(d.deviation.url)}`);
    }
    if (data.deviations.total > data.deviations.items.length) line(`  …and ${data.deviations.total - data.deviations.items.length} more`);
  }
  if (data.changes.length) {
    line();
    line("CHANGES WORTH KNOWING");
    for (const c of data.changes) {
      const s = changeSentence(c);
      const keep = c.kind === "favourite_removed" ? (c.deviation?.archived ? " [your archive keeps it]" : " [not archived]") : "";
      line(`  ${acct(c.account)}${s.lead} ${s.rest}${keep} (${formatTime(c.at, tz)})`);
    }
  }
  line();
  line("ARCHIVE HEALTH");
  if (data.counts.problems === 0) line("  All good: every account is authorized and every source is syncing.");
  const marks: Record<HealthLine["level"], string> = { bad: "!!", warn: "! ", info: "- ", ok: "ok" };
  for (const h of healthLines(data.health, tz)) {
    line(`  ${marks[h.level]} ${h.head}`);
    if (h.detail) line(`     ${h.detail}`);
    if (h.command) line(`     Run: ${h.command}`);
  }
  line();
  line("--");
  line("New means new to your archive in this window: first seen by dvault, whatever the service's own dates say.");
  if (opts.idempotencyKey) line(`Digest ${opts.idempotencyKey}`);
  return out.join("\n") + "\n";
}

function archivedText(d: DeviationRef | null | undefined): string {
  return d?.archived === "original" ? " [archived]" : d?.archived === "reduced" ? " [archived, reduced]" : "";
}

// ---- alerts ---------------------------------------------------------------------------------------------

export function renderAlert(alert: AlertNotice, opts: RenderOptions): RenderedMessage {
  const tz = opts.timezone;
  const subject = `${alert.reminder ? "dvault reminder" : "dvault alert"}: ${alert.title}`;
  const since = `Since ${formatTime(alert.openedAt, tz, true)} (${tz})`;
  const reminderNote = alert.reminder
    ? "This is a daily reminder: the problem is still there."
    : "You will get a reminder at most once a day while this lasts, and nothing more once it is resolved.";
  const html = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><title>${esc(subject)}</title></head>
<body style="margin:0;padding:0;background:${C.page};">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:${C.page};"><tr><td align="center" style="padding:28px 12px;">
<table role="presentation" width="560" cellpadding="0" cellspacing="0" border="0" style="width:560px;max-width:100%;background:${C.card};border:1px solid ${C.border};border-radius:12px;overflow:hidden;">
<tr><td style="background:${C.badInk};padding:20px 28px;"><div style="${text(12, "#ffd9d4", 700, "letter-spacing:2px;text-transform:uppercase;")}">dvault ${alert.reminder ? "reminder" : "alert"}</div>
<div style="margin-top:6px;${text(20, "#ffffff", 700)}">${esc(alert.title)}</div></td></tr>
<tr><td style="padding:22px 28px 6px 28px;${text(15, C.ink)}">${esc(alert.body)}</td></tr>
${
  alert.command
    ? `<tr><td style="padding:10px 28px 0 28px;"><code style="display:inline-block;padding:6px 12px;border-radius:5px;background:${C.band};color:#d7f5e6;font-family:SFMono-Regular,Menlo,Consolas,monospace;font-size:14px;">${esc(alert.command)}</code></td></tr>`
    : ""
}
<tr><td style="padding:18px 28px 24px 28px;${text(12, C.faint)}">${esc(since)}. ${esc(reminderNote)}${opts.idempotencyKey ? `<br>Alert ${esc(opts.idempotencyKey)}` : ""}</td></tr>
</table></td></tr></table></body></html>`;
  const textBody = [
    `${alert.reminder ? "dvault reminder" : "dvault alert"}: ${alert.title}`,
    "",
    alert.body,
    ...(alert.command ? ["", `Run: ${alert.command}`] : []),
    "",
    `${since}. ${reminderNote}`,
    ...(opts.idempotencyKey ? [`Alert ${opts.idempotencyKey}`] : []),
    "",
  ].join("\n");
  return { subject, html, text: textBody, preheader: alert.body };
}
