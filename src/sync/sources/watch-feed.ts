// The "watch_feed" source: what the watched artists posted. While the deprecated /feed/home answers, its
// items (cursor, newest first) are mirrored with their deviations and users, a truncated bucket expanded
// once through /feed/home/{bucketid}; between sweeps a run stops at the first page already mirrored and
// unchanged. When /feed/home is gone the source degrades to polling each watched artist's newest gallery
// page, more often for artists who post more, with a next-check time per artist kept in the sync state.
import { z } from "zod";
import { isEndpointGone, isPermanent, userStateOf } from "../../api/errors.ts";
import type { Deviation, FeedItem } from "../../api/types.ts";
import { parseEpochSeconds } from "../../timestamps.ts";
import { distinctDeviations, distinctUsers } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext, SourceDefinition, SourceOutcome } from "../source.ts";
import { DEFAULT_EVERY_MS } from "../source.ts";
import { markUnavailable } from "./user-state.ts";
import { readWhole } from "../../api/transport.ts";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** Polling an artist more often than the source runs gains nothing; less often than weekly misses too much. */
const MIN_CHECK_MS = DEFAULT_EVERY_MS.watch_feed;
export const MAX_CHECK_MS = 7 * DAY;
/** How far back the posting rate is measured. */
const RATE_WINDOW_MS = 30 * DAY;
/** /gallery/all pages at most 24 deviations (docs/service-behaviour.md#page-size-maxima). */
const GALLERY_LIMIT = 24;
/** Polling more artists than this checks the token first. */
const LONG_POLL = 5;

const ArtistSchema = z.object({
  username: z.string(),
  /** ISO time of the next poll; null = due now. */
  nextCheckAt: z.string().nullable(),
  intervalMs: z.number().nullable(),
});
const WatchFeedStateSchema = z.object({
  /** Cursor of an unfinished walk of /feed/home (incremental or sweep). */
  tail: z.string().nullish(),
  /** bucketid → the bucket_total it had and every deviation id in it, for buckets the feed shows truncated. */
  buckets: z.record(z.string(), z.object({ total: z.number(), ids: z.array(z.string()) })).catch({}),
  /** userid → poll schedule of the fallback (/feed/home gone). */
  artists: z.record(z.string(), ArtistSchema).catch({}),
});
type WatchFeedState = z.infer<typeof WatchFeedStateSchema>;
type Artist = z.infer<typeof ArtistSchema>;

function readState(cursor: unknown): WatchFeedState {
  const parsed = WatchFeedStateSchema.safeParse(cursor ?? {});
  return parsed.success ? parsed.data : { buckets: {}, artists: {} };
}

/**
 * How long until an artist's gallery is worth polling again: half the average gap between their posts of
 * the last 30 days (or of their newest page when it is all recent, or older posts when none are recent),
 * bounded by MIN_CHECK_MS and MAX_CHECK_MS. `published` are epoch ms, newest first.
 */
export function pollInterval(published: readonly number[], now: number, pageSize = GALLERY_LIMIT): number {
  const recent = published.filter((t) => now - t <= RATE_WINDOW_MS);
  let gap: number;
  if (recent.length > 0) {
    // A full page of recent posts only bounds the rate from below: measure over the page's own span.
    const span = recent.length >= pageSize ? Math.max(now - (recent[recent.length - 1] ?? now), MINUTE) : RATE_WINDOW_MS;
    gap = span / recent.length;
  } else if (published.length >= 2) {
    gap = ((published[0] ?? 0) - (published[published.length - 1] ?? 0)) / (published.length - 1);
  } else {
    gap = 2 * MAX_CHECK_MS;
  }
  return Math.min(MAX_CHECK_MS, Math.max(MIN_CHECK_MS, Math.round(gap / 2)));
}

// ---- /feed/home -------------------------------------------------------------------------------------

type FeedWalk = { ctx: SourceContext; state: WatchFeedState; whole: boolean; bucketsSeen: Set<string> };

/**
 * The feed shows at most three deviations of a bucket; a bucket with more is expanded through
 * /feed/home/{bucketid} once per bucket_total, and the item then carries every id (the ones the feed did
 * not show as `{deviationid}` references). Returns the items to store and every deviation received.
 */
