// Indexes the mirror does not know yet are looked up in the cheapest listings that hold them: the gallery
// ("all" view) or the favourites of the user whose folder the files sit in, 24 deviations a call, stopping as
// soon as every wanted index is found — never one call per file. Each page is written to the mirror as a sync
// would write it (authors, then deviations), so what an import learns is never asked for again.
import { isApiError, isEndpointGone } from "../../api/errors.ts";
import type { DaClient } from "../../api/client.ts";
import type { Deviation } from "../../api/types.ts";
import { DeviationRepository } from "../../db/deviation.repository.ts";
import { distinctUsers } from "../../db/mirror-rows.ts";
import { UserRepository } from "../../db/user.repository.ts";
import { withTransaction } from "../../db/with-transaction.ts";
import type { PgPool } from "../../db/connect.ts";

export type ListingWant = {
  username: string;
  listing: "gallery" | "favourites";
  /** Indexes (the number ending a deviation's URL) still to find; found ones are removed. */
  indexes: Set<number>;
};

export type ListingOutcome = {
  username: string;
  listing: ListingWant["listing"];
  pages: number;
  found: number;
  /** Why the listing could not be walked to its end, when it could not. */
  problem: string | null;
};

/** Gallery and collection pages hold at most 24 (docs/service-behaviour.md#page-size-maxima). */
const PAGE_SIZE = 24;
/** A listing may wait this long for the shared pacer (a CLI run waits rather than fails). */
const MAX_WAIT_MS = 15 * 60_000;

export async function resolveThroughListings(args: {
  client: DaClient;
  pool: PgPool;
  wants: readonly ListingWant[];
  now: () => Date;
  signal?: AbortSignal;
}): Promise<ListingOutcome[]> {
  const outcomes: ListingOutcome[] = [];
  for (const want of args.wants) {
    if (want.indexes.size === 0) continue;
    const outcome: ListingOutcome = { username: want.username, listing: want.listing, pages: 0, found: 0, problem: null };
    outcomes.push(outcome);
    try {
      await walk(args, want, outcome);
    } catch (err) {
      // A user who is gone, a listing the service refuses: the files stay unmatched, with this reason.
      if (!isApiError(err)) throw err;
      outcome.problem = `the service answered ${want.listing === "gallery" ? "the gallery" : "the favourites"} of ${want.username} with ${err.message}`;
    }
  }
  return outcomes;
}

async function walk(args: Parameters<typeof resolveThroughListings>[0], want: ListingWant, outcome: ListingOutcome): Promise<void> {
  const list = { username: want.username, limit: PAGE_SIZE, maxWaitMs: MAX_WAIT_MS, ...(args.signal ? { signal: args.signal } : {}) };
  if (want.listing === "gallery") {
    await takePages(args, args.client.galleryAll(list), want, outcome);
    return;
  }
  try {
    await takePages(args, args.client.collectionsAll(list), want, outcome);
  } catch (err) {
    // /collections/all is missing from one of the two published listings (docs/service-behaviour.md#catalogue-listings): folder by folder then.
    if (!isEndpointGone(err)) throw err;
    for await (const page of args.client.collectionFolders({ username: want.username, limit: 50, maxWaitMs: MAX_WAIT_MS })) {
      outcome.pages++;
      for (const folder of page.items) {
        if (want.indexes.size === 0) return;
        await takePages(args, args.client.collectionFolder(folder.folderid, list), want, outcome);
      }
    }
  }
}

/** Writes each page to the mirror and stops as soon as nothing is wanted any more. */
async function takePages(
  args: Parameters<typeof resolveThroughListings>[0],
  pages: AsyncIterable<{ items: Deviation[] }>,
  want: ListingWant,
  outcome: ListingOutcome,
): Promise<void> {
  for await (const page of pages) {
    outcome.pages++;
    const at = args.now();
    await withTransaction(args.pool, async (tx) => {
      await new UserRepository(tx).upsertUsers(distinctUsers(page.items.map((d) => d.author)), at);
      await new DeviationRepository(tx).upsertDeviations(page.items, at);
    });
    for (const d of page.items) {
      const index = indexOfUrl(d.url);
      if (index !== null && want.indexes.delete(index)) outcome.found++;
    }
    if (want.indexes.size === 0) return;
  }
}

/** The number ending a deviation's URL (gallery-dl's "index"). */
export function indexOfUrl(url: string | null | undefined): number | null {
  const m = /-(\d{1,15})$/.exec(url ?? "");
  return m ? Number(m[1]) : null;
}
