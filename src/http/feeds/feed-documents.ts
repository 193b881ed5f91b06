// The three feeds as Atom documents: the archive's new arrivals, one artist's new work, and the accounts'
// notifications. Entries link to dvault's own pages and files, never the service: the item page for a person
// (behind the dashboard token when one is set), the stored file and its thumbnail under the feed's token so a
// reader can fetch them without the dashboard's.
import type { StoredFileRef } from "../../db/archive-browser.repository.ts";
import type { ArrivalEntry, NotificationEntry } from "../../db/archive-feed.repository.ts";
import { formatBytes } from "../../text/bytes.ts";
import { html, type SafeHtml } from "../../text/html.ts";
import { htmlToText } from "../../text/html-to-text.ts";
import { fileKind } from "../pages/files.ts";
import { title as shownTitle } from "../pages/layout.ts";
import type { AtomEntry, AtomFeed, AtomLink } from "./atom.ts";

/** How many entries a feed carries: enough for a reader polling hourly, small enough to fetch quickly. */
export const FEED_ENTRIES = 50;
/** Entry and feed ids: tag URIs (RFC 4151) from ids the service gave, so they never change. */
const TAG = "tag:dvault,2026:";
const SUMMARY_CHARS = 600;

/** Where a feed's links point: the absolute base (DVAULT_PUBLIC_URL, else the address asked) and the token. */
export type FeedBase = { base: string; token: string };

export type FeedName = { kind: "arrivals" } | { kind: "notifications" } | { kind: "artist"; username: string };

/** A feed's path under the base: /feeds/<token>/arrivals.atom, .../notifications.atom, .../artists/<name>.atom. */
export function feedPath(token: string, feed: FeedName): string {
  const name = feed.kind === "artist" ? `artists/${encodeURIComponent(feed.username)}` : feed.kind;
  return `/feeds/${token}/${name}.atom`;
}

function fileLinks(at: FeedBase, file: StoredFileRef | null): { links: AtomLink[]; thumb: string | null; fileUrl: string | null } {
  if (!file) return { links: [], thumb: null, fileUrl: null };
  const fileUrl = `${at.base}/feeds/${at.token}/files/${file.downloadId}`;
  const thumb = file.sha256 && /^[0-9a-f]{64}$/.test(file.sha256) ? `${at.base}/feeds/${at.token}/thumb/m/${file.sha256}.webp` : null;
  return { links: [{ rel: "enclosure", href: fileUrl, type: file.mime, length: file.size }], thumb, fileUrl };
}