async function completeBuckets(walk: FeedWalk, items: readonly FeedItem[]): Promise<{ items: FeedItem[]; deviations: Deviation[] }> {
  const fetched: Deviation[] = items.flatMap((i) => i.deviations ?? []);
  const out: FeedItem[] = [];
  for (const item of items) {
    const shown = item.deviations ?? [];
    const bucketid = item.bucketid;
    const total = item.bucket_total ?? shown.length;
    if (!bucketid || total <= shown.length) {
      out.push(item);
      continue;
    }
    walk.bucketsSeen.add(bucketid);
    let known = walk.state.buckets[bucketid];
    if (!known || known.total !== total) {
      const got = await bucketDeviations(walk.ctx, bucketid);
      if (!got) {
        out.push(item);
        continue;
      }
      fetched.push(...got.deviations);
      known = { total, ids: got.deviations.map((d) => d.deviationid) };
      // A bucket read only in part is asked again next time.
      if (got.whole) walk.state.buckets[bucketid] = known;
    }
    const shownIds = new Set(shown.map((d) => d.deviationid));
    const more = known.ids.filter((id) => !shownIds.has(id)).map((deviationid): Deviation => ({ deviationid }));
    out.push({ ...item, deviations: [...shown, ...more] });
  }
  return { items: out, deviations: distinctDeviations(fetched) };
}

/**
 * Every deviation of a bucket (its page key is `results` or `items`: docs/service-behaviour.md#feed-bucket-page-key),
 * and whether the listing was read whole. Undefined when the bucket endpoint is gone, the bucket unknown,
 * or its answer unreadable for good (recorded): the deviations the feed showed are kept.
 */
async function bucketDeviations(ctx: SourceContext, bucketid: string): Promise<{ deviations: Deviation[]; whole: boolean } | undefined> {
  const all: Deviation[] = [];
  const pages = ctx.client.feedHomeBucket(bucketid);
  try {
    for await (const page of pages) all.push(...page.items);
  } catch (err) {
    if (isEndpointGone(err) || isPermanent(err)) {
      ctx.log.info({ bucketid, err }, "watch-feed bucket not expandable; keeping the deviations the feed showed");
      return undefined;
    }
    throw err;
  }
  return { deviations: all, whole: readWhole(pages) };
}

async function writeFeedPage(ctx: SourceContext, repos: SyncRepos, items: readonly FeedItem[], deviations: readonly Deviation[]) {
  const at = ctx.now();
  const users = distinctUsers([...items.flatMap((i) => [i.by_user, i.status?.author]), ...deviations.map((d) => d.author)]);
  await repos.users.upsertUsers(users, at);
  await repos.deviations.upsertDeviations(deviations, at);
  const counts = await repos.feed.upsertFeedItems(ctx.account.id, items, at);
  ctx.counters.new += counts.inserted;
  ctx.counters.changed += counts.changed;
  return counts;
}

/** Walks /feed/home from `startCursor` (the head when absent): to the end, or until a page is mirrored and unchanged. */
async function walkFeed(walk: FeedWalk, startCursor: string | undefined): Promise<void> {
  const { ctx } = walk;
  let pages = 0;
  for await (const page of ctx.client.feedHome({ ...(startCursor ? { startCursor } : {}) })) {
    // A whole walk is long: check the token once the feed has answered (a gone feed costs no extra call).
    if (++pages === 1 && walk.whole) await ctx.ensureFreshToken();
    const { items, deviations } = await completeBuckets(walk, page.items);
    const stop = await ctx.transaction(async (repos) => {
      const counts = await writeFeedPage(ctx, repos, items, deviations);
      const end = !page.hasMore || !page.nextCursor;
      const done = end || (!walk.whole && counts.inserted === 0 && counts.changed === 0);
      walk.state = { ...walk.state, tail: done ? null : page.nextCursor };
      await repos.syncState.saveSourceState(ctx.ref, { cursor: walk.state });
      return done;
    });
    ctx.checkpoint();
    if (stop) break;
  }
}

async function mirrorFeedHome(ctx: SourceContext, state: WatchFeedState): Promise<SourceOutcome> {
  const walk: FeedWalk = { ctx, state: { ...state, buckets: { ...state.buckets } }, whole: ctx.full, bucketsSeen: new Set() };
  // An interrupted walk goes on where it stopped; then (between sweeps) the head is read for what came since.
  if (state.tail) await walkFeed(walk, state.tail);
  if (!state.tail || !ctx.full) await walkFeed(walk, undefined);
  if (ctx.full && !state.tail) {
    // A complete walk saw every bucket still in the feed: forget the others.
    const buckets = Object.fromEntries(Object.entries(walk.state.buckets).filter(([id]) => walk.bucketsSeen.has(id)));
    await ctx.repos.syncState.saveSourceState(ctx.ref, { cursor: { ...walk.state, buckets, tail: null } satisfies WatchFeedState });
  }
  return { result: "ok", completeSweep: ctx.full && !state.tail };
}

