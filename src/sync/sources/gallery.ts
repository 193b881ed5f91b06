// The account's own gallery. Its witnesses (docs/service-behaviour.md#folders-optional): every folder,
// nested, walked folder by folder so the ~10 000 offset ceiling does not cut it short, and on a sweep the
// "all" view, which also lists deviations in no folder. Contents with positions, metadata and texts of
// new or changed deviations, wanted downloads. A quiet re-run costs the folder list and the newest page.
import { isEndpointGone } from "../../api/errors.ts";
import { DEFAULT_EVERY_MS, type SourceContext, type SourceDefinition } from "../source.ts";
import { folderStateJson, gallerySpec, parseFolderState } from "./folder-spec.ts";
import type { FolderSyncResult } from "./folder-walk-types.ts";
import { syncFolders } from "./folder-walk.ts";
import { profileCounts } from "./profile.ts";
import { witnessOutcome } from "./witnesses.ts";

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
      // The profile's count as the profile source last read it: a witness of works in no folder (freshness.ts).
      { full: ctx.full, newestCheck: true, profileCount: (await profileCounts(ctx)).deviations },
    );
    const profileCount = await profileCountIfNeeded(ctx, result);
    return witnessOutcome(ctx, result, { what: "deviations of your gallery", profileCount });
  },
};

/**
 * The profile's deviation count, asked only when the "all" view stopped early on a sweep (the offset
 * ceiling): then it is the only total that says how many no listing could reach.
 */
async function profileCountIfNeeded(ctx: SourceContext, result: FolderSyncResult): Promise<number | null> {
  if (!result.sweep || !result.all || result.all.complete) return null;
  try {
    const profile = await ctx.client.profile(ctx.account.username);
    return typeof profile.stats?.user_deviations === "number" ? profile.stats.user_deviations : null;
  } catch (err) {
    if (!isEndpointGone(err)) throw err;
    result.gone.push(err.operation);
    return null;
  }
}
