// One work named by its URL or id (`dvault add`, the dashboard's "Archive one work" box): the URL resolved to the
// deviation (deviation-ref.ts, docs/service-behaviour.md#deviation-url), then its author, object and metadata
// stored in the mirror as a sync stores them and its file marked wanted, in one transaction. Fetching the file is
// the caller's: the CLI runs the download now, the dashboard queues it for the worker.
import type { DaClient } from "../api/client.ts";
import { isApiError, isMissing, userStateOf } from "../api/errors.ts";
import type { Deviation, Metadata } from "../api/types.ts";
import type { PgPool } from "../db/connect.ts";
import type { WantedDownload } from "../db/download.repository.ts";
import { distinctUsers } from "../db/mirror-rows.ts";
import { withTransaction } from "../db/with-transaction.ts";
import { UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import { syncRepos } from "../sync/repos.ts";
import { OWN_GALLERY_PRIORITY } from "../sync/sources/gallery.ts";
import { markWanted, wantedDownload } from "../sync/sources/pending-work.ts";
import { deviationRefFromText, numericIdOfUrl } from "./deviation-ref.ts";
import { quoted } from "./parse.ts";
import { LookupFailedError } from "./user-on-service.ts";

/** Asked for by a person, now: ahead of what the sources want. `reason` says where it was asked. */
export const addedBy = (reason: string) => ({ priority: OWN_GALLERY_PRIORITY, reason });

/** The deviation the input names, as the service gives it now; a UserError saying why when it names none. */
export async function resolveDeviation(client: DaClient, input: string, signal?: AbortSignal): Promise<Deviation> {
  const ref = deviationRefFromText(input);
  if ("unresolved" in ref) throw new UserError(`"${quoted(input)}" names no deviation (${ref.unresolved})`);
  try {
    if ("deviationid" in ref) return await client.deviation(ref.deviationid, { signal });
    // The API looks deviations up by id only; the page URL's number is in each deviation object's `url`.
    for await (const page of client.galleryAll({ username: ref.artist, signal })) {
      const found = page.items.find((d) => numericIdOfUrl(d.url) === ref.numericId);
      if (found) return found;
    }
  } catch (err) {
    if (isMissing(err)) throw new UserError(`the service has no deviation ${"deviationid" in ref ? ref.deviationid : quoted(input)}: nothing was added`);
    const state = userStateOf(err);
    if (state)
      throw new UserError(
        `${"artist" in ref ? ref.artist : "its artist"} is ${state === "not_found" ? "not a user" : state} on the service: nothing was added`,
      );
    if (isApiError(err)) throw new LookupFailedError(`could not look up ${quoted(input)} (${scrubString(err.message)}): nothing was added; try again`);
    throw err;
  }
  throw new UserError(
    `${ref.artist}'s gallery lists no work numbered ${ref.numericId} (deleted, in a private folder, or not visible to this account): nothing was added`,
  );
}

/**
 * The deviation, its author and its metadata in the mirror, and its file wanted: one transaction. Returns the files it
 * wants (none: nothing to fetch) and whether the deviation is new to the mirror (a second add of a work adds nothing:
 * its words must say so).
 */
export async function storeAddedDeviation(args: {
  pool: PgPool;
  client: DaClient;
  deviation: Deviation;
  added: { priority: number; reason: string };
  at: Date;
  signal?: AbortSignal | undefined;
}): Promise<{ files: WantedDownload[]; newToMirror: boolean }> {
  const d = args.deviation;
  const metadata: Metadata[] = [];
  if (d.is_deleted !== true)
    for await (const batch of args.client.deviationMetadata([d.deviationid], { signal: args.signal })) metadata.push(...batch.metadata);
  const inserted = await withTransaction(args.pool, async (tx) => {
    const repos = syncRepos(tx);
    await repos.users.upsertUsers(distinctUsers([d.author]), args.at);
    const counts = await repos.deviations.upsertDeviations([d], args.at);
    if (metadata.length) await repos.deviations.upsertMetadata(metadata, args.at);
    await markWanted(repos, [d], args.added, args.at);
    return counts.inserted;
  });
  return { files: wantedDownload(d, args.added), newToMirror: inserted > 0 };
}
