// The shape of the simulator's world as a whole: its sizes and options, the Dataset store that routes read
// and change, and GroundTruth, the same store typed read-only for tests. Each entity's type lives with it.
import type { Rng } from "../rng.ts";
import type { VarianceTruth } from "../variance.ts";
import type { SimDeviation } from "./deviations.ts";
import type { SimCollectionFolder, SimGalleryFolder } from "./folders.ts";
import type { HostileDataTargets } from "./hostile.ts";
import type { SimFeedItem, SimMessage, SimNote, SimNoteFolder } from "./inbox.ts";
import type { SimComment, SimStatus } from "./posts.ts";
import type { SimUser } from "./users.ts";

export type DatasetSize = {
  /** Deviations in the account owner's gallery. */
  deviations: number;
  /** Gallery folders of the owner, "Featured" included. */
  galleryFolders: number;
  /** Collection folders of the owner, "Featured" included. */
  collectionFolders: number;
  /** Deviations by other users that the owner has faved (spread over the collection folders). */
  favourites: number;
  notes: number;
  /** Note folders beyond the system ones (Inbox, Sent). */
  noteFolders: number;
  messages: number;
  feedItems: number;
  watchers: number;
  friends: number;
  /** Other users with galleries of their own (the owner watches them). */
  trackedUsers: number;
  trackedUserDeviations: number;
  statuses: number;
};

/** What startSimulator's `dataset` option takes: sizes, plus the downloads work's extras. */
export type DatasetOptions = Partial<DatasetSize> & {
  /**
   * Hostile titles and filenames (traversal, 300 characters, NUL, bidi overrides, Windows device names,
   * names differing only in case or normalisation) on the owner's downloadable deviations, and a hostile
   * gallery folder and collection name. Off by default: it changes nothing else in the dataset.
   */
  hostileNames?: boolean;
  /**
   * Hostile values on a few of the owner's live gallery deviations (see HOSTILE_DATA and DeviationQuirks):
   * a 10 000-character title with a 1 MB description and 2 000 tags, script and HTML in a title and a
   * description, counters as numeric strings, PHP's `[]` for empty objects, unknown extra fields, optional
   * fields left out, and a deleted deviation, favourite and status. Off by default; it draws no random numbers,
   * so the rest of the dataset is unchanged.
   */
  hostileData?: boolean;
  /** Original sizes in bytes for the owner's downloadable deviations, by index (see downloadableOwnerDeviations). */
  largeFiles?: Array<{ index: number; bytes: number }>;
  /**
   * Draws what the real service allows beyond the base dataset (see variance.ts and VarianceTruth): unfiled
   * and doubly filed gallery deviations, empty folders, gone users, locked works, the bucket page key. Off by
   * default; it draws from its own generator after everything else, so the base dataset is unchanged.
   */
  variance?: boolean;
};

export const DEFAULT_DATASET_SIZE: DatasetSize = {
  deviations: 500,
  galleryFolders: 6,
  collectionFolders: 4,
  favourites: 120,
  notes: 60,
  noteFolders: 4,
  messages: 100,
  feedItems: 40,
  watchers: 30,
  friends: 20,
  trackedUsers: 3,
  trackedUserDeviations: 40,
  statuses: 8,
};

export type SimStashItem = {
  itemid: string;
  stackid: string;
  stack: string;
  title: string;
  artistComments: string;
  tags: string[];
  files: Array<{ filename: string; contentType: string; size: number; sha256: string }>;
  creationTime: number;
  publishedDeviationId: string | null;
};

export type Dataset = {
  seed: number;
  size: DatasetSize;
  ownerId: string;
  users: Map<string, SimUser>;
  usersByName: Map<string, SimUser>;
  deviations: Map<string, SimDeviation>;
  galleryFolders: SimGalleryFolder[];
  /**
   * Gallery deviations in no folder, by owner userid (newest first): /gallery/all lists them, no folder does
   * (docs/service-behaviour.md#folders-optional). Empty unless dataset.variance. See galleryAllIds.
   */
  unfiled: Map<string, string[]>;
  collectionFolders: SimCollectionFolder[];
  comments: SimComment[];
  statuses: SimStatus[];
  noteFolders: SimNoteFolder[];
  notes: SimNote[];
  messages: SimMessage[];
  feed: SimFeedItem[];
  stash: SimStashItem[];
  /** Counters for ids minted after generation (writes, activity). */
  counters: { numericId: number; messageSeq: number; feedSeq: number };
  /** What dataset.hostileData changed (absent without it). */
  hostile?: HostileDataTargets;
  /** What dataset.variance drew (absent without it). */
  variance?: VarianceTruth;
};

type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends Map<infer K, infer V>
    ? ReadonlyMap<K, DeepReadonly<V>>
    : T extends Array<infer U>
      ? ReadonlyArray<DeepReadonly<U>>
      : T extends object
        ? { readonly [P in keyof T]: DeepReadonly<T[P]> }
        : T;

/** The dataset as tests see it: the live store, typed read-only. */
export type GroundTruth = DeepReadonly<Dataset>;

/** What the generator's steps share: the seeded generator, the start time and the store being filled. */
export type GenContext = { rng: Rng; startMs: number; numericId: number; dataset: Dataset };
