// Another user's public gallery, collections and journals (`dvault track add <username>`; ctx.key is
// the username). The profile's counts gate the walks: a quiet re-run costs the profile and the newest
// gallery page. A suspended, deactivated or not found user (docs/service-behaviour.md#user-error-codes)
// degrades the source with the reason; their archived works stay, marked, and revive when the profile
// answers again (asked every run). A user tracked with a client token is listed with the public token, which
// hides mature works: not missing, not visible, and counted (listing_shortfalls) so status and the digest say so.
import { z } from "zod";
import { isEndpointGone } from "../../api/errors.ts";
import type { Profile } from "../../api/types.ts";
import type { SyncRepos } from "../repos.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition, type SourceOutcome } from "../source.ts";
import { collectionSpec, emptyFolderState, FolderStateSchema, folderStateJson, gallerySpec, type FolderSpec, type FolderState } from "./folder-spec.ts";
import type { FolderSyncResult } from "./folder-walk-types.ts";
import { syncFolders } from "./folder-walk.ts";
import { flushPending } from "./pending-work.ts";
import { parsePostsState, PostsStateSchema, syncPosts } from "./profile-posts.ts";
import { checkUser, markUnavailable, recordProfile, userStateWords, UserUnavailableError } from "./user-state.ts";
import { recordUnsettled, witnessOutcome, withUnsettled } from "./witnesses.ts";

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
    const viewer = await viewerOf(ctx, username);
    try {
      return await syncTracked(viewer, username, state, save);
    } catch (err) {
      if (!(err instanceof UserUnavailableError)) throw err;
      return userUnavailable(ctx, { username, state: err.state, userid: err.userid ?? state.userid });
    }
  },
};

async function syncTracked(
  { ctx, publicToken }: Viewer,
  username: string,
  state: TrackedState,
  save: (repos: SyncRepos, lean?: "gallery" | "collections") => Promise<void>,
): Promise<SourceOutcome> {
  let profile: Profile;
  try {
    const check = await checkUser(ctx.client, username);
    if (!check.available) return userUnavailable(ctx, { username, state: check.state, userid: state.userid });
    profile = check.profile;
  } catch (err) {
    if (isEndpointGone(err)) return degraded("/user/profile/{username}");
    throw err;
  }
  const owner = { userid: profile.user.userid, username: profile.user.username };
  // The profile answered: the user and any works marked while they were unavailable are live again.
  await recordProfile(ctx, profile);
  await ctx.transaction(async (repos) => {
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
      profileCount: deviations,
      keepPendingTail: true,
    }),
  );
  if (gallery) gone.push(...gallery.gone);
  let collections: FolderSyncResult | undefined;
  if (favesChanged) {
    collections = await part(gone, "/collections/*", () =>
      walkFolders(ctx, collectionSpec(owner, download), state, "collections", save, {
        full: ctx.full,
        newestCheck: false,
        profileCount: favourites,
        keepPendingTail: true,
      }),
    );
    // The favourites' "all" view is only a second witness (docs/service-behaviour.md#folders-optional).
    if (collections) gone.push(...collections.gone.filter((op) => op !== "collections.all"));
  }
  await part(gone, "/deviation/metadata", () => flushTails(ctx, state, save));
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
  if (gallery) await recordShortfall(ctx, { owner, profileCount: deviations, gallery, publicToken });
  if (gone.length > 0) return degraded([...new Set(gone)].join(", "));
  const galleryVerdict = gallery
    ? await witnessOutcome(ctx, gallery, { what: `deviations of ${owner.username}`, profileCount: deviations, publicToken })
    : ({ result: "ok" } satisfies SourceOutcome);
  const verdict = collections ? withUnsettled(galleryVerdict, collections) : galleryVerdict;
  if (collections) await recordUnsettled(ctx, [...(gallery ? [gallery] : []), collections]);
  return { ...verdict, completeSweep: ctx.full };
}

/**
 * What the gallery and favourites walks left pending (each fewer than a batch), fetched together: the
 * favourites' part moves to the gallery's in one committed cursor write, then the batches go out as any walk's.
 * It runs as a part of its own (a metadata endpoint gone degrades the source, as it did inside the walks).
 */
