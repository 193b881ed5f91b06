// The account's own gallery, folder by folder (so the ~10 000 offset ceiling of /gallery/all does not
// cut it short): nested folders, contents with positions, metadata and texts of new or changed
// deviations, wanted downloads. A quiet re-run costs the folder list and one newest-page check.
import { isEndpointGone } from "../../api/errors.ts";
import type { Profile } from "../../api/types.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition } from "../source.ts";
import { folderStateJson, gallerySpec, outcomeOf, parseFolderState, syncFolders, type FolderSyncResult } from "./folder-walk.ts";

/** Own works come first in the download queue. */
export const OWN_GALLERY_PRIORITY = 100;

export const gallerySource: SourceDefinition = {
  name: "gallery",
  everyMs: DEFAULT_EVERY_MS.gallery,
  needsUser: true,
  async run(ctx) {
    const state = parseFolderState(ctx.state?.cursor);
    const spec = gallerySpec({ userid: ctx.account.userId }, { priority: OWN_GALLERY_PRIORITY, reason: "own gallery" });
    const result = await syncFolders(
      ctx,
      spec,
      { state, save: (repos, s, withKnown) => repos.syncState.saveSourceState(ctx.ref, { cursor: folderStateJson(s, withKnown) }) },
      { full: ctx.full, newestCheck: true },
    );
    if (result.sweep) await checkProfileCount(ctx, result);
    return outcomeOf(result);
  },
};

/**
 * After a sweep: the profile's deviation count against what the folders listed. Deviations in no folder
 * (only in "All") or hidden ones show up here as a gap; a folder past the ceiling already has its own.
 */
async function checkProfileCount(ctx: SourceContext, result: FolderSyncResult): Promise<void> {
  if (result.truncated) return;
  let profile: Profile;
  try {
    profile = await ctx.client.profile(ctx.account.username);
  } catch (err) {
    if (!isEndpointGone(err)) throw err;
    result.gone.push(err.operation);
    return;
  }
  const expected = profile.stats?.user_deviations;
  if (typeof expected !== "number") return;
  await ctx.transaction(async (repos) => {
    if (expected !== result.seen) {
      await repos.syncState.recordGap(
        ctx.ref,
        "profile",
        {
          expected,
          mirrored: result.seen,
          reason: `count mismatch: the profile says ${expected} deviations, the gallery folders listed ${result.seen} (deviations in no folder, or hidden)`,
        },
        ctx.now(),
      );
    } else if (ctx.state?.gaps.profile) {
      await repos.syncState.clearGap(ctx.ref, "profile", ctx.now());
    }
  });
}
