// The records of the simulator's world and the store that holds them: each entity's record (users,
// deviations, folders, posts, the inbox, what hostileData and variance change), the sizes and options, the
// Dataset store that routes read and change, and GroundTruth, the same store typed read-only for tests. How
// each entity is drawn lives in its own file (dataset/users.ts, dataset/deviations.ts, ...), which imports
// these records; the records import none of them.
import type { Rng } from "../rng.ts";

// ---- users --------------------------------------------------------------------------------------

export type SimUser = {
  userid: string;
  username: string;
  usericon: string;
  type: "regular" | "premium" | "group";
  joindate: string;
  realName: string;
  tagline: string;
  country: string;
  countryid: number;
  website: string;
  bio: string;
  artistLevel: string | null;
  artistSpecialty: string | null;
  sex: string | null;
  age: number | null;
  /** Deactivated by the user: every user-scoped endpoint answers error_code 1 (docs/service-behaviour.md#user-error-codes). */
  isDeactivated: boolean;
  /** Suspended by staff: error_code 0. Absent (not false) on generated users, so the base dataset is unchanged. */
  isSuspended?: boolean;
  /** Userids of this user's watchers. */
  watcherIds: string[];
  /** Who this user watches, with the watch settings the service reports. */
  friends: SimWatch[];
  profilePageviews: number;
};

export type WatchFlags = {
  friend: boolean;
  deviations: boolean;
  journals: boolean;
  forum_threads: boolean;
  critiques: boolean;
  scraps: boolean;
  activity: boolean;
  collections: boolean;
};

export type SimWatch = { userid: string; watch: WatchFlags; lastvisit: string | null };

// ---- deviations ---------------------------------------------------------------------------------

export type DeviationKind = "image" | "journal" | "literature" | "video";

/**
 * What /deviation/{deviationid} answers for a deviation once it is deleted: the `is_deleted` stub with HTTP
 * 200, or HTTP 400 invalid_request "Deviation not found." with this error_code (null: none). Public clients
 * disagree on which (docs/service-behaviour.md#deleted-deviation-lookup).
 */
export type DeletedLookup = { kind: "stub" } | { kind: "refusal"; errorCode: number | null };

export type SimImage = { width: number; height: number; filesize: number; transparency: boolean; ext: "jpg" | "png" | "gif" | "webp" };

/**
 * How the simulator renders one deviation (object and metadata) beyond its values: what the real service
 * is documented to do (docs/service-behaviour.md#schema-tolerance: `[]` for `{}`, unknown fields added per
 * minor version, optional fields absent) and what a hostile test needs on top (counters as numeric strings,
 * as `count` of note folders and `published_time` already are).
 */
export type DeviationQuirks = {
  /** `stats` counters sent as numeric strings ("favourites": "12"), in the deviation and in its metadata. */
  statsAsStrings?: boolean;
  /** PHP's empty array for empty objects: the deviation's `stats: []`, metadata `camera: []` and `submission.submitted_with: []`. */
  emptyObjectsAsArrays?: boolean;
  /** Fields no client knows yet, in the deviation and its metadata (objects, arrays, nulls). */
  extraFields?: boolean;
  /** Optional fields left out: printid, is_favourited, allows_comments, stats, published_time, download_filesize; metadata license, tags, submission, stats. */
  omitOptional?: boolean;
};

export type SimDeviation = {
  deviationid: string;
  numericId: number;
  authorId: string;
  kind: DeviationKind;
  title: string;
  slug: string;
  /** Epoch seconds. */
  publishedTime: number;
  isDeleted: boolean;
  /** Pinned answer of /deviation/{deviationid} once deleted; otherwise see variance.ts#deletedLookupOf. */
  deletedLookup?: DeletedLookup;
  isMature: boolean;
  matureLevel: "strict" | "moderate" | null;
  matureClassification: string[];
  isDownloadable: boolean;
  allowsComments: boolean;
  isPinned: boolean;
  printid: string | null;
  stats: { favourites: number; views: number; viewsToday: number; downloads: number; downloadsToday: number };
  /** Description HTML (metadata only). */
  description: string;
  tags: string[];
  license: string;
  /** Original file (images; also the poster frame of videos). */
  image: SimImage | null;
  /** The filename /deviation/download reports, when not derived from the slug (hostile names). */
  filename?: string;
  /** A multi-image post: the API exposes only the first image (docs/service-behaviour.md#multi-image). */
  isMultiMedia?: boolean;
  videos: Array<{ quality: string; filesize: number; duration: number }> | null;
  /** Journal and literature text; apiHtmlEmpty models /deviation/content returning an empty `html`. */
  text: { html: string; excerpt: string; apiHtmlEmpty: boolean } | null;
  /** Subscription-tier content: `tier.stats` is sent as `[]` when statsAsArray. */
  tier: { statsAsArray: boolean; state: string } | null;
  /**
   * In a premium (watchers-only or paid) gallery folder the viewer has no access to: listed with
   * `tier_access: "locked"` and `premium_folder_data`, without `content` (docs/service-behaviour.md#tier-locked).
   */
  premiumFolder?: { type: "watchers" | "paid"; galleryId: string; pointsPrice: number | null; dollarPrice: number | null };
  camera: Record<string, string> | null;
  /** ISO creation time (metadata submission.creation_time). */
  creationTime: string;
  /** Bumped by every edit. */
  version: number;
  /** Userids who faved it (the owner's faves are tracked by the collection folders). */
  favedBy: Array<{ userid: string; time: number }>;
  /** Rendering quirks (dataset.hostileData). */
  quirks?: DeviationQuirks;
};

