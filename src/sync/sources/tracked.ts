// Another user's public gallery, collections and journals (`dvault track add <username>`; ctx.key is
// the username). The profile's counts gate the walks: a quiet re-run costs the profile and the newest
// gallery page. With a client token (no user grant) mature items stay hidden; folder-size gaps show it.
import { z } from "zod";
import { isApiError, isEndpointGone } from "../../api/errors.ts";
import type { Profile } from "../../api/types.ts";
import type { SyncRepos } from "../repos.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition, type SourceOutcome } from "../source.ts";
import {
  collectionSpec,
  emptyFolderState,
  FolderStateSchema,
  folderStateJson,
  gallerySpec,
  syncFolders,
  type FolderSpec,
  type FolderState,
} from "./folder-walk.ts";
import { parsePostsState, PostsStateSchema, syncPosts } from "./profile-posts.ts";

/** Tracked users' files come after the account's own and its favourites. */
export const TRACKED_PRIORITY = 10;

const TrackedStateSchema = z.object({
  userid: z.string().nullable(),
  /** The profile's counts when the walks they gate last completed. */
  deviations: z.number().nullable(),
  favourites: z.number().nullable(),
  gallery: FolderStateSchema,
  collections: FolderStateSchema,
  posts: PostsStateSchema,
});
type TrackedState = z.infer<typeof TrackedStateSchema>;

function parseState(value: unknown): TrackedState {
  const parsed = TrackedStateSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  return {
    userid: null,
    deviations: null,
    favourites: null,
    gallery: emptyFolderState(),
    collections: emptyFolderState(),
    posts: parsePostsState(undefined),
  };
}

/** The cursor: every part, the big known-id list of `lean` left out. */
function stateJson(state: TrackedState, lean?: "gallery" | "collections"): TrackedState {
  return {
    ...state,
    gallery: folderStateJson(state.gallery, lean !== "gallery"),
    collections: folderStateJson(state.collections, lean !== "collections"),
  };
}

export const trackedSource: SourceDefinition = {
  name: "tracked",
  everyMs: DEFAULT_EVERY_MS.tracked,
  // The runner falls back to a client token when there is no user grant (mature items then stay hidden).
  needsUser: false,
  async run(ctx) {
    const username = ctx.key;
    if (!username) throw new Error('the "tracked" source needs the tracked username as its key');
    const state = parseState(ctx.state?.cursor);
    const save = (repos: SyncRepos, lean?: "gallery" | "collections") => repos.syncState.saveSourceState(ctx.ref, { cursor: stateJson(state, lean) });

    let profile: Profile;
    try {
      profile = await ctx.client.profile(username);
    } catch (err) {
      if (isEndpointGone(err)) return degraded("/user/profile/{username}");
      if (!(isApiError(err) && err.kind === "not_found")) throw err;
      return userGone(ctx, username, state.userid);
    }
    const owner = { userid: profile.user.userid, username: profile.user.username };
    await ctx.transaction(async (repos) => {
      const counts = await repos.users.upsertProfiles([profile], ctx.now());
      ctx.counters.changed += counts.changed;
      state.userid = owner.userid;
      await save(repos);
    });

    const deviations = profile.stats?.user_deviations ?? null;
    const favourites = profile.stats?.user_favourites ?? null;
    const galleryChanged = ctx.full || deviations === null || state.deviations !== deviations || state.gallery.run !== undefined;
    const favesChanged = ctx.full || favourites === null || state.favourites !== favourites || state.collections.run !== undefined;

    const gone: string[] = [];
    const download = { priority: TRACKED_PRIORITY, reason: `tracked user ${owner.username}` };
    const gallery = await part(gone, "/gallery/*", () =>
      walkFolders(ctx, gallerySpec(owner, download), state, "gallery", save, {
        full: ctx.full,
        // Counts unchanged: only the newest page is checked; the folders are opened if it shows something new.
        newestCheck: !galleryChanged,
        foldersOnlyIfNew: !galleryChanged,
      }),
    );
    if (gallery) gone.push(...gallery.gone);
    if (favesChanged) {
      await part(gone, "/collections/*", () => walkFolders(ctx, collectionSpec(owner, download), state, "collections", save, { full: ctx.full, newestCheck: false }));
    }
    if (galleryChanged || state.posts.run !== undefined) {
      await part(gone, "/user/profile/posts", () =>
        syncPosts(ctx, {
          owner,
          state: state.posts,
          save: (repos) => save(repos),
          download: { ...download, reason: `tracked user ${owner.username} (journal)` },
        }),
      );
    }

    await ctx.transaction(async (repos) => {
      if (gallery !== undefined) state.deviations = deviations;
      if (favesChanged && !gone.includes("/collections/*")) state.favourites = favourites;
      await save(repos);
    });
    if (gone.length > 0) return degraded(gone.join(", "));
    return { result: "ok", completeSweep: ctx.full } satisfies SourceOutcome;
  },
};

function walkFolders(
  ctx: SourceContext,
  spec: FolderSpec,
  state: TrackedState,
  slot: "gallery" | "collections",
  save: (repos: SyncRepos, lean?: "gallery" | "collections") => Promise<void>,
  options: Parameters<typeof syncFolders>[3],
) {
  const folderState: FolderState = state[slot];
  return syncFolders(ctx, spec, { state: folderState, save: (repos, _s, withKnown) => save(repos, withKnown ? undefined : slot) }, options);
}

/** Runs one part of the source; a part whose endpoint is gone is recorded and skipped. */
async function part<T>(gone: string[], name: string, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (err) {
    if (!isEndpointGone(err)) throw err;
    gone.push(name);
    return undefined;
  }
}

/** The tracked user's profile answers "User not found.": deactivated (their archived works stay, marked). */
async function userGone(ctx: SourceContext, username: string, knownUserid: string | null): Promise<SourceOutcome> {
  const userid = knownUserid ?? (await ctx.repos.tracked.listTrackedUsers(ctx.account.id)).find((t) => t.username.toLowerCase() === username.toLowerCase())?.userid ?? null;
  if (userid) {
    await ctx.transaction(async (repos) => {
      const marked = await repos.users.markUserDeactivated(userid, ctx.now());
      ctx.counters.removed += marked.deviations;
    });
  }
  ctx.log.warn({ username }, "tracked user not found: deactivated or deleted");
  return { result: "degraded", unavailableReason: `user "${username}" not found on the service (deactivated or deleted); the archive keeps their works` };
}

function degraded(what: string): SourceOutcome {
  return { result: "degraded", unavailableReason: `${what} removed by the service (404 Api endpoint not found.)` };
}