function shorten(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1).trimEnd()}…` : text;
}

/** The picture (linked to the item page), what the entry says, and the stored file with what it is. */
function content(p: {
  itemUrl: string | null;
  thumb: string | null;
  alt: string;
  lines: SafeHtml[];
  text: string;
  file: StoredFileRef | null;
  fileUrl: string | null;
}) {
  const picture = p.thumb ? html`<p><a href="${p.itemUrl ?? p.fileUrl ?? ""}"><img src="${p.thumb}" alt="${p.alt}"></a></p>` : "";
  const stored =
    p.file && p.fileUrl
      ? html`<p><a href="${p.fileUrl}">stored file</a> (${fileKind(p.file).label}${p.file.size !== null ? `, ${formatBytes(p.file.size)}` : ""})</p>`
      : "";
  return html`${picture}${p.lines.map((l) => html`<p>${l}</p>`)}${p.text ? html`<p>${shorten(p.text)}</p>` : ""}${stored}`.text;
}

function newest(entries: readonly AtomEntry[], now: Date): Date {
  return entries[0]?.updated ?? now;
}

function arrivalEntry(at: FeedBase, a: ArrivalEntry): AtomEntry {
  const itemUrl = `${at.base}/item/${encodeURIComponent(a.deviationid)}`;
  const { links, thumb, fileUrl } = fileLinks(at, a.file);
  const artist = a.artist ?? "unknown artist";
  const facts = [a.type, a.publishedAt ? `published ${a.publishedAt.toISOString().slice(0, 10)}` : null, a.file ? null : "not archived yet"].filter(Boolean);
  return {
    id: `${TAG}deviation:${encodeURIComponent(a.deviationid)}`,
    title: shownTitle(a.title),
    updated: a.firstSeenAt,
    published: a.firstSeenAt,
    author: artist,
    links: [{ rel: "alternate", href: itemUrl, type: "text/html" }, ...links],
    categories: a.type ? [a.type] : [],
    thumbnail: thumb ? { url: thumb } : null,
    contentHtml: content({
      itemUrl,
      thumb,
      alt: shownTitle(a.title),
      lines: [html`by ${a.artist ? html`<a href="${at.base}/archive?artist=${encodeURIComponent(a.artist)}">${a.artist}</a>` : artist} · ${facts.join(" · ")}`],
      text: htmlToText(a.summary),
      file: a.file,
      fileUrl,
    }),
  };
}

export function arrivalsFeed(at: FeedBase, arrivals: readonly ArrivalEntry[], now: Date): AtomFeed {
  const entries = arrivals.map((a) => arrivalEntry(at, a));
  return {
    id: `${TAG}feed:arrivals`,
    title: "dvault: new in the archive",
    subtitle: "Deviations dvault archived, newest first",
    updated: newest(entries, now),
    author: "dvault",
    selfUrl: `${at.base}${feedPath(at.token, { kind: "arrivals" })}`,
    alternateUrl: `${at.base}/archive`,
    entries,
  };
}

export function artistFeed(at: FeedBase, artist: { userid: string; username: string }, arrivals: readonly ArrivalEntry[], now: Date): AtomFeed {
  const entries = arrivals.map((a) => arrivalEntry(at, a));
  return {
    id: `${TAG}feed:artist:${encodeURIComponent(artist.userid)}`,
    title: `dvault: ${artist.username}`,
    subtitle: `New work by ${artist.username} in the archive`,
    updated: newest(entries, now),
    author: artist.username,
    selfUrl: `${at.base}${feedPath(at.token, { kind: "artist", username: artist.username })}`,
    alternateUrl: `${at.base}/archive?artist=${encodeURIComponent(artist.username)}`,
    entries,
  };
}

/** "faved", "commented on" ...: what the actor did; an unknown type is shown as it is. */
const VERBS: Record<string, string> = {
  fave: "faved",
  comment: "commented on",
  reply: "replied to",
  "mention.comment": "mentioned you in a comment on",
  "mention.deviation": "mentioned you in",
  watch: "started watching you",
  collect: "added to a collection",
};

function notificationTitle(n: NotificationEntry): string {
  const who = n.actor ?? "someone";
  if (n.kind === "note") return `Note from ${who}: ${n.subject?.trim() || "(no subject)"}`;
  const verb = VERBS[n.type ?? ""] ?? (n.type ? `${n.type}` : "notification");
  return n.deviationid ? `${who} ${verb} ${shownTitle(n.subjectTitle)}` : `${who} ${verb}`;
}

function notificationEntry(at: FeedBase, n: NotificationEntry): AtomEntry {
  const itemUrl = n.deviationid ? `${at.base}/item/${encodeURIComponent(n.deviationid)}` : null;
  const alternate = itemUrl ?? (n.actor ? `${at.base}/archive?artist=${encodeURIComponent(n.actor)}` : `${at.base}/`);
  const { links, thumb, fileUrl } = fileLinks(at, n.file);
  const title = notificationTitle(n);
  return {
    id: `${TAG}${n.kind}:${n.accountId}:${encodeURIComponent(n.id)}`,
    title,
    updated: n.firstSeenAt,
    published: n.firstSeenAt,
    author: n.actor ?? "unknown user",
    links: [{ rel: "alternate", href: alternate, type: "text/html" }, ...links],
    categories: [n.kind === "note" ? "note" : (n.type ?? "message")],
    thumbnail: thumb ? { url: thumb } : null,
    contentHtml: content({
      itemUrl,
      thumb,
      alt: title,
      lines: [html`${n.kind === "note" ? "note" : (n.type ?? "message")} · account ${n.account}`],
      text: htmlToText(n.body),
      file: n.file,
      fileUrl,
    }),
  };
}

export function notificationsFeed(at: FeedBase, notifications: readonly NotificationEntry[], now: Date): AtomFeed {
  const entries = notifications.map((n) => notificationEntry(at, n));
  return {
    id: `${TAG}feed:notifications`,
    title: "dvault: notifications",
    subtitle: "Faves, comments, mentions and notes of the archived accounts",
    updated: newest(entries, now),
    author: "dvault",
    selfUrl: `${at.base}${feedPath(at.token, { kind: "notifications" })}`,
    alternateUrl: `${at.base}/feeds`,
    entries,
  };
}
