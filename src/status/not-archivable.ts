// What could not be archived in full and why, as `dvault status`, the dashboard's overview and the digest
// show it: counts per reason and per artist, each reason with what it means and what the user can do.
// The reasons come from what the service marks (docs/service-behaviour.md#tier-locked, #multi-image,
// #mature-blur, #public-token-hides-mature), never from its wording.
import type { ListingShortfallRow, NotArchivableCountRow, NotArchivableRepository, NotArchivableTotalRow } from "../db/not-archivable.repository.ts";
import { NOT_ARCHIVABLE_REASONS, type NotArchivableReason, type NotArchivableView } from "./schema.ts";

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

type Rows = { counts: NotArchivableCountRow[]; totals: NotArchivableTotalRow[]; shortfalls: ListingShortfallRow[] };

/** Reads the three counts and folds them into the view. */
export async function collectNotArchivable(repo: NotArchivableRepository): Promise<NotArchivableView> {
  const [counts, totals, shortfalls] = await Promise.all([repo.countBySourceAndArtist(), repo.countByReason(), repo.listShortfalls()]);
  return foldNotArchivable({ counts, totals, shortfalls });
}

/** The view of the rows: nonzero reasons in a fixed order, artists by account, source and name. Pure. */
export function foldNotArchivable(rows: Rows): NotArchivableView {
  const byReason = new Map<NotArchivableReason, number>();
  for (const t of rows.totals) byReason.set(t.reason, (byReason.get(t.reason) ?? 0) + t.n);
  const artists = new Map<string, NotArchivableView["byArtist"][number]>();
  const artistOf = (r: { account: string; source: string; key: string; artist_userid: string | null; artist: string | null }) => {
    const id = `${r.account}\u0000${r.source}\u0000${r.key}\u0000${r.artist_userid ?? ""}`;
    let a = artists.get(id);
    if (!a) {
      const artist = r.artist ?? r.artist_userid ?? (r.source === "tracked" ? r.key : "an unknown artist");
      a = { account: r.account, source: r.source, key: r.key, artist, artistUserid: r.artist_userid, total: 0, counts: [], profileCount: null, listed: null };
      artists.set(id, a);
    }
    return a;
  };
  const add = (a: NotArchivableView["byArtist"][number], reason: NotArchivableReason, n: number) => {
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
export function emptyNotArchivable(): NotArchivableView {
  return { total: 0, byReason: [], byArtist: [] };
}

/** "3 watchers-only, 12 hidden from a public token": an artist's nonzero counts in words. */
export function countsInWords(counts: NotArchivableView["byArtist"][number]["counts"]): string {
  return counts.map((c) => `${c.count} ${NOT_ARCHIVABLE_WORDS[c.reason].label}`).join(", ");
}

/** Where an artist's works were listed: "gallery of alice", "tracked artist", ... */
export function sourceInWords(a: Pick<NotArchivableView["byArtist"][number], "account" | "source" | "key">): string {
  if (a.source === "tracked") return `tracked by ${a.account}`;
  if (a.source === "collections") return `favourites of ${a.account}`;
  return `gallery of ${a.account}`;
}

/**
 * The view in plain lines, unindented: one per reason with why and what to do, then one per artist. Empty
 * when nothing is counted (a renderer then shows no section at all).
 */
export function notArchivableLines(v: NotArchivableView): { reasons: string[]; artists: string[] } {
  const reasons = v.byReason.map((r) => `${r.count} ${NOT_ARCHIVABLE_WORDS[r.reason].label}: ${r.why}. What you can do: ${r.action}.`);
  const artists = v.byArtist.map((a) => `${a.artist} (${sourceInWords(a)}): ${countsInWords(a.counts)}${shortfallInWords(a)}`);
  return { reasons, artists };
}

/** "(profile 80, listings showed 68)" for an artist with works hidden from a public token. */
export function shortfallInWords(a: Pick<NotArchivableView["byArtist"][number], "profileCount" | "listed">): string {
  return a.profileCount !== null && a.listed !== null ? ` (profile ${a.profileCount}, listings showed ${a.listed})` : "";
}
