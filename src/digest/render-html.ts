// The digest as an HTML mail: tables with inline styles (what survives Gmail, Outlook and Apple Mail), built
// with the escape-by-default html`` template of src/text/html.ts, so every string the service provided
// (titles, names, comments, notes) is text however it is spelled; only dvault's own markup is html`` or raw().
import {
  countsInWords,
  DIGEST_ARTISTS,
  NOT_ARCHIVABLE_WORDS,
  type NotArchivable,
  shortfallInWords,
  sourceInWords,
  topArtists,
} from "../text/not-archivable.ts";
import { html, raw, type SafeHtml } from "../text/html.ts";
import {
  C,
  changeKeepsWork,
  changeSentence,
  formatTime,
  type HealthLine,
  headline,
  healthLines,
  multiAccount,
  name,
  namesList,
  type RenderOptions,
  safeUrl,
  summaryLine,
  text,
  title,
  watchersByAccount,
  windowLabel,
  zero,
} from "./render-common.ts";
import { clean, shorten } from "./text.ts";
import { plural } from "../text/plural.ts";
import type { DeviationRef, DigestData, Health } from "./types.ts";

type Fragment = SafeHtml | "";

/** Only the service's own pages are linked: http(s) URLs, escaped like any other value. */
function link(url: string | null | undefined, inner: SafeHtml, color = C.link): SafeHtml {
  const href = safeUrl(url);
  return href ? html`<a href="${href}" style="color:${color};text-decoration:none;">${inner}</a>` : inner;
}

function badge(label: string, ink: string, bg: string): SafeHtml {
  return html`<span style="display:inline-block;padding:1px 7px;border-radius:9px;background:${bg};${text(11, ink, 600, "line-height:16px;")}white-space:nowrap;">${label}</span>`;
}

function archivedBadge(d: DeviationRef | null | undefined): Fragment {
  if (d?.archived === "original") return badge("✓ archived", C.okInk, C.okBg);
  if (d?.archived === "reduced") return badge("✓ archived (reduced)", C.warnInk, C.warnBg);
  return "";
}

/**
 * An image source: an http(s) URL, an inline raster or SVG image (inert inside <img>), an inline part of the
 * mail (`cid:`), or a file the file channel writes beside the HTML (digest images.ts).
 */
function safeImageSrc(src: string | null | undefined): string | null {
  if (src && /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=]+$/.test(src)) return src;
  if (src && /^cid:[A-Za-z0-9._@-]+$/.test(src)) return src;
  if (src && /^[A-Za-z0-9._-]+\/[0-9a-f]{64}\.webp$/.test(src)) return src;
  return safeUrl(src);
}

/** A round placeholder with a person's initial, where a list row is about someone rather than a work. */
function avatar(person: string | null | undefined, size = 64): SafeHtml {
  const initial = Array.from(clean(person) || "?")[0]?.toUpperCase() ?? "?";
  return html`<table role="presentation" width="${size}" cellpadding="0" cellspacing="0" border="0"><tr><td width="${size}" height="${size}" align="center" valign="middle" style="width:${size}px;height:${size}px;border-radius:${size / 2}px;background:#d9e4de;${text(Math.round(size * 0.42), C.muted, 700)}">${initial}</td></tr></table>`;
}

/** A thumbnail linked to the deviation's page; mature works and missing images get a quiet placeholder. */
function thumb(d: DeviationRef | null | undefined, w: number, h: number): SafeHtml {
  const src = d && !d.isMature ? safeImageSrc(d.thumbUrl) : null;
  const inner = src
    ? html`<img src="${src}" width="${w}" height="${h}" alt="${title(d)}" style="display:block;width:${w}px;height:${h}px;object-fit:cover;border:0;border-radius:6px;background:#dfe7e2;${text(11, C.muted)}">`
    : html`<table role="presentation" width="${w}" cellpadding="0" cellspacing="0" border="0"><tr><td width="${w}" height="${h}" align="center" valign="middle" style="width:${w}px;height:${h}px;border-radius:6px;background:#dfe7e2;${text(11, C.muted, 600)}">${d?.isMature ? "mature" : "no preview"}</td></tr></table>`;
  return link(d?.url, inner);
}

