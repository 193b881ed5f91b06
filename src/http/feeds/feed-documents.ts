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
import type { AtomEntry, AtomFeed } from "./atom.ts";

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

function shorten(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1).trimEnd()}…` : text;
}

function newest(entries: readonly AtomEntry[], now: Date): Date {
  return entries[0]?.updated ?? now;
}

/** What an arrival and a notification have in common: everything but the words. */
type EntryParts = {
  id: string;
  title: string;
  firstSeenAt: Date;
  author: string;
  /** dvault's page for the entry: the item page, or an artist's archive page. */
  alternate: string;
  /** The item page, which the picture links to, when the entry is about a deviation. */
  itemUrl: string | null;
  category: string;
  /** One line of who and what (dvault's own markup). */
  line: SafeHtml;
  /** The service's text (HTML as received), shown as plain text, shortened. */
  text: string | null;
  file: StoredFileRef | null;
};

/**
 * What an entry links of its stored file: the file by its download id, and its thumbnails by a content hash
 * that names them. The feed routes record exactly this for the token (src/db/feed-token.repository.ts), so the
 * token opens what its feeds linked and nothing else.
 */
export function linkedFile(file: StoredFileRef | null): { downloadId: string; sha256: string | null } | null {
  if (!file) return null;
  return { downloadId: file.downloadId, sha256: file.sha256 && /^[0-9a-f]{64}$/.test(file.sha256) ? file.sha256 : null };
}

/**
 * An entry with the stored file as an enclosure (type and size), the picture in the content (the 1280 px
 * thumbnail, linked to the item page) and the 320 px tile as media:thumbnail, all under the feed's token.
 */
function entry(at: FeedBase, p: EntryParts): AtomEntry {
  const under = `${at.base}/feeds/${at.token}`;
  const fileUrl = p.file ? `${under}/files/${p.file.downloadId}` : null;
  const sha256 = linkedFile(p.file)?.sha256 ?? null;
  const thumb = (size: "s" | "m") => (sha256 ? `${under}/thumb/${size}/${sha256}.webp` : null);
  const picture = thumb("m");
  const text = htmlToText(p.text);
  const stored =
    p.file && fileUrl
      ? html`<p><a href="${fileUrl}">stored file</a> (${fileKind(p.file).label}${p.file.size !== null ? `, ${formatBytes(p.file.size)}` : ""})</p>`
      : "";
  const tile = thumb("s");
  return {
    id: p.id,
    title: p.title,
    updated: p.firstSeenAt,
    published: p.firstSeenAt,
    author: p.author,
    links: [
      { rel: "alternate", href: p.alternate, type: "text/html" },
      ...(p.file && fileUrl ? [{ rel: "enclosure" as const, href: fileUrl, type: p.file.mime, length: p.file.size }] : []),
    ],
    categories: [p.category],
    thumbnail: tile ? { url: tile } : null,
    contentHtml:
      html`${picture ? html`<p><a href="${p.itemUrl ?? fileUrl ?? p.alternate}"><img src="${picture}" alt="${p.title}"></a></p>` : ""}<p>${p.line}</p>${text ? html`<p>${shorten(text)}</p>` : ""}${stored}`
        .text,
  };
}

function arrivalEntry(at: FeedBase, a: ArrivalEntry): AtomEntry {
  const itemUrl = `${at.base}/item/${encodeURIComponent(a.deviationid)}`;
  const facts = [a.type, a.publishedAt ? `published ${a.publishedAt.toISOString().slice(0, 10)}` : null, a.file ? null : "not archived yet"].filter(Boolean);
  const artist = a.artist ? html`<a href="${at.base}/archive?artist=${encodeURIComponent(a.artist)}">${a.artist}</a>` : "unknown artist";
  return entry(at, {
    id: `${TAG}deviation:${encodeURIComponent(a.deviationid)}`,
    title: shownTitle(a.title),
    firstSeenAt: a.firstSeenAt,
    author: a.artist ?? "unknown artist",
    alternate: itemUrl,
    itemUrl,
    category: a.type ?? "deviation",
    line: html`by ${artist} · ${facts.join(" · ")}`,
    text: a.summary,
    file: a.file,
  });
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
  const kind = n.kind === "note" ? "note" : (n.type ?? "message");
  return entry(at, {
    id: `${TAG}${n.kind}:${n.accountId}:${encodeURIComponent(n.id)}`,
    title: notificationTitle(n),
    firstSeenAt: n.firstSeenAt,
    author: n.actor ?? "unknown user",
    alternate: itemUrl ?? (n.actor ? `${at.base}/archive?artist=${encodeURIComponent(n.actor)}` : `${at.base}/`),
    itemUrl,
    category: kind,
    line: html`${kind} · account ${n.account}`,
    text: n.body,
    file: n.file,
  });
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