// ---- fallback: polling watched artists --------------------------------------------------------------

/**
 * The artists the account watches, from /user/friends/{username} (gallery-dl's "watching" list), recorded
 * in the mirror as users and 'watching' relations. Known artists keep their poll schedule.
 */
async function refreshWatched(ctx: SourceContext, known: Record<string, Artist>): Promise<Record<string, Artist>> {
  const artists: Record<string, Artist> = {};
  for await (const page of ctx.client.friends(ctx.account.username)) {
    const at = ctx.now();
    await ctx.transaction(async (repos) => {
      await repos.users.upsertUsers(distinctUsers(page.items.map((e) => e.user)), at);
      await repos.watch.upsertWatchRelations(ctx.account.id, "watching", page.items, at);
    });
    for (const e of page.items) {
      artists[e.user.userid] = { ...(known[e.user.userid] ?? { nextCheckAt: null, intervalMs: null }), username: e.user.username };
    }
    ctx.checkpoint();
  }
  return artists;
}

/**
 * The newest gallery page of one artist, or undefined when the artist can't be listed: an artist the
 * service answers as suspended, deactivated or not found is recorded so (their works are kept, marked).
 */
async function newestGalleryPage(ctx: SourceContext, userid: string, username: string): Promise<Deviation[] | undefined> {
  try {
    for await (const page of ctx.client.galleryAll({ username, limit: GALLERY_LIMIT })) return page.items;
    return [];
  } catch (err) {
    const state = userStateOf(err);
    if (state) await markUnavailable(ctx, userid, state);
    if (state || isPermanent(err)) {
      ctx.log.info({ username, err }, "watched artist's gallery not listable; checking again later");
      return undefined;
    }
    throw err;
  }
}

async function pollWatchedArtists(ctx: SourceContext, state: WatchFeedState, goneReason: string): Promise<SourceOutcome> {
  let artists = state.artists;
  if (ctx.full || Object.keys(artists).length === 0) artists = await refreshWatched(ctx, artists);
  const nowMs = ctx.now().getTime();
  const due = Object.entries(artists).filter(([, a]) => a.nextCheckAt === null || Date.parse(a.nextCheckAt) <= nowMs);
  if (due.length > LONG_POLL) await ctx.ensureFreshToken();
  let current: WatchFeedState = { ...state, artists: { ...artists } };
  if (due.length === 0) await ctx.repos.syncState.saveSourceState(ctx.ref, { cursor: current });

  for (const [userid, artist] of due) {
    const deviations = await newestGalleryPage(ctx, userid, artist.username);
    const at = ctx.now();
    const published = (deviations ?? [])
      .map((d) => parseEpochSeconds(d.published_time)?.getTime())
      .filter((t): t is number => t !== undefined)
      .sort((a, b) => b - a);
    const intervalMs = deviations === undefined ? MAX_CHECK_MS : pollInterval(published, at.getTime());
    current = {
      ...current,
      artists: { ...current.artists, [userid]: { ...artist, intervalMs, nextCheckAt: new Date(at.getTime() + intervalMs).toISOString() } },
    };
    const next = current;
    await ctx.transaction(async (repos) => {
      const page = deviations ?? [];
      await repos.users.upsertUsers(distinctUsers(page.map((d) => d.author)), at);
      const counts = await repos.deviations.upsertDeviations(page, at);
      ctx.counters.new += counts.inserted;
      ctx.counters.changed += counts.changed;
      ctx.counters.removed += counts.removed;
      await repos.syncState.saveSourceState(ctx.ref, { cursor: next });
    });
    ctx.checkpoint();
  }
  const n = Object.keys(artists).length;
  return { result: "degraded", unavailableReason: `${goneReason}; fallback: polling ${n} watched artist${n === 1 ? "" : "s"}`, completeSweep: ctx.full };
}

// ---- the source -------------------------------------------------------------------------------------

async function run(ctx: SourceContext): Promise<SourceOutcome> {
  const state = readState(ctx.state?.cursor);
  try {
    return await mirrorFeedHome(ctx, state);
  } catch (err) {
    if (!isEndpointGone(err)) throw err;
    const reason = "watch feed /feed/home removed by the service (404 Api endpoint not found.)";
    ctx.log.info({ err }, "watch feed gone; polling watched artists instead");
    // A walk of the gone feed cannot be resumed: forget it.
    return pollWatchedArtists(ctx, { ...state, tail: null }, reason);
  }
}

export const watchFeedSource: SourceDefinition = {
  name: "watch_feed",
  everyMs: DEFAULT_EVERY_MS.watch_feed,
  needsUser: true,
  run,
};
