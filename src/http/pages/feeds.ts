// The feeds page: every live feed token's URLs (new arrivals, notifications, each watched or tracked artist),
// and how to make or revoke one. It sits behind the dashboard token like every page; the feeds themselves
// need only their own token (src/http/routes/feeds.ts).
import type { FeedArtist } from "../../db/archive-feed.repository.ts";
import { formatRelative, formatTime } from "../../status/units.ts";
import { html } from "../../text/html.ts";
import { type FeedName, feedPath } from "../feeds/feed-documents.ts";
import { describeScope, type IssuedFeedToken, opensFeed } from "../feeds/feed-token.ts";
import { layout, type PageFeed, pill } from "./layout.ts";

export type FeedsView = { base: string; fromPublicUrl: boolean; tokens: IssuedFeedToken[]; artists: FeedArtist[]; now: number; feeds: readonly PageFeed[] };

/** The feeds a token opens, as rows of the page: a token for every feed lists the two main ones (artists below). */
function tokenFeeds(t: IssuedFeedToken): Array<{ label: string; feed: FeedName }> {
  const scope = t.scope;
  if (!scope) return [];
  if (scope.kind === "artist")
    return [{ label: `${scope.username ?? scope.userid}'s work`, feed: { kind: "artist", username: scope.username ?? scope.userid } }];
  const all = [
    { label: "New in the archive", feed: { kind: "arrivals" } as const },
    { label: "Notifications", feed: { kind: "notifications" } as const },
  ];
  return all.filter((f) => opensFeed(scope, f.feed));
}

export function feedsPage(v: FeedsView): string {
  const url = (token: string, feed: FeedName) => `${v.base}${feedPath(token, feed)}`;
  const everything = v.tokens.find((t) => t.scope?.kind === "all");
  const body = html`
<h1>Feeds</h1>
<div class="card"><p>Atom feeds of the archive for a feed reader: each entry links to its page here and to the stored file, with its thumbnail.
Each reader gets its own token in the address, apart from the dashboard's: make one with <span class="fix">dvault feeds create &lt;name&gt;</span>
(<span class="fix">--feed arrivals|notifications|artist:&lt;name&gt;</span> limits it to one feed), stop one with <span class="fix">dvault feeds revoke &lt;name&gt;</span>.
A feed token opens its feeds and the files and thumbnails they link to, nothing else.</p>
<p class="small muted">Links start with ${v.base}${v.fromPublicUrl ? " (DVAULT_PUBLIC_URL)" : html` — the address this page was opened with; set <code>DVAULT_PUBLIC_URL</code> when readers reach the dashboard under another name`}.</p></div>
${v.tokens.length === 0 ? html`<div class="notice">No feed token yet: run <span class="fix">dvault feeds create reader</span> and reload this page.</div>` : ""}
${v.tokens.map(
  (t) => html`<div class="card"><h2>${t.name} ${pill(describeScope(t.scope), t.scope ? "ok" : "warn")}</h2>
<p class="small muted">created ${formatTime(t.createdAt.toISOString())} · ${t.lastUsedAt ? `last read ${formatRelative(t.lastUsedAt.toISOString(), v.now)}` : "not read yet"}</p>
<table class="cards">${tokenFeeds(t).map((f) => html`<tr><td data-label="feed">${f.label}</td><td class="path" data-label="address"><a href="${url(t.token, f.feed)}">${url(t.token, f.feed)}</a></td></tr>`)}</table></div>`,
)}
${
  everything && v.artists.length
    ? html`<div class="card"><h2>Artists you watch or track</h2><p class="small muted">With the token ${everything.name}; another token for every feed works the same way.</p>
<table class="cards">${v.artists.map((a) => html`<tr><td data-label="artist"><a href="/archive?artist=${encodeURIComponent(a.username)}">${a.username}</a> <span class="muted small">${[a.watched ? "watched" : "", a.tracked ? "tracked" : ""].filter(Boolean).join(", ")}</span></td><td class="path" data-label="feed"><a href="${url(everything.token, { kind: "artist", username: a.username })}">${url(everything.token, { kind: "artist", username: a.username })}</a></td></tr>`)}</table></div>`
    : ""
}`;
  return layout({ title: "Feeds", nav: "feeds", body, feeds: v.feeds });
}
