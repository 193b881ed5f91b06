// The account's profile, its watchers and the users it watches (/user/friends, gallery-dl's "watching"
// list). The profile's watcher/friend counts (expand=user.stats) gate the list walks, so a quiet re-run
// is one call; a sweep walks both lists, marks relations not seen removed and asks each user who left a
// list whether they are still there (suspended, deactivated or not found: docs/service-behaviour.md#user-error-codes).
// Once a day it also asks again about artists held as unavailable, so their works revive with them.
import { z } from "zod";
import type { DaClient } from "../../api/client.ts";
import { isEndpointGone } from "../../api/errors.ts";
import { DEFAULT_OFFSET_CEILING, nextOffset } from "../../api/paginate.ts";
import { type PageIterator, readWhole } from "../../api/transport.ts";
import type { Profile, WatchEntry } from "../../api/types.ts";
import type { WatchKind } from "../../db/watch.repository.ts";
import type { SyncRepos } from "../repos.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition, type SourceOutcome } from "../source.ts";
import { checkUser, markUnavailable, recheckUnavailable, type Recheck } from "./user-state.ts";

const ListStateSchema = z.object({
  /** The count the profile reported when the list was last walked. */
  count: z.number().nullable(),
  /** userid → username of everyone on the list after the last walk (left out of per-page writes). */
  known: z.record(z.string(), z.string()).optional(),
});
const ProfileStateSchema = z.object({
  watcher: ListStateSchema,
  watching: ListStateSchema,
  /**
   * The profile's counts of the account's deviations and favourites as of this source's last run: the
   * gallery and collections sources read them as a witness (profileCounts; src/sync/sources/freshness.ts).
   */
  counts: z.object({ deviations: z.number().nullable(), favourites: z.number().nullable() }).optional(),
  /** The list walk in progress, resumed by the next run. */
  run: z.object({ kind: z.enum(["watcher", "watching"]), offset: z.number().int(), full: z.boolean(), startedAt: z.string() }).optional(),
});
type ProfileState = z.infer<typeof ProfileStateSchema>;
type ListState = z.infer<typeof ListStateSchema>;

const LISTS: ReadonlyArray<{ kind: WatchKind; operation: string; stat: "watchers" | "friends" }> = [
  { kind: "watcher", operation: "/user/watchers/{username}", stat: "watchers" },
  { kind: "watching", operation: "/user/friends/{username}", stat: "friends" },
];

function parseState(value: unknown): ProfileState {
  const parsed = ProfileStateSchema.safeParse(value);
  return parsed.success ? parsed.data : { watcher: { count: null }, watching: { count: null } };
}

function stateJson(state: ProfileState, withKnown: boolean): ProfileState {
  if (withKnown) return state;
  const strip = ({ known: _known, ...rest }: ListState): ListState => rest;
  return { ...state, watcher: strip(state.watcher), watching: strip(state.watching) };
}

function listPages(client: DaClient, kind: WatchKind, username: string, startOffset: number): PageIterator<WatchEntry> {
  const options = { limit: 50, startOffset };
  return kind === "watcher" ? client.watchers(username, options) : client.friends(username, options);
}

export const profileSource: SourceDefinition = {
  name: "profile",
  everyMs: DEFAULT_EVERY_MS.profile,
  needsUser: true,
  async run(ctx) {
    const state = parseState(ctx.state?.cursor);
    const save = (repos: SyncRepos, withKnown: boolean) => repos.syncState.saveSourceState(ctx.ref, { cursor: stateJson(state, withKnown) });
    const gone: string[] = [];
    let recheck: Recheck = { back: 0, unsettled: 0 };
    try {
      const profile = await fetchProfile(ctx, gone);
      if (profile) state.counts = { deviations: countOrNull(profile.stats?.user_deviations), favourites: countOrNull(profile.stats?.user_favourites) };
      for (const list of LISTS) {
        const count = profile?.user.stats?.[list.stat];
        const resuming = state.run?.kind === list.kind;
        const full = ctx.full || (resuming && state.run?.full === true);
        const listState = state[list.kind];
        const changed = typeof count !== "number" || listState.count === null || listState.count !== count;
        if (!full && !changed && !resuming) continue;
        try {
          await walkList(ctx, state, save, { kind: list.kind, count: typeof count === "number" ? count : null, full });
        } catch (err) {
          if (!isEndpointGone(err)) throw err;
          gone.push(list.operation);
          delete state.run;
        }
      }
      recheck = await recheckUnavailable(ctx);
    } catch (err) {
      // Keep the known users a per-page write left out.
      await ctx.transaction((repos) => save(repos, true)).catch(() => undefined);
      throw err;
    }
    await ctx.transaction((repos) => save(repos, true));
    const outcome: SourceOutcome = { result: "ok", completeSweep: ctx.full && gone.length === 0 };
    if (gone.length > 0) return { result: "degraded", unavailableReason: `${gone.join(", ")} removed by the service (404 Api endpoint not found.)` };
    if (recheck.unsettled > 0) return { ...outcome, result: "incomplete", reason: recheckWords(recheck) };
    return outcome;
  },
};