function sectionHeader(heading: string, count?: string): SafeHtml {
  return html`<tr><td style="padding:26px 32px 4px 32px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr>
<td style="border-left:4px solid ${C.accent};padding:0 0 0 10px;${text(17, C.ink, 700, "letter-spacing:-0.2px;")}">${heading}${
    count ? html` <span style="${text(14, C.faint, 400)}">${count}</span>` : ""
  }</td></tr></table></td></tr>`;
}

function sectionBody(inner: SafeHtml): SafeHtml {
  return html`<tr><td style="padding:8px 32px 4px 32px;">${inner}</td></tr>`;
}

/** One row of a list: an optional picture on the left, lines on the right. */
type ListRow = { left: SafeHtml | null; right: SafeHtml; leftWidth?: number };

function listRow(left: SafeHtml | null, right: SafeHtml, leftWidth = 76): ListRow {
  return { left, right, leftWidth };
}

/** Rows with a hairline between them; rows without a picture span both columns, so mixed lists stay aligned. */
function list(rows: readonly ListRow[]): SafeHtml {
  const cells = rows.map((r, i) => {
    const border = i < rows.length - 1 ? raw("border-bottom:1px solid #eef1ec;") : "";
    const w = r.leftWidth ?? 76;
    const left = r.left ? html`<td width="${w}" valign="top" style="width:${w}px;padding:10px 12px 10px 0;${border}">${r.left}</td>` : "";
    return html`<tr>${left}<td valign="top"${r.left ? "" : raw(' colspan="2"')} style="padding:10px 0;${border}">${r.right}</td></tr>`;
  });
  return html`<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0">${cells}</table>`;
}

function quoteBlock(body: string): SafeHtml {
  return html`<div style="margin-top:6px;padding:8px 12px;border-left:3px solid ${C.border};border-radius:0 6px 6px 0;background:${C.quote};${text(14, C.ink)}white-space:pre-wrap;">${body}</div>`;
}

const accountTag = (data: DigestData, account: string): Fragment =>
  multiAccount(data) ? html`<span style="${text(12, C.faint)}">${clean(account)} · </span>` : "";

function more(shown: number, total: number, what: string): Fragment {
  return total > shown ? html`<p style="margin:8px 0 0 0;${text(13, C.muted)}">…and ${plural(total - shown, what)} more.</p>` : "";
}

function feedbackHtml(data: DigestData, tz: string): SafeHtml {
  const f = data.feedback;
  const rows: ListRow[] = [];
  for (const g of f.faves) {
    const people = g.people === 1 ? html`<b>${name(g.names[0])}</b> faved` : html`<b>${plural(g.people, "person", "people")}</b> faved`;
    const who = g.people > 1 && g.names.length ? html`<div style="${text(13, C.muted)}">${namesList(g.names, g.people)}</div>` : "";
    rows.push(
      listRow(
        thumb(g.deviation, 64, 64),
        html`<div style="${text(15, C.ink)}">${accountTag(data, g.account)}${people} ${link(g.deviation.url, html`<b>${title(g.deviation)}</b>`)} ${archivedBadge(g.deviation)}</div>${who}`,
      ),
    );
  }
  for (const c of f.comments) {
    const verb = c.kind === "reply" ? "replied" : "commented";
    const on = c.deviation ? html` on ${link(c.deviation.url, html`<b>${title(c.deviation)}</b>`)}` : "";
    rows.push(
      listRow(
        c.deviation ? thumb(c.deviation, 64, 64) : null,
        html`<div style="${text(15, C.ink)}">${accountTag(data, c.account)}<b>${name(c.author)}</b> ${verb}${on} <span style="${text(12, C.faint)}">${formatTime(c.postedAt, tz)}</span></div>${c.body ? quoteBlock(c.body) : ""}`,
      ),
    );
  }
  for (const o of f.other) {
    rows.push(listRow(null, html`<div style="${text(14, C.ink)}">${accountTag(data, o.account)}${plural(o.count, `${clean(o.type)} notification`)}</div>`));
  }
  const watchers = watchersByAccount(data).map(
    ([account, names]) =>
      html`<p style="margin:14px 0 6px 0;${text(15, C.ink, 600)}">${plural(names.length, "new watcher")}${account ? html` of ${clean(account)}` : ""}</p><div>${names.map(
        (n) =>
          html`<span style="display:inline-block;margin:0 6px 6px 0;padding:3px 10px;border-radius:12px;background:${C.accentSoft};${text(13, C.ink)}">${n}</span>`,
      )}</div>`,
  );
  return html`${rows.length ? list(rows) : ""}${more(f.faves.length, f.favedWorks, "faved work")}${more(f.comments.length, f.commentsTotal, "comment")}${watchers}${more(f.watchers.length, f.watchersTotal, "new watcher")}`;
}

