// Comments on the account's own deviations. The "all" view, newest first, carries each deviation's
// comment count: an incremental run fetches the threads whose count changed since the last run and
// stops at the first page where none did (a quiet re-run is one call); a sweep fetches every thread.
// Replies are walked as gallery-dl does: re-query with `commentid` for comments that have replies but
// are nobody's parent in what came back.
import { z } from "zod";
import type { DaClient } from "../../api/client.ts";
import { DEFAULT_OFFSET_CEILING, nextOffset } from "../../api/paginate.ts";
import type { Comment, Deviation } from "../../api/types.ts";
import { distinctUsers, uniqueBy } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import { DEFAULT_EVERY_MS, type SourceDefinition, type SourceOutcome } from "../source.ts";
import { isMissing } from "../../api/errors.ts";

/** Replies nested deeper than this come from a re-query with `commentid`. */
const MAX_DEPTH = 5;

const CommentsStateSchema = z.object({
  /** deviationid → the comment count whose thread is mirrored (deviations without comments left out). */
  counts: z.record(z.string(), z.number()),
  /** A walk reached the end of the gallery once. */
  complete: z.boolean(),
  run: z.object({ full: z.boolean(), offset: z.number().int(), startedAt: z.string() }).optional(),
});
type CommentsState = z.infer<typeof CommentsStateSchema>;

function parseState(value: unknown): CommentsState {
  const parsed = CommentsStateSchema.safeParse(value);
  return parsed.success ? parsed.data : { counts: {}, complete: false };
}

export const commentsSource: SourceDefinition = {
  name: "comments",
  everyMs: DEFAULT_EVERY_MS.comments,
  needsUser: true,
  async run(ctx) {
    const state = parseState(ctx.state?.cursor);
    const full = state.run?.full ?? (ctx.full || !state.complete);
    const run = state.run ?? { full, offset: 0, startedAt: ctx.now().toISOString() };
    const save = (repos: SyncRepos) => repos.syncState.saveSourceState(ctx.ref, { cursor: state });
    // On a sweep the counts are rebuilt from what the gallery lists now (deleted deviations drop out).
    const counts: Record<string, number> = full && run.offset === 0 ? {} : { ...state.counts };
    if (full) await ctx.ensureFreshToken();
    let complete = false;
    let truncated = false;
    for await (const page of ctx.client.galleryAll({ limit: 24, startOffset: run.offset })) {
      const decision = nextOffset({ ...page, offset: page.offset ?? run.offset }, DEFAULT_OFFSET_CEILING);
      const live = page.items.filter((d) => d.is_deleted !== true);
      const due = live.filter((d) => commentCount(d) > 0 && (full || commentCount(d) !== (state.counts[d.deviationid] ?? 0)));
      const changedCounts = live.filter((d) => commentCount(d) !== (state.counts[d.deviationid] ?? 0));
      const threads: Array<{ deviation: Deviation; comments: Comment[] | undefined }> = [];
      for (const d of due) threads.push({ deviation: d, comments: await fetchThread(ctx.client, d.deviationid) });
      await ctx.transaction(async (repos) => {
        for (const t of threads) {
          if (t.comments === undefined) continue;
          await repos.users.upsertUsers(distinctUsers(t.comments.map((c) => c.user)), ctx.now());
          const result = await repos.comments.upsertComments({ kind: "deviation", id: t.deviation.deviationid }, t.comments, ctx.now());
          ctx.counters.new += result.inserted;
          ctx.counters.changed += result.changed;
        }
        for (const d of live) {
          if (commentCount(d) > 0) counts[d.deviationid] = commentCount(d);
          else delete counts[d.deviationid];
        }
        state.counts = counts;
        if (decision.next !== undefined) run.offset = decision.next;
        state.run = run;
        await save(repos);
      });
      ctx.checkpoint();
      if (decision.next === undefined) {
        complete = decision.truncation === undefined;
        truncated = decision.truncation !== undefined;
        break;
      }
      // Newest first: once a whole page shows no new comments, the older ones have none either.
      if (!full && changedCounts.length === 0) break;
    }
    await ctx.transaction(async (repos) => {
      delete state.run;
      if (complete) state.complete = true;
      if (truncated) {
        await repos.syncState.recordGap(
          ctx.ref,
          "all",
          {
            expected: null,
            mirrored: run.offset,
            reason: `offset ceiling: /gallery/all stops at offset ${DEFAULT_OFFSET_CEILING}; comments on older deviations are not synced`,
          },
          ctx.now(),
        );
      }
      await save(repos);
    });
    return { result: "ok", completeSweep: full && complete } satisfies SourceOutcome;
  },
};

function commentCount(d: Deviation): number {
  return d.stats?.comments ?? 0;
}

/**
 * Every comment on a deviation: top level with replies down to MAX_DEPTH, then, as gallery-dl does,
 * the replies of each comment that has some but is nobody's parent in what came back. Undefined when
 * the deviation is gone.
 */
export async function fetchThread(client: DaClient, deviationid: string): Promise<Comment[] | undefined> {
  const all: Comment[] = [];
  const queue: Array<string | undefined> = [undefined];
  const asked = new Set<string>();
  try {
    while (queue.length > 0) {
      const commentid = queue.pop();
      const round: Comment[] = [];
      for await (const page of client.deviationComments(deviationid, { maxdepth: MAX_DEPTH, limit: 50, ...(commentid ? { commentid } : {}) })) {
        round.push(...page.items);
      }
      all.push(...round);
      const parents = new Set(round.map((c) => c.parentid));
      for (const c of round) {
        if ((c.replies ?? 0) > 0 && !parents.has(c.commentid) && !asked.has(c.commentid)) {
          asked.add(c.commentid);
          queue.push(c.commentid);
        }
      }
    }
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
  return uniqueBy(all, (c) => c.commentid);
}
