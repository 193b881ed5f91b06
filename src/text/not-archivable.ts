// What could not be archived in full and why, in the one shape and the words that `dvault status`, the
// dashboard's overview and the digest all show: counts per reason and per artist, each reason with what it
// means and what the user can do. The reasons come from what the service marks
// (docs/service-behaviour.md#tier-locked, #multi-image-marker, #profile-count-includes-hidden), never from
// its wording. src/db/not-archivable.repository.ts reads the rows; status/schema.ts is the JSON form.

export const NOT_ARCHIVABLE_REASONS = ["paid", "watchers_only", "partial", "hidden_mature"] as const;
export type NotArchivableReason = (typeof NOT_ARCHIVABLE_REASONS)[number];

/** One artist in one source (gallery, collections, watch feed or a tracked artist) with works not archived in full. */
export type NotArchivableArtist = {
  account: string;
  source: string;
  key: string;
  /** The artist's username (their userid while the mirror knows no name). */
  artist: string;
  artistUserid: string | null;
  total: number;
  /** Nonzero counts only. */
  counts: Array<{ reason: NotArchivableReason; count: number }>;
  /** hidden_mature: the profile's count and what the listings showed in the last sweep. */
  profileCount: number | null;
  listed: number | null;
};

export type NotArchivable = {
  /** Works under any reason: listed works once each (whatever the source), plus works no listing showed. */
  total: number;
  byReason: Array<{ reason: NotArchivableReason; count: number; why: string; action: string }>;
  byArtist: NotArchivableArtist[];
};

type Where = { account: string; source: string; key: string; artist_userid: string | null; artist: string | null };

/** What the fold reads: listed works per source, artist and reason; per reason across sources; shortfalls. */
export type NotArchivableRows = {
  counts: Array<Where & { reason: Exclude<NotArchivableReason, "hidden_mature">; n: number }>;
  totals: Array<{ reason: Exclude<NotArchivableReason, "hidden_mature">; n: number }>;
  shortfalls: Array<Where & { reason: "hidden_mature"; expected: number; listed: number }>;
};

/** What each reason means and what the user can do about it, in the words every renderer uses. */
export const NOT_ARCHIVABLE_WORDS: Record<NotArchivableReason, { label: string; why: string; action: string }> = {
  paid: {
    label: "paid",
    why: "behind a paid tier or a paid gallery folder: the service lists them without the full image",
    action: "paid tiers cannot be archived; the archive keeps their listing and preview",
  },
  watchers_only: {
    label: "watchers-only",
    why: "in a watchers-only gallery folder: the service lists them without the full image",
    action: "watch the artist to unlock them; the next sync archives them",
  },
  partial: {
    label: "partial",
    why: "the service gives only part of the work (the first image of a multi-image post, or a blurred rendition)",
    action: "nothing more can be fetched through the API; the rest stays on the site",
  },
  hidden_mature: {
    label: "hidden from a public token",
    why: "the profile counts more works than the listings showed: a public (client) token does not list mature works",
    action: "log in with a user token (dvault auth login) and track the artist with that account (dvault track add <username> --account <name>)",
  },
};