function mentionsHtml(data: DigestData, tz: string): SafeHtml {
  const rows = data.mentions.map((m) =>
    listRow(
      m.deviation ? thumb(m.deviation, 64, 64) : null,
      html`<div style="${text(15, C.ink)}">${accountTag(data, m.account)}<b>${name(m.by)}</b> mentioned you${
        m.deviation ? html` in ${link(m.deviation.url, html`<b>${title(m.deviation)}</b>`)}` : ""
      } <span style="${text(12, C.faint)}">${formatTime(m.at, tz)}</span></div>${m.body ? quoteBlock(m.body) : ""}`,
    ),
  );
  return html`${list(rows)}${more(data.mentions.length, data.mentionsTotal, "mention")}`;
}

function notesHtml(data: DigestData, tz: string): SafeHtml {
  const n = data.notes;
  const rows = n.unread.map((note) =>
    listRow(
      avatar(note.sender, 44),
      html`<div style="${text(15, C.ink)}">${accountTag(data, note.account)}<b>${name(note.sender)}</b> · ${clean(note.subject) || "(no subject)"} <span style="${text(12, C.faint)}">${formatTime(note.sentAt, tz)}</span></div>${
        note.preview ? html`<div style="${text(14, C.muted)}">${clean(note.preview)}</div>` : ""
      }`,
      56,
    ),
  );
  const older = n.olderUnread > 0 ? html`<p style="margin:8px 0 0 0;${text(13, C.muted)}">${plural(n.olderUnread, "older note")} still unread.</p>` : "";
  return html`${list(rows)}${more(n.unread.length, n.total, "note")}${older}`;
}

function deviationsHtml(data: DigestData, tz: string): SafeHtml {
  const items = data.deviations.items;
  const cells = items.map((item) => {
    const d = item.deviation;
    const badge = archivedBadge(d);
    return html`<td width="192" valign="top" style="width:192px;padding:0 6px 18px 6px;">${thumb(d, 180, 135)}
<div style="margin-top:6px;${text(14, C.ink, 600)}">${link(d.url, html`${shorten(title(d), 48)}`, C.ink)}</div>
<div style="${text(12, C.muted)}">${accountTag(data, item.account)}by ${name(item.artist)}${item.publishedAt ? html` · ${formatTime(item.publishedAt, tz)}` : ""}</div>
${badge ? html`<div style="margin-top:3px;">${badge}</div>` : ""}</td>`;
  });
  const rows: SafeHtml[] = [];
  for (let i = 0; i < cells.length; i += 3) {
    const row = cells.slice(i, i + 3);
    while (row.length < 3) row.push(html`<td width="192" style="width:192px;padding:0 6px;"></td>`);
    rows.push(html`<tr>${row}</tr>`);
  }
  return html`<table role="presentation" width="576" cellpadding="0" cellspacing="0" border="0" style="width:576px;max-width:100%;">${rows}</table>${more(items.length, data.deviations.total, "deviation")}`;
}

function changesHtml(data: DigestData, tz: string): SafeHtml {
  const rows = data.changes.map((c) => {
    const s = changeSentence(c);
    const keep = changeKeepsWork(c)
      ? c.deviation?.archived
        ? html` ${badge("your archive keeps it", C.okInk, C.okBg)}`
        : html` ${badge("not archived", C.warnInk, C.warnBg)}`
      : "";
    return listRow(
      c.deviation ? thumb(c.deviation, 64, 64) : avatar(c.username),
      html`<div style="${text(15, C.ink)}">${accountTag(data, c.account)}<b>${s.lead}</b> ${s.rest}${keep}</div><div style="${text(12, C.faint)}">${formatTime(c.at, tz)}</div>`,
    );
  });
  return list(rows);
}