/** "1 unavailable artist could not be asked about again (HTTP 400 invalid_request error_code 7); ...". */
function recheckWords(recheck: Recheck): string {
  const who = recheck.unsettled === 1 ? "1 unavailable artist" : `${recheck.unsettled} unavailable artists`;
  return `${who} could not be asked about again${recheck.cause ? ` (${recheck.cause})` : ""}; their works stay marked as they were, asked again at the next check`;
}

function countOrNull(n: unknown): number | null {
  return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : null;
}

/**
 * The account's own profile counts as the profile source last read them (no call): a witness of the gallery
 * and the favourites (src/sync/sources/freshness.ts). Null when that source has not run or had none.
 */
export async function profileCounts(ctx: SourceContext): Promise<{ deviations: number | null; favourites: number | null }> {
  const row = await ctx.repos.syncState.getSourceState({ accountId: ctx.account.id, source: "profile", key: "" });
  return parseState(row?.cursor).counts ?? { deviations: null, favourites: null };
}

/** The account's profile with its watcher and friend counts, recorded (profile edits are kept as history). */
async function fetchProfile(ctx: SourceContext, gone: string[]): Promise<Profile | undefined> {
  let profile: Profile;
  try {
    profile = await ctx.client.profile(ctx.account.username, { expand: ["user.stats"] });
  } catch (err) {
    if (!isEndpointGone(err)) throw err;
    gone.push("/user/profile/{username}");
    return undefined;
  }
  const counts = await ctx.transaction((repos) => repos.users.upsertProfiles([profile], ctx.now()));
  ctx.counters.changed += counts.changed;
  return profile;
}

/**
 * One list, page by page with its offset in the cursor. Incremental walks stop at the first page already
 * mirrored and unchanged (new watchers come first); a walk that reaches the end, every page and entry read,
 * marks relations not seen removed and resolves the users who left.
 */
async function walkList(
  ctx: SourceContext,
  state: ProfileState,
  save: (repos: SyncRepos, withKnown: boolean) => Promise<void>,
  { kind, count, full }: { kind: WatchKind; count: number | null; full: boolean },
): Promise<void> {
  const listState = state[kind];
  const early = !full && listState.count !== null;
  const run = state.run?.kind === kind ? state.run : { kind, offset: 0, full, startedAt: ctx.now().toISOString() };
  state.run = run;
  const resumed = run.offset > 0;
  const seen = new Map<string, string>();
  let complete = false;
  if ((count ?? 0) - run.offset > 150) await ctx.ensureFreshToken();
  const pages = listPages(ctx.client, kind, ctx.account.username, run.offset);
  for await (const page of pages) {
    const decision = nextOffset({ ...page, offset: page.offset ?? run.offset }, DEFAULT_OFFSET_CEILING);
    for (const e of page.items) seen.set(e.user.userid, e.user.username);
    const unchanged = await ctx.transaction(async (repos) => {
      await repos.users.upsertUsers(
        page.items.map((e) => e.user),
        ctx.now(),
      );
      const counts = await repos.watch.upsertWatchRelations(ctx.account.id, kind, page.items, ctx.now());
      ctx.counters.new += counts.inserted;
      ctx.counters.changed += counts.changed;
      if (decision.next !== undefined) run.offset = decision.next;
      await save(repos, false);
      return counts.inserted === 0 && counts.changed === 0;
    });
    ctx.checkpoint();
    if (decision.next === undefined) {
      // A page or entry skipped as unreadable is people the walk did not see: it ends no relation (tolerant reading).
      complete = decision.truncation === undefined && readWhole(pages);
      break;
    }
    if (early && unchanged) break;
  }
  delete state.run;
  listState.count = count;
  if (!complete) {
    if (listState.known) for (const [id, name] of seen) listState.known[id] = name;
    return;
  }
  const left = resumed || !listState.known ? [] : Object.entries(listState.known).filter(([id]) => !seen.has(id));
  let unavailable = 0;
  for (const [userid, username] of left) {
    const check = await checkUser(ctx.client, username);
    if (check.available) continue;
    await markUnavailable(ctx, userid, check.state);
    unavailable++;
  }
  await ctx.transaction(async (repos) => {
    ctx.counters.removed += await repos.watch.markMissingWatchRelationsRemoved(ctx.account.id, kind, new Date(run.startedAt), ctx.now());
    listState.known = resumed && listState.known ? { ...listState.known, ...Object.fromEntries(seen) } : Object.fromEntries(seen);
    await save(repos, true);
  });
  if (left.length > 0) ctx.log.info({ kind, left: left.length, unavailable }, "users left the list");
}
