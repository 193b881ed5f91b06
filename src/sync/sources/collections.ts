// The account's own collections (favourites). Witnesses: every collection folder and, on a sweep, the
// "all" view where the service answers it (docs/service-behaviour.md#folders-optional). Deleted favourites
// come back as `is_deleted` stubs and are marked removed (docs/service-behaviour.md#deleted-stubs);
// favourites of unavailable artists are resolved on a sweep. Downloads rank below the own gallery's.
import { DEFAULT_EVERY_MS, type SourceDefinition } from "../source.ts";
import { collectionSpec, folderStateJson, parseFolderState } from "./folder-spec.ts";
import { syncFolders } from "./folder-walk.ts";
import { profileCounts } from "./profile.ts";
import { witnessOutcome } from "./witnesses.ts";

export const FAVOURITES_PRIORITY = 50;

export const collectionsSource: SourceDefinition = {
  name: "collections",
  everyMs: DEFAULT_EVERY_MS.collections,
  needsUser: true,
  async run(ctx) {
    const state = parseFolderState(ctx.state?.cursor);
    const spec = collectionSpec({ userid: ctx.account.userId }, { priority: FAVOURITES_PRIORITY, reason: "favourite" });
    const result = await syncFolders(
      ctx,
      spec,
      { state, save: (repos, s, withKnown) => repos.syncState.saveSourceState(ctx.ref, { cursor: folderStateJson(s, withKnown) }) },
      { full: ctx.full, newestCheck: true, profileCount: (await profileCounts(ctx)).favourites },
    );
    return witnessOutcome(ctx, result, { what: "your favourites", optionalAll: "collections.all" });
  },
};