/** Per reason: how many, why, and what the user can do; then per artist. Names are the service's: escaped. */
function notArchivableHtml(v: NotArchivable): SafeHtml {
  const reasons = v.byReason.map((r) =>
    listRow(
      html`<div style="${text(20, C.ink, 700, "text-align:center;")}">${r.count}</div>`,
      html`<div style="${text(14, C.ink, 600)}">${NOT_ARCHIVABLE_WORDS[r.reason].label}</div><div style="${text(13, C.muted)}">${r.why}.</div><div style="${text(13, C.ink)}">What you can do: ${r.action}.</div>`,
      56,
    ),
  );
  const { shown, more } = topArtists(v, DIGEST_ARTISTS);
  const artists = shown.map((a) =>
    listRow(
      null,
      html`<div style="${text(14, C.ink)}"><b>${clean(a.artist)}</b> <span style="${text(12, C.muted)}">${clean(sourceInWords(a))}</span></div><div style="${text(13, C.muted)}">${countsInWords(a.counts)}${shortfallInWords(a)}</div>`,
    ),
  );
  const rest = more > 0 ? html`<div style="${text(13, C.muted)}">…and ${more} more (dvault status lists every one)</div>` : "";
  return html`${list(reasons)}${artists.length ? html`<div style="margin-top:10px;${text(12, C.faint, 700, "letter-spacing:0.6px;text-transform:uppercase;")}">Per artist</div>${list(artists)}${rest}` : ""}`;
}

const LEVEL_STYLE: Record<HealthLine["level"], { ink: string; bg: string; label: string }> = {
  bad: { ink: C.badInk, bg: C.badBg, label: "ACTION" },
  warn: { ink: C.warnInk, bg: C.warnBg, label: "SOON" },
  info: { ink: C.muted, bg: "#eef1ec", label: "INFO" },
  ok: { ink: C.okInk, bg: C.okBg, label: "OK" },
};

function healthHtml(h: Health, tz: string, problems: number): SafeHtml {
  const rows = healthLines(h, tz).map((l) => {
    const st = LEVEL_STYLE[l.level];
    const command = l.command
      ? html`<div style="margin-top:6px;"><code style="display:inline-block;padding:4px 10px;border-radius:5px;background:${C.band};color:#d7f5e6;font-family:SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;">${l.command}</code></div>`
      : "";
    return listRow(
      html`<span style="display:inline-block;width:56px;text-align:center;padding:2px 0;border-radius:4px;background:${st.bg};${text(10, st.ink, 700, "letter-spacing:0.6px;")}">${st.label}</span>`,
      html`<div style="${text(14, C.ink, l.level === "bad" ? 600 : 400)}">${l.head}</div>${l.detail ? html`<div style="${text(13, C.muted)}">${l.detail}</div>` : ""}${command}`,
    );
  });
  const intro =
    problems === 0 ? html`<p style="margin:0 0 4px 0;${text(14, C.okInk, 600)}">All good: every account is authorized and every source is syncing.</p>` : "";
  return html`${intro}${list(rows)}`;
}

function chip(count: number, label: string): SafeHtml {
  return html`<td style="padding:0 8px 8px 0;"><table role="presentation" cellpadding="0" cellspacing="0" border="0"><tr><td style="padding:8px 12px;border-radius:8px;background:rgba(255,255,255,0.08);border:1px solid rgba(255,255,255,0.14);"><div style="${text(20, "#ffffff", 700, "line-height:1.1;")}">${count}</div><div style="${text(11, C.bandMuted, 600, "letter-spacing:0.4px;text-transform:uppercase;")}">${label}</div></td></tr></table></td>`;
}

/** Fragments one per line, as the mail's source reads best. */
function lines(parts: readonly SafeHtml[]): SafeHtml[] {
  return parts.flatMap((p, i) => (i === 0 ? [p] : [html`\n`, p]));
}