async function flushTails(ctx: SourceContext, state: TrackedState, save: (repos: SyncRepos) => Promise<void>): Promise<void> {
  const into = state.gallery;
  const from = state.collections;
  if (from.pendingMetadata.length > 0 || from.pendingTexts.length > 0) {
    await ctx.transaction(async (repos) => {
      const ids = new Set(into.pendingMetadata);
      const texts = new Set(into.pendingTexts.map((t) => t.id));
      into.pendingMetadata.push(...from.pendingMetadata.filter((id) => !ids.has(id)));
      into.pendingTexts.push(...from.pendingTexts.filter((t) => !texts.has(t.id)));
      from.pendingMetadata = [];
      from.pendingTexts = [];
      await save(repos);
    });
  }
  await flushPending(ctx, into, save, true);
}

/** The tracked user is suspended, deactivated or not found: their archived works stay, marked with why. */
async function userUnavailable(
  ctx: SourceContext,
  who: { username: string; state: UserUnavailableError["state"]; userid: string | null },
): Promise<SourceOutcome> {
  const userid =
    who.userid ??
    (await ctx.repos.tracked.listTrackedUsers(ctx.account.id)).find((t) => t.username.toLowerCase() === who.username.toLowerCase())?.userid ??
    null;
  // A name not found that the mirror has since seen the user answer under another name is a rename, not the user
  // gone: marking them would undo, each run, what the source tracking the new name revives.
  const renamed = userid && who.state === "not_found" ? await ctx.repos.users.usernameOf(userid) : undefined;
  if (renamed && renamed.toLowerCase() !== who.username.toLowerCase()) {
    ctx.log.warn({ username: who.username, now: renamed }, "tracked user renamed: their archived works are kept");
    return {
      result: "degraded",
      unavailableReason: `${who.username} is now ${renamed} (renamed): dvault track add ${renamed}, then dvault track remove ${who.username}; the archive keeps their works`,
    };
  }
  const marked = userid ? await markUnavailable(ctx, userid, who.state) : 0;
  ctx.log.warn({ username: who.username, state: who.state, marked }, "tracked user unavailable: their archived works are kept");
  return {
    result: "degraded",
    unavailableReason: `${who.username} ${userStateWords(who.state)}; the archive keeps their works and asks again at the next run`,
  };
}

/** Whose eyes the source lists with: `ctx.client` is the account's user token, or the public client. */
type Viewer = { ctx: SourceContext; publicToken: boolean };

/**
 * A tracked user recorded with token kind "client" is listed with the public (client-credentials) token,
 * which sees no mature works (docs/service-behaviour.md#public-token-hides-mature): shortfalls are then not
 * missing works but hidden ones. Without client credentials the account's user token lists them.
 */
async function viewerOf(ctx: SourceContext, username: string): Promise<Viewer> {
  const tracked = (await ctx.repos.tracked.listTrackedUsers(ctx.account.id)).find((t) => t.username.toLowerCase() === username.toLowerCase());
  if (tracked?.tokenKind !== "client") return { ctx, publicToken: false };
  const client = await ctx.publicClient();
  return client ? { ctx: { ...ctx, client }, publicToken: true } : { ctx, publicToken: false };
}

/**
 * After a sweep that was not resumed (its `seen` is every live work the listings showed): with a public
 * token, the profile's count above that is what the token may not see, kept per source and artist for
 * status and the digest; with a user token nothing is hidden, and an earlier count is cleared.
 */
async function recordShortfall(
  ctx: SourceContext,
  input: { owner: { userid: string }; profileCount: number | null; gallery: FolderSyncResult; publicToken: boolean },
): Promise<void> {
  const { gallery } = input;
  if (!gallery.sweep || gallery.resumed) return;
  await ctx.transaction(async (repos) => {
    if (!input.publicToken || input.profileCount === null) return repos.notArchivable.clearShortfall(ctx.ref, "hidden_mature");
    const shortfall = { reason: "hidden_mature" as const, artistUserid: input.owner.userid, expected: input.profileCount, listed: gallery.seen };
    return repos.notArchivable.saveShortfall(ctx.ref, shortfall, ctx.now());
  });
}

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

function degraded(what: string): SourceOutcome {
  return { result: "degraded", unavailableReason: `${what} removed by the service (404 Api endpoint not found.)` };
}
