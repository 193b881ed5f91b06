// The digest's plain-text twin: the same sections as the HTML, for mail clients that show text and for the
// file channel. Service-provided strings are cleaned (controls made visible) but, being text, not escaped.
import {
  archivedText,
  changeKeepsWork,
  changeSentence,
  formatTime,
  type HealthLine,
  healthLines,
  multiAccount,
  name,
  namesList,
  type RenderOptions,
  safeUrl,
  summaryLine,
  title,
  watchersByAccount,
  windowLabel,
} from "./render-common.ts";
import { terminalText } from "../text/controls.ts";
import { DIGEST_ARTISTS, notArchivableLines } from "../text/not-archivable.ts";
import { clean } from "./text.ts";
import { plural } from "../text/plural.ts";
import type { DigestData } from "./types.ts";

export function digestText(data: DigestData, opts: RenderOptions): string {
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
      line(
        `  ${acct(c.account)}${name(c.author)} ${c.kind === "reply" ? "replied" : "commented"}${c.deviation ? ` on “${title(c.deviation)}”` : ""} (${formatTime(c.postedAt, tz)})`,
      );
      for (const l of c.body.split("\n")) line(`    > ${l}`);
    }
    if (f.favedWorks > f.faves.length) line(`  …and ${plural(f.favedWorks - f.faves.length, "faved work")} more`);
    if (f.commentsTotal > f.comments.length) line(`  …and ${plural(f.commentsTotal - f.comments.length, "comment")} more`);
    for (const o of f.other) line(`  ${acct(o.account)}${plural(o.count, `${clean(o.type)} notification`)}`);
    for (const [account, names] of watchersByAccount(data)) line(`  New watchers${account ? ` of ${clean(account)}` : ""}: ${names.join(", ")}`);
    if (f.watchersTotal > f.watchers.length) line(`  …and ${plural(f.watchersTotal - f.watchers.length, "new watcher")} more`);
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
      const keep = changeKeepsWork(c) ? (c.deviation?.archived ? " [your archive keeps it]" : " [not archived]") : "";
      line(`  ${acct(c.account)}${s.lead} ${s.rest}${keep} (${formatTime(c.at, tz)})`);
    }
  }
  const na = data.notArchivable;
  if (na && na.total > 0) {
    const lines = notArchivableLines(na, DIGEST_ARTISTS);
    line();
    line(`NOT ARCHIVED IN FULL (${plural(na.total, "work")})`);
    for (const l of lines.reasons) line(`  ${l}`);
    for (const l of lines.artists) line(`  - ${clean(l)}`);
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
  // Every field at once (quotes too, not only what clean() saw), controls as escapes: a terminal showing the .txt obeys ESC.
  return `${terminalText(out.join("\n"))}\n`;
}