/** The view of the rows: nonzero reasons in a fixed order, artists by account, source and name. Pure. */
export function foldNotArchivable(rows: NotArchivableRows): NotArchivable {
  const byReason = new Map<NotArchivableReason, number>();
  for (const t of rows.totals) byReason.set(t.reason, (byReason.get(t.reason) ?? 0) + t.n);
  const artists = new Map<string, NotArchivableArtist>();
  const artistOf = (r: Where) => {
    const id = `${r.account}\u0000${r.source}\u0000${r.key}\u0000${r.artist_userid ?? ""}`;
    let a = artists.get(id);
    if (!a) {
      const artist = r.artist ?? r.artist_userid ?? (r.source === "tracked" ? r.key : "an unknown artist");
      a = { account: r.account, source: r.source, key: r.key, artist, artistUserid: r.artist_userid, total: 0, counts: [], profileCount: null, listed: null };
      artists.set(id, a);
    }
    return a;
  };
  const add = (a: NotArchivableArtist, reason: NotArchivableReason, n: number) => {
    if (n <= 0) return;
    const c = a.counts.find((x) => x.reason === reason);
    if (c) c.count += n;
    else a.counts.push({ reason, count: n });
    a.total += n;
  };
  for (const r of rows.counts) add(artistOf(r), r.reason, r.n);
  for (const s of rows.shortfalls) {
    const hidden = s.expected - s.listed;
    if (hidden <= 0) continue;
    const a = artistOf(s);
    add(a, s.reason, hidden);
    a.profileCount = s.expected;
    a.listed = s.listed;
    byReason.set(s.reason, (byReason.get(s.reason) ?? 0) + hidden);
  }
  const order = (r: NotArchivableReason) => NOT_ARCHIVABLE_REASONS.indexOf(r);
  const byArtist = [...artists.values()]
    .filter((a) => a.total > 0)
    .map((a) => ({ ...a, counts: a.counts.sort((x, y) => order(x.reason) - order(y.reason)) }))
    .sort((x, y) => x.account.localeCompare(y.account) || x.source.localeCompare(y.source) || x.key.localeCompare(y.key) || x.artist.localeCompare(y.artist));
  const reasons = NOT_ARCHIVABLE_REASONS.filter((r) => (byReason.get(r) ?? 0) > 0).map((reason) => ({
    reason,
    count: byReason.get(reason) ?? 0,
    why: NOT_ARCHIVABLE_WORDS[reason].why,
    action: NOT_ARCHIVABLE_WORDS[reason].action,
  }));
  return { total: reasons.reduce((n, r) => n + r.count, 0), byReason: reasons, byArtist };
}

/** An empty view (nothing counted, or the tables are not there yet). */
export function emptyNotArchivable(): NotArchivable {
  return { total: 0, byReason: [], byArtist: [] };
}

/** "3 watchers-only, 12 hidden from a public token": an artist's nonzero counts in words. */
export function countsInWords(counts: NotArchivableArtist["counts"]): string {
  return counts.map((c) => `${c.count} ${NOT_ARCHIVABLE_WORDS[c.reason].label}`).join(", ");
}

/** Where an artist's works were listed: "gallery of me", "favourites of me", "via ann, tracked by me". */
export function sourceInWords(a: Pick<NotArchivableArtist, "account" | "source" | "key">): string {
  if (a.source === "tracked") return `via ${a.key}, tracked by ${a.account}`;
  if (a.source === "collections") return `favourites of ${a.account}`;
  if (a.source === "watch_feed") return `watch feed of ${a.account}`;
  return `gallery of ${a.account}`;
}

/**
 * The view in plain lines, unindented: one per reason with why and what to do, then one per artist. Empty
 * when nothing is counted (a renderer then shows no section at all).
 */
export function notArchivableLines(v: NotArchivable, maxArtists = Number.POSITIVE_INFINITY): { reasons: string[]; artists: string[] } {
  const reasons = v.byReason.map((r) => `${r.count} ${NOT_ARCHIVABLE_WORDS[r.reason].label}: ${r.why}. What you can do: ${r.action}.`);
  const { shown, more } = topArtists(v, maxArtists);
  const artists = shown.map((a) => `${a.artist} (${sourceInWords(a)}): ${countsInWords(a.counts)}${shortfallInWords(a)}`);
  if (more > 0) artists.push(`…and ${more} more (dvault status lists every one)`);
  return { reasons, artists };
}

/** The digest lists this many artists at most; status and the dashboard list all. */
export const DIGEST_ARTISTS = 20;

/**
 * The `max` artists with the most works, in the view's order, and how many are left out: a mail stays
 * short while the counts per reason above it still cover every work.
 */
export function topArtists(v: NotArchivable, max: number): { shown: NotArchivableArtist[]; more: number } {
  if (v.byArtist.length <= max) return { shown: v.byArtist, more: 0 };
  const keep = new Set([...v.byArtist].sort((x, y) => y.total - x.total).slice(0, max));
  return { shown: v.byArtist.filter((a) => keep.has(a)), more: v.byArtist.length - keep.size };
}

/** "(profile 80, listings showed 68)" for an artist with works hidden from a public token. */
export function shortfallInWords(a: Pick<NotArchivableArtist, "profileCount" | "listed">): string {
  return a.profileCount !== null && a.listed !== null ? ` (profile ${a.profileCount}, listings showed ${a.listed})` : "";
}
