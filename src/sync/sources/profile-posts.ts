// The account's profile posts (/user/profile/posts, cursor paging): journals (deviations, with their
// text) and status updates, in order. /user/statuses/* are gone from the service and never called; the
// source degrades only if /user/profile/posts itself is gone. A quiet re-run costs the first page.
import { z } from "zod";
import { isEndpointGone } from "../../api/errors.ts";
import type { Deviation } from "../../api/types.ts";
import { distinctUsers, isStatusPost, statusFromProfilePost } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition, type SourceOutcome } from "../source.ts";
import { flushPending, markWanted } from "./pending-work.ts";
import { OWN_GALLERY_PRIORITY } from "./gallery.ts";
import { readWhole } from "../../api/transport.ts";

export const PostsStateSchema = z.object({
  /** A walk reached the end of the posts once: later runs may stop after an unchanged first page. */
  complete: z.boolean(),
  pendingMetadata: z.array(z.string()),
  pendingTexts: z.array(z.object({ id: z.string(), excerpt: z.string().nullable() })),
  /** The walk in progress: where the next page starts and how many posts came before it. */
  run: z.object({ cursor: z.string(), ordinal: z.number().int(), startedAt: z.string() }).optional(),
});
export type PostsState = z.infer<typeof PostsStateSchema>;

export function parsePostsState(value: unknown): PostsState {
  const parsed = PostsStateSchema.safeParse(value);
  return parsed.success ? parsed.data : { complete: false, pendingMetadata: [], pendingTexts: [] };
}

export const POSTS_OPERATION = "/user/profile/posts";

export const profilePostsSource: SourceDefinition = {
  name: "profile_posts",
  everyMs: DEFAULT_EVERY_MS.profile_posts,
  needsUser: true,
  async run(ctx) {
    const state = parsePostsState(ctx.state?.cursor);
    try {
      const walked = await syncPosts(ctx, {
        owner: { userid: ctx.account.userId, username: ctx.account.username },
        state,
        save: (repos) => repos.syncState.saveSourceState(ctx.ref, { cursor: state }),
        download: { priority: OWN_GALLERY_PRIORITY, reason: "own journal" },
      });
      return { result: "ok", completeSweep: walked.complete } satisfies SourceOutcome;
    } catch (err) {
      if (!isEndpointGone(err)) throw err;
      return { result: "degraded", unavailableReason: `${POSTS_OPERATION} removed by the service (404 Api endpoint not found.)` };
    }
  },
};

export type PostsIO = {
  owner: { userid: string; username: string };
  state: PostsState;
  /** Writes the source's cursor with `state` in it (inside the caller's transaction). */
  save(repos: SyncRepos): Promise<void>;
  download: { priority: number; reason: string };
  full?: boolean;
};

/**
 * Walks a user's profile posts newest first. When the first page is already mirrored and unchanged (and
 * a complete walk happened before) it stops there; otherwise it walks to the end so positions (0 = the
 * newest) stay exact, then marks posts not seen removed.
 */
export async function syncPosts(ctx: SourceContext, io: PostsIO): Promise<{ complete: boolean }> {
  const { state } = io;
  const full = io.full ?? ctx.full;
  await flushPending(ctx, state, io.save, true);
  const run = state.run ?? { cursor: "", ordinal: 0, startedAt: ctx.now().toISOString() };
  const resumed = state.run !== undefined;
  let first = !resumed;
  const pages = ctx.client.profilePosts({ username: io.owner.username, limit: 50, ...(run.cursor ? { startCursor: run.cursor } : {}) });
  for await (const page of pages) {
    const next = page.hasMore && page.items.length > 0 && page.nextCursor && page.nextCursor !== page.cursor ? page.nextCursor : undefined;
    const unchanged = await ctx.transaction(async (repos) => {
      const result = await writePosts(ctx, repos, io, page.items, { ordinal: run.ordinal, full });
      run.ordinal += page.items.length;
      const stop = first && !full && state.complete && result.unchanged;
      if (next !== undefined && !stop) {
        run.cursor = next;
        state.run = run;
      } else {
        delete state.run;
      }
      await io.save(repos);
      return result.unchanged;
    });
    ctx.checkpoint();
    await flushPending(ctx, state, io.save, false);
    if (next === undefined) break;
    if (first && !full && state.complete && unchanged) {
      await flushPending(ctx, state, io.save, true);
      return { complete: false };
    }
    first = false;
  }
  // A page or post skipped as unreadable (a cursor listing ends at an unreadable page) is posts the walk did not see:
  // it ends none, and the next walk goes to the end again (docs/service-behaviour.md#tolerant-reading).
  const whole = readWhole(pages);
  await ctx.transaction(async (repos) => {
    if (whole) ctx.counters.removed += await repos.posts.markMissingProfilePostsRemoved(io.owner.userid, new Date(run.startedAt), ctx.now());
    state.complete = whole;
    delete state.run;
    await io.save(repos);
  });
  await flushPending(ctx, state, io.save, true);
  return { complete: whole };
}

/** One page: journals as deviations, statuses as statuses, the ordered post list; new journals' text and metadata queued. */
async function writePosts(
  ctx: SourceContext,
  repos: SyncRepos,
  io: PostsIO,
  posts: readonly Deviation[],
  { ordinal, full }: { ordinal: number; full: boolean },
): Promise<{ unchanged: boolean }> {
  const now = ctx.now();
  const journals = posts.filter((p) => !isStatusPost(p));
  const statuses = posts.filter((p) => isStatusPost(p)).map(statusFromProfilePost);
  await repos.users.upsertUsers(distinctUsers(posts.map((p) => p.author)), now);
  const devs = await repos.deviations.upsertDeviations(journals, now);
  const sts = await repos.posts.upsertStatuses(statuses, now);
  const order = await repos.posts.upsertProfilePosts(
    io.owner.userid,
    posts.map((p, i) => ({ kind: isStatusPost(p) ? ("status" as const) : ("journal" as const), itemId: p.deviationid, position: ordinal + i })),
    now,
  );
  const live = journals.filter((d) => d.is_deleted !== true);
  const newTexts = await markWanted(repos, live, io.download, now);
  ctx.counters.new += order.inserted;
  ctx.counters.changed += devs.changed + sts.changed;
  ctx.counters.removed += devs.removed + sts.removed;

  const refresh = full || devs.inserted > 0 || devs.changed > 0 || order.inserted > 0 ? live : [];
  for (const d of refresh) if (!io.state.pendingMetadata.includes(d.deviationid)) io.state.pendingMetadata.push(d.deviationid);
  for (const d of newTexts) io.state.pendingTexts.push({ id: d.deviationid, excerpt: d.excerpt ?? d.text_content?.excerpt ?? null });

  const changed = devs.inserted + devs.changed + devs.removed + sts.inserted + sts.changed + sts.removed + order.inserted + order.changed;
  return { unchanged: changed === 0 };
}