// ---- gallery and collection folders -------------------------------------------------------------

export type SimGalleryFolder = {
  folderid: string;
  ownerId: string;
  parent: string | null;
  name: string;
  description: string;
  /** Ordered; may include deleted deviations, which listings skip. */
  deviationIds: string[];
};

export type SimCollectionFolder = {
  folderid: string;
  ownerId: string;
  name: string;
  description: string;
  deviationIds: string[];
};

// ---- comments and statuses ----------------------------------------------------------------------

export type CommentTarget = { kind: "deviation" | "profile" | "status"; id: string };

export type SimComment = {
  commentid: string;
  parentid: string | null;
  target: CommentTarget;
  posted: string;
  userId: string;
  body: string;
  hidden: null | "hidden_by_owner" | "hidden_by_admin" | "hidden_by_commenter" | "hidden_as_spam";
  likes: number;
  isFeatured: boolean;
};

export type SimStatus = {
  statusid: string;
  authorId: string;
  body: string;
  ts: string;
  isDeleted: boolean;
  /** A shared deviation, if any. */
  sharedDeviationId: string | null;
};

// ---- notes, messages and the watch feed ---------------------------------------------------------

export type SimNoteFolder = { folderid: string; parentid: string | null; title: string; system: boolean };

export type SimNote = {
  noteid: string;
  folderid: string;
  ts: string;
  unread: boolean;
  starred: boolean;
  sent: boolean;
  subject: string;
  body: string;
  fromId: string;
  recipientIds: string[];
};

export type MessageBox = "feedback" | "mentions";

export type FeedbackType = "comments" | "replies" | "activity";

export type SimMessage = {
  messageid: string;
  /** Insertion order, newest highest; the cursor of /messages/feed is built on it. */
  seq: number;
  box: MessageBox;
  feedbackType: FeedbackType | null;
  type: string;
  ts: string;
  isNew: boolean;
  originatorId: string;
  /** Messages with the same stackid fold into one entry in stacked views. */
  stackid: string;
  subjectDeviationId: string | null;
  subjectCommentId: string | null;
  html: string;
  /** The text of the comment a comment, reply or mention message carries (default "Nice work!"). */
  commentBody?: string;
};

export type SimFeedItem = {
  seq: number;
  ts: string;
  type: "deviation_submitted" | "journal_submitted" | "status" | "collection_update";
  byUserId: string;
  bucketid: string;
  deviationIds: string[];
  statusId: string | null;
  collectionFolderId: string | null;
};

// ---- what dataset.hostileData changed -----------------------------------------------------------

/**
 * Which of the owner's deviations dataset.hostileData changed, by role (ids), for tests. The deviations are
 * the newest live ones of the owner's galleries that hostileNames left alone.
 */
export type HostileDataTargets = {
  oversized: string;
  script: string;
  statsAsStrings: string;
  emptyArrays: string;
  omitted: string;
  deleted: string;
  deletedFavourite: string | null;
  deletedStatus: string | null;
};

// ---- what dataset.variance drew (src/simulator/variance.ts draws it) ----------------------------

export type BucketPageKey = "results" | "items";

/** What dataset.variance drew, for tests to compute what a token may see. */
export type VarianceTruth = {
  /** The array key of /feed/home/{bucketid} pages on this simulator instance. */
  bucketKey: BucketPageKey;
  /** Per gallery owner (the account owner and every tracked user), by userid. */
  galleries: Map<string, GalleryVariance>;
  /** Empty collection folders added to the owner's. */
  emptyCollectionFolders: string[];
  /** Non-tracked authors of the owner's favourites, gone before the first sync (userids). */
  deactivatedUsers: string[];
  suspendedUsers: string[];
  /** Tracked users' deviations in a premium folder the viewer cannot open (deviationids). */
  lockedDeviations: string[];
  /** Tracked users' images variance marked as multi-image posts (`is_multi_media`), beyond the base dataset's. */
  multiImageDeviations: string[];
  /** Tracked users' works variance made mature, beyond the base dataset's: a public token does not list them. */
  matureDeviations: string[];
  /** Salts the per-deviation draw of what /deviation/{deviationid} answers once it is deleted (deletedLookupOf). */
  deletedLookupSalt: number;
};

export type GalleryVariance = {
  /** Taken out of every folder: only /gallery/all lists them (also in Dataset.unfiled). */
  unfiled: string[];
  /** Added to a second non-Featured folder. */
  secondFolder: string[];
  /** Folders added with nothing in them. */
  emptyFolders: string[];
};

// ---- the store ------------------------------------------------------------------------------------

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