function sectionsHtml(data: DigestData, tz: string): SafeHtml[] {
  const c = data.counts;
  const sections: SafeHtml[] = [];
  const feedbackCount = c.faves + c.comments + c.watchers + c.notifications;
  if (feedbackCount > 0)
    sections.push(
      sectionHeader("Feedback", summaryLine({ ...zero(), faves: c.faves, comments: c.comments, watchers: c.watchers })),
      sectionBody(feedbackHtml(data, tz)),
    );
  if (data.mentions.length) sections.push(sectionHeader("Mentions", String(data.mentionsTotal)), sectionBody(mentionsHtml(data, tz)));
  if (data.notes.unread.length) sections.push(sectionHeader("Unread notes", String(data.notes.total)), sectionBody(notesHtml(data, tz)));
  if (data.deviations.items.length)
    sections.push(sectionHeader("New from artists you watch", String(data.deviations.total)), sectionBody(deviationsHtml(data, tz)));
  if (data.changes.length) sections.push(sectionHeader("Changes worth knowing", String(data.changes.length)), sectionBody(changesHtml(data, tz)));
  if (sections.length === 0) {
    const waiting = data.accounts.filter((a) => !a.baselineComplete);
    const note = waiting.length
      ? `The first full sync of ${waiting.map((a) => `“${clean(a.name)}”`).join(", ")} has not completed yet: what it brings in is your archive's starting point, not news.`
      : "Nothing new reached your archive in this window.";
    sections.push(sectionBody(html`<p style="margin:18px 0 0 0;${text(15, C.muted)}">${note}</p>`));
  }
  const na = data.notArchivable;
  if (na && na.total > 0) sections.push(sectionHeader("Not archived in full", plural(na.total, "work")), sectionBody(notArchivableHtml(na)));
  sections.push(
    sectionHeader("Archive health", c.problems ? `${plural(c.problems, "item")} to look at` : undefined),
    sectionBody(healthHtml(data.health, tz, c.problems)),
  );
  return sections;
}

export function digestHtml(data: DigestData, opts: RenderOptions, subject: string, preheader: string): string {
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
  const previewNote =
    opts.mode === "preview"
      ? html`<tr><td style="padding:10px 32px;background:${C.warnBg};${text(13, C.warnInk, 600)}">Preview: nothing was sent and the digest window did not move.</td></tr>`
      : "";
  const accounts = data.accounts.map((a) => clean(a.username ?? a.name)).join(", ");
  return html`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light only"><meta name="supported-color-schemes" content="light"><title>${subject}</title></head>
<body style="margin:0;padding:0;background:${C.page};-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;opacity:0;">${preheader}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="background:${C.page};"><tr><td align="center" style="padding:28px 12px;">
<table role="presentation" width="640" cellpadding="0" cellspacing="0" border="0" style="width:640px;max-width:100%;background:${C.card};border:1px solid ${C.border};border-radius:12px;overflow:hidden;">
<tr><td style="background:${C.band};padding:26px 32px 18px 32px;">
<div style="${text(13, C.bandMuted, 700, "letter-spacing:2px;text-transform:uppercase;")}">dvault <span style="color:${C.accent};">●</span> digest</div>
<div style="margin-top:6px;${text(24, "#ffffff", 700, "letter-spacing:-0.3px;line-height:1.25;")}">${headline(c)}</div>
<div style="margin-top:4px;${text(13, C.bandMuted)}">${windowLabel(data, tz)}${accounts ? html` · ${accounts}` : ""}</div>
${chips.length ? html`<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin-top:16px;"><tr>${chips.map(([n, l]) => chip(n, l))}</tr></table>` : ""}
</td></tr>
${previewNote}
${lines(sectionsHtml(data, tz))}
<tr><td style="padding:26px 32px 26px 32px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0"><tr><td style="border-top:1px solid ${C.border};padding-top:14px;${text(12, C.faint)}">
New means new to your archive in this window: first seen by dvault, whatever the service's own dates say. Thumbnails link to the service; “archived” means the file is on your disk.${
    opts.idempotencyKey ? html`<br>Digest ${opts.idempotencyKey}` : ""
  }</td></tr></table></td></tr>
</table></td></tr></table></body></html>`.text;
}
