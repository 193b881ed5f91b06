// Which user a line of a track list names: a bare username or any of the service's profile, gallery and RSS
// URLs that other tools write (gallery-dl's inputs, feed readers' OPML, old <user>.deviantart.com links).

/** What `dvault track add` accepts and the tracked-user table stores. */
export const USERNAME_PATTERN = /^[A-Za-z0-9_-]{1,40}$/;

export type NamedUser = { username: string } | { unresolved: string };

/**
 * First path segments of www.deviantart.com that are the site's own pages, not a user's: a URL starting with one
 * of them names nobody. Kept short on purpose: a user whose name is on the list can still be given by name.
 */
const SITE_PAGES = new Set([
  "about",
  "account",
  "art",
  "browse",
  "core-membership",
  "daily-deviations",
  "deviation",
  "developers",
  "download",
  "groups",
  "join",
  "morelikethis",
  "notifications",
  "popular",
  "search",
  "settings",
  "shop",
  "studio",
  "submit",
  "tag",
  "team",
  "topic",
  "users",
  "watch",
]);

/** Subdomains that are the service's hosts, not the old per-user ones. */
const SITE_HOSTS = new Set(["www", "backend", "comments", "fav", "sta", "chat", "forum", "help", "shop", "my", "st", "api", "about"]);

/** RSS query terms that name the user whose works they list (`gallery:`, `by:`, `favby:`, folder ids after a slash). */
const RSS_TERM = /^(?:gallery|by|favby|journal|scraps):([^/\s]+)/i;

/** The user a line of a track list names (a username, a profile, gallery or RSS URL), or why it names none. */
export function userFromText(input: string): NamedUser {
  const text = input.trim();
  if (text === "") return { unresolved: "empty" };
  // "~name" and "@name" are how the site and chats write a username.
  const bare = text.replace(/^[~@]/, "");
  if (USERNAME_PATTERN.test(bare)) return { username: bare };
  const url = asUrl(text);
  if (!url) return { unresolved: "not a valid username (letters, digits, - and _) nor a URL" };
  return userFromUrl(url);
}

function asUrl(text: string): URL | undefined {
  // Tolerated: feed:// (some readers' export), protocol-less "deviantart.com/user" and "//host/path".
  const withScheme = text.replace(/^feed:(\/\/)?/i, "https://").replace(/^\/\//, "https://");
  const candidate = /^[a-z][a-z0-9+.-]*:/i.test(withScheme) ? withScheme : `https://${withScheme}`;
  try {
    const url = new URL(candidate);
    return url.protocol === "http:" || url.protocol === "https:" ? url : undefined;
  } catch {
    return undefined;
  }
}

function userFromUrl(url: URL): NamedUser {
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  if (host !== "deviantart.com" && !host.endsWith(".deviantart.com")) return { unresolved: `not a DeviantArt URL (${host})` };
  const sub = host === "deviantart.com" ? "" : host.slice(0, -".deviantart.com".length);
  const segments = url.pathname.split("/").filter(Boolean).map(safeDecode);
  if (segments[0]?.toLowerCase() === "rss.xml") return userFromRss(url);
  if (sub === "" || sub === "www") {
    const first = segments[0];
    if (!first || SITE_PAGES.has(first.toLowerCase())) return { unresolved: "the URL names no user" };
    return checked(first.replace(/^~/, ""));
  }
  if (sub.includes(".") || SITE_HOSTS.has(sub)) return { unresolved: "the URL names no user" };
  return checked(sub);
}

/** backend.deviantart.com/rss.xml?type=deviation&q=gallery:<user>[/<folder>] (or by:, favby:, with sort: and meta: terms). */
function userFromRss(url: URL): NamedUser {
  const q = url.searchParams.get("q") ?? "";
  for (const term of q.split(/[\s+]+/)) {
    const m = RSS_TERM.exec(term);
    if (m?.[1]) return checked(m[1]);
  }
  return { unresolved: "the RSS URL names no user (its q= has no gallery:, by: or favby: term)" };
}

function checked(name: string): NamedUser {
  return USERNAME_PATTERN.test(name) ? { username: name } : { unresolved: `"${name}" is not a valid username` };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The profile URL export writes (and import reads back). */
export function profileUrl(username: string): string {
  return `https://www.deviantart.com/${encodeURIComponent(username)}`;
}

/** The service's RSS feed of a user's gallery, newest first. */
export function rssUrl(username: string): string {
  return `https://backend.deviantart.com/rss.xml?type=deviation&q=${encodeURIComponent(`gallery:${username}`)}`;
}
