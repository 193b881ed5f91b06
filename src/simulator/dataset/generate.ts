// Draws a seeded, deterministic world: every step takes its numbers from one generator in a fixed order, so
// the same seed and options give the same dataset, byte for byte. A new step goes after the others (or draws
// from a generator of its own, as variance does), never between them.
import { createRng } from "../rng.ts";
import { applyVariance, VARIANCE_SEED_SALT } from "../variance.ts";
import { makeFavourites, makeGallery } from "./folders.ts";
import { applyDownloadExtras, applyHostileTitles } from "./hostile.ts";
import { makeFeed, makeMessages, makeNotes } from "./inbox.ts";
import { DEFAULT_DATASET_SIZE, type Dataset, type DatasetOptions, type DatasetSize, type GenContext } from "./model.ts";
import { makeComments, makeStatuses } from "./posts.ts";
import { makePeople } from "./users.ts";

export function generateDataset(seed: number, options: DatasetOptions, start: Date): Dataset {
  const { hostileNames: _hostile, hostileData: _hostileData, largeFiles: _large, variance: _variance, ...sizeOverrides } = options;
  const size: DatasetSize = { ...DEFAULT_DATASET_SIZE, ...sizeOverrides };
  const rng = createRng(seed);
  const startMs = start.getTime();
  const dataset: Dataset = {
    seed,
    size,
    ownerId: "",
    users: new Map(),
    usersByName: new Map(),
    deviations: new Map(),
    galleryFolders: [],
    unfiled: new Map(),
    collectionFolders: [],
    comments: [],
    statuses: [],
    noteFolders: [],
    notes: [],
    messages: [],
    feed: [],
    stash: [],
    counters: { numericId: 700_000_000 + rng.int(0, 99_999_999), messageSeq: 0, feedSeq: 0 },
  };
  const ctx: GenContext = { rng, startMs, numericId: 0, dataset };
  const who = makePeople(ctx, size);
  const { owner, tracked } = who;

  // The owner's gallery: folder 0 is "Featured"; deviations spread over the rest, some folders nested.
  const ownerDevs = makeGallery(rng, dataset, startMs, owner.userid, size.deviations, size.galleryFolders, true);
  // Tracked users' galleries.
  for (const u of tracked) makeGallery(rng, dataset, startMs, u.userid, size.trackedUserDeviations, 3, false);

  makeFavourites(ctx, who, ownerDevs);
  makeStatuses(ctx, owner, ownerDevs);
  makeComments(ctx, who, ownerDevs);
  makeNotes(ctx, who);
  makeMessages(ctx, who, ownerDevs);
  makeFeed(ctx, who);
  applyHostileTitles(ownerDevs);

  applyDownloadExtras(dataset, options);
  // Its own generator, after everything else: the base dataset stays as it is, and seeds still differ.
  if (options.variance)
    applyVariance(
      dataset,
      createRng(seed ^ VARIANCE_SEED_SALT),
      tracked.map((u) => u.userid),
    );
  return dataset;
}
