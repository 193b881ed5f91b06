// Zod schemas of the service's response bodies (docs/service-behaviour.md#object-shapes), written to
// accept what the real service sends: every non-identity field optional and nullable, PHP's `[]` where an
// object is expected, epoch seconds as strings, counters as numeric strings, 64-bit stash ids kept as
// strings, and unknown fields kept so raw JSON can be archived.
import { z } from "zod";

// ---- building blocks -------------------------------------------------------------------------------

const str = () => z.string().nullish();
const bool = () => z.boolean().nullish();
/** A decimal number written as a string ("12", " 3.5 "): PHP sends some counters that way (note folders' `count`). */
const NUMERIC_STRING = /^\s*-?\d+(\.\d+)?\s*$/;
/** A numeric string becomes its number; anything else is left for the schema to judge. */
const numericString = (v: unknown) => (typeof v === "string" && NUMERIC_STRING.test(v) ? Number(v) : v);
/** A number, also sent as a numeric string ("favourites": "12"); read as the number, so the mirror stores numbers. */
const num = () => z.preprocess(numericString, z.number()).nullish();
const arr = <T extends z.ZodType>(item: T) => z.array(item).nullish();

/** PHP serialises an empty associative array as `[]`; read that as `{}` so the object schema applies. */
const emptyArrayAsObject = (v: unknown) => (Array.isArray(v) && v.length === 0 ? {} : v);

/** A nested, non-identity object: loose (unknown keys kept), `[]` accepted as `{}`, absent or null allowed. */
const obj = <S extends z.core.$ZodLooseShape>(shape: S) => z.preprocess(emptyArrayAsObject, z.looseObject(shape)).nullish();

/**
 * An id the service sends as a string, also read when a client or model sends it as a number (comments,
 * messages, notes): kept as its decimal string (docs/service-behaviour.md#tolerant-reading).
 */
const textId = () => z.union([z.string(), z.number().transform(String)]);

/** Epoch seconds: a string on deviations (`published_time`), an integer elsewhere (whofaved `time`). */
const EpochSchema = z.union([z.string(), z.number()]);

/** Stash ids are 64-bit integers; kept as decimal strings. (Precision above 2^53 is already lost if the
 * JSON parser read them as numbers; see the transport.) */
export const StashIdSchema = z
  .union([z.string(), z.number(), z.bigint()])
  .transform((v) => (typeof v === "string" ? v : v.toString()));

// ---- timestamps (docs/service-behaviour.md#timestamps) ---------------------------------------------

// The parsers live in the foundation (src/timestamps.ts), where src/db reads the same times; kept importable here.
export { parseEpochSeconds, parseIsoTime } from "../timestamps.ts";

// ---- images, users, deviations ---------------------------------------------------------------------

export const ImageSchema = z.looseObject({
  src: z.string(),
  height: num(),
  width: num(),
  transparency: bool(),
  filesize: num(),
});
export type Image = z.infer<typeof ImageSchema>;

const TextContentSchema = obj({
  excerpt: str(),
  body: obj({ type: str(), markup: str(), features: str() }),
});

export const UserSchema = z.looseObject({
  userid: z.string(),
  username: z.string(),
  usericon: str(),
  type: str(),
  is_watching: bool(),
  is_subscribed: bool(),
  details: obj({ sex: str(), age: num(), joindate: str() }),
  geo: obj({ country: str(), countryid: num(), timezone: str() }),
  get profile() {
    return obj({
      user_is_artist: bool(),
      artist_level: str(),
      artist_specialty: str(),
      real_name: str(),
      tagline: str(),
      website: str(),
      cover_photo: str(),
      profile_pic: DeviationSchema.nullish(),
    });
  },
  stats: obj({ watchers: num(), friends: num() }),
  sidebar: obj({}),
});
export type User = z.infer<typeof UserSchema>;

export const DeviationSchema = z.looseObject({
  deviationid: z.string(),
  /** Always sent by the service; when true most other fields are absent. */
  is_deleted: bool(),
  printid: str(),
  url: str(),
  title: str(),
  category: str(),
  category_path: str(),
  is_favourited: bool(),
  is_published: bool(),
  is_blocked: bool(),
  author: UserSchema.nullish(),
  stats: obj({ comments: num(), favourites: num() }),
  /** Epoch seconds as a string, e.g. "1600102888"; read with parseEpochSeconds. */
  published_time: EpochSchema.nullish(),
  allows_comments: bool(),
  preview: ImageSchema.nullish(),
  content: ImageSchema.nullish(),
  thumbs: arr(ImageSchema),
  videos: arr(z.looseObject({ src: z.string(), quality: str(), filesize: num(), duration: num() })),
  flash: obj({ src: str(), height: num(), width: num() }),
  daily_deviation: obj({ body: str(), time: str(), giver: UserSchema.nullish(), suggester: UserSchema.nullish() }),
  excerpt: str(),
  text_content: TextContentSchema,
  is_mature: bool(),
  is_downloadable: bool(),
  download_filesize: num(),
  is_pinned: bool(),
  tier: obj({
    state: str(),
    is_user_subscribed: bool(),
    can_user_subscribe: bool(),
    subproductid: num(),
    dollar_price: z.union([z.string(), z.number()]).nullish(),
    settings: obj({ access_settings: str() }),
    /** Arrives as `[]` instead of `{}` when empty (DeviantArtFs README). */
    stats: obj({}),
    benefits: arr(z.string()),
  }),
  tier_access: str(),
  get primary_tier() {
    return DeviationSchema.nullish();
  },
  get cover_image() {
    return DeviationSchema.nullish();
  },
  premium_folder_data: obj({
    type: str(),
    has_access: bool(),
    gallery_id: str(),
    points_price: num(),
    dollar_price: z.union([z.number(), z.string()]).nullish(),
    num_subscribers: num(),
    subproductid: num(),
  }),
  suggested_reasons: arr(z.number()),
  motion_book: obj({ embed_url: str() }),
  challenge: obj({}),
  challenge_entry: obj({}),
  is_multi_media: bool(),
});
export type Deviation = z.infer<typeof DeviationSchema>;

/** `/user/profile/posts` returns deviation-shaped journals and status updates (docs/service-behaviour.md#profile-posts-incomplete). */
export const ProfilePostSchema = DeviationSchema;
export type ProfilePost = Deviation;

// ---- statuses and comments -------------------------------------------------------------------------

export const StatusSchema = z.looseObject({
  statusid: str(),
  body: str(),
  /** ISO 8601. */
  ts: str(),
  url: str(),
  comments_count: num(),
  is_share: bool(),
  is_deleted: bool(),
  author: UserSchema.nullish(),
  get items() {
    return arr(z.looseObject({ type: str(), status: StatusSchema.nullish(), deviation: DeviationSchema.nullish() }));
  },
  text_content: TextContentSchema,
});
export type Status = z.infer<typeof StatusSchema>;

export const CommentSchema = z.looseObject({
  commentid: textId(),
  parentid: textId().nullish(),
  /** ISO 8601. */
  posted: str(),
  replies: num(),
  /** null | hidden_by_owner | hidden_by_admin | hidden_by_commenter | hidden_as_spam */
  hidden: str(),
  body: str(),
  is_liked: bool(),
  is_featured: bool(),
  likes: num(),
  user: UserSchema.nullish(),
  text_content: TextContentSchema,
});
export type Comment = z.infer<typeof CommentSchema>;

/** `context` of a `/comments/{commentid}/siblings` page (may arrive as `[]`). */
export const CommentContextSchema = obj({
  parent: CommentSchema.nullish(),
  item_profile: UserSchema.nullish(),
  item_deviation: DeviationSchema.nullish(),
  item_status: StatusSchema.nullish(),
});
export type CommentContext = z.infer<typeof CommentContextSchema>;

// ---- folders ---------------------------------------------------------------------------------------

export const GalleryFolderSchema = z.looseObject({
  folderid: z.string(),
  parent: str(),
  name: str(),
  description: str(),
  size: num(),
  deviations: arr(DeviationSchema),
  has_subfolders: bool(),
  get subfolders() {
    return arr(GalleryFolderSchema);
  },
  premium_folder_data: obj({}),
});
export type GalleryFolder = z.infer<typeof GalleryFolderSchema>;

export const CollectionFolderSchema = z.looseObject({
  folderid: z.string(),
  name: str(),
  description: str(),
  size: num(),
  thumb: DeviationSchema.nullish(),
  deviations: arr(DeviationSchema),
  premium_folder_data: obj({}),
});
export type CollectionFolder = z.infer<typeof CollectionFolderSchema>;

/** A folder as listed in metadata (`ext_collection`, `ext_gallery`). */
export const FolderRefSchema = z.looseObject({ folderid: z.union([z.string(), z.number()]), name: str() });
export type FolderRef = z.infer<typeof FolderRefSchema>;

/** More Like This "gallection": a numeric folder id, a name and its owner. */
export const GallectionSchema = z.looseObject({
  folderid: z.union([z.number(), z.string()]),
  name: str(),
  owner: UserSchema.nullish(),
});
export type Gallection = z.infer<typeof GallectionSchema>;

// ---- user endpoints --------------------------------------------------------------------------------

export const WhoamiSchema = UserSchema;
export type Whoami = User;

export const WhoisResponseSchema = z.looseObject({ results: z.array(UserSchema) });
export type WhoisResponse = z.infer<typeof WhoisResponseSchema>;

export const ProfileSchema = z.looseObject({
  user: UserSchema,
  is_watching: bool(),
  profile_url: str(),
  user_is_artist: bool(),
  artist_level: str(),
  artist_specialty: str(),
  real_name: str(),
  tagline: str(),
  countryid: num(),
  country: str(),
  website: str(),
  bio: str(),
  cover_photo: str(),
  profile_pic: DeviationSchema.nullish(),
  last_status: StatusSchema.nullish(),
  stats: obj({
    user_deviations: num(),
    user_favourites: num(),
    user_comments: num(),
    profile_pageviews: num(),
    profile_comments: num(),
  }),
  collections: arr(CollectionFolderSchema),
  galleries: arr(GalleryFolderSchema),
});
export type Profile = z.infer<typeof ProfileSchema>;

/** An entry of `/user/friends/{u}` (with `watches_you`) or `/user/watchers/{u}` (without). */
export const WatchEntrySchema = z.looseObject({
  user: UserSchema,
  is_watching: bool(),
  watches_you: bool(),
  /** ISO 8601 or null. */
  lastvisit: str(),
  watch: obj({
    friend: bool(),
    deviations: bool(),
    journals: bool(),
    forum_threads: bool(),
    critiques: bool(),
    scraps: bool(),
    activity: bool(),
    collections: bool(),
  }),
});
export type WatchEntry = z.infer<typeof WatchEntrySchema>;

export const FriendsSearchResponseSchema = z.looseObject({ results: z.array(UserSchema) });
export type FriendsSearchResponse = z.infer<typeof FriendsSearchResponseSchema>;

export const WatchingSchema = z.looseObject({ watching: z.boolean() });
export type Watching = z.infer<typeof WatchingSchema>;

/** `/user/tiers/{username}`: tier objects are deviations. */
export const TiersResponseSchema = z.looseObject({ results: z.array(DeviationSchema) });
export type TiersResponse = z.infer<typeof TiersResponseSchema>;

export const DamnTokenSchema = z.looseObject({ damntoken: z.string() });
export type DamnToken = z.infer<typeof DamnTokenSchema>;

// ---- deviation endpoints ---------------------------------------------------------------------------

export const DeviationContentSchema = z.looseObject({
  html: str(),
  css: str(),
  css_fonts: arr(z.string()),
});
export type DeviationContent = z.infer<typeof DeviationContentSchema>;

export const DownloadSchema = z.looseObject({
  /** Signed URL valid for ~10 minutes: fetch it at once, never store it. */
  src: z.string(),
  filename: str(),
  width: num(),
  height: num(),
  filesize: num(),
});
export type Download = z.infer<typeof DownloadSchema>;

export const MetadataSchema = z.looseObject({
  deviationid: z.string(),
  printid: str(),
  author: UserSchema.nullish(),
  is_watching: bool(),
  title: str(),
  /** HTML; the deviation object itself carries no description. */
  description: str(),
  license: str(),
  allows_comments: bool(),
  /** Spelling seen in some wrappers. */
  allow_comments: bool(),
  tags: arr(z.looseObject({ tag_name: z.string(), sponsored: bool(), sponsor: str() })),
  is_favourited: bool(),
  is_mature: bool(),
  mature_level: str(),
  mature_classification: arr(z.string()),
  submission: obj({
    /** ISO 8601. */
    creation_time: str(),
    category: str(),
    file_size: str(),
    resolution: str(),
    submitted_with: obj({ app: str(), url: str() }),
  }),
  stats: obj({
    views: num(),
    views_today: num(),
    favourites: num(),
    comments: num(),
    downloads: num(),
    downloads_today: num(),
  }),
  camera: z.preprocess(emptyArrayAsObject, z.record(z.string(), z.union([z.string(), z.number()]))).nullish(),
  collections: arr(FolderRefSchema),
  galleries: arr(FolderRefSchema),
  can_post_comment: bool(),
  can_post_comments: bool(),
});
export type Metadata = z.infer<typeof MetadataSchema>;

export const MetadataResponseSchema = z.looseObject({ metadata: z.array(MetadataSchema) });
export type MetadataResponse = z.infer<typeof MetadataResponseSchema>;

export const WhofavedEntrySchema = z.looseObject({
  user: UserSchema,
  /** Epoch seconds (integer). */
  time: EpochSchema.nullish(),
});
export type WhofavedEntry = z.infer<typeof WhofavedEntrySchema>;

// ---- messages, notes, feed -------------------------------------------------------------------------

export const MessageSchema = z.looseObject({
  messageid: textId(),
  type: str(),
  orphaned: bool(),
  /** ISO 8601. */
  ts: str(),
  stackid: str(),
  stack_count: num(),
  is_new: bool(),
  originator: UserSchema.nullish(),
  subject: obj({
    profile: UserSchema.nullish(),
    deviation: DeviationSchema.nullish(),
    status: StatusSchema.nullish(),
    comment: CommentSchema.nullish(),
    collection: CollectionFolderSchema.nullish(),
    gallery: GalleryFolderSchema.nullish(),
  }),
  html: str(),
  profile: UserSchema.nullish(),
  deviation: DeviationSchema.nullish(),
  status: StatusSchema.nullish(),
  comment: CommentSchema.nullish(),
  collection: CollectionFolderSchema.nullish(),
});
export type Message = z.infer<typeof MessageSchema>;

export const NoteSchema = z.looseObject({
  noteid: textId(),
  /** ISO 8601. */
  ts: str(),
  unread: bool(),
  starred: bool(),
  sent: bool(),
  subject: str(),
  preview: str(),
  body: str(),
  raw_body: str(),
  user: UserSchema.nullish(),
  recipients: arr(UserSchema),
});
export type Note = z.infer<typeof NoteSchema>;

/** A note folder: its id is `folder` (2024) or `folderid` (2020); `count` is a string. */
export const NoteFolderSchema = z
  .looseObject({
    folder: str(),
    folderid: str(),
    parentid: str(),
    title: str(),
    count: z.union([z.string(), z.number()]).nullish(),
  })
  .refine((f) => Boolean(f.folder ?? f.folderid), { message: "a note folder needs `folder` or `folderid`" });
export type NoteFolder = z.infer<typeof NoteFolderSchema>;

export const NoteFoldersResponseSchema = z.looseObject({ results: z.array(NoteFolderSchema) });
export type NoteFoldersResponse = z.infer<typeof NoteFoldersResponseSchema>;

export const FeedItemSchema = z.looseObject({
  ts: str(),
  type: str(),
  by_user: UserSchema.nullish(),
  deviations: arr(DeviationSchema),
  bucketid: str(),
  bucket_total: num(),
  status: StatusSchema.nullish(),
  comment: CommentSchema.nullish(),
  comment_parent: CommentSchema.nullish(),
  comment_deviation: DeviationSchema.nullish(),
  comment_profile: UserSchema.nullish(),
  comment_status: StatusSchema.nullish(),
  critique_text: str(),
  collection: obj({ folderid: str(), name: str(), url: str(), size: num() }),
  formerly: str(),
  added_count: num(),
  poll: obj({
    question: str(),
    total_votes: num(),
    answers: arr(z.looseObject({ answer: str(), votes: num() })),
  }),
});
export type FeedItem = z.infer<typeof FeedItemSchema>;

export const FeedSettingsSchema = z.looseObject({
  include: obj({
    statuses: bool(),
    deviations: bool(),
    journals: bool(),
    group_deviations: bool(),
    collections: bool(),
    misc: bool(),
  }),
});
export type FeedSettings = z.infer<typeof FeedSettingsSchema>;

// ---- browse ----------------------------------------------------------------------------------------

export const DailyDeviationsSchema = z.looseObject({ has_more: bool(), results: z.array(DeviationSchema) });
export type DailyDeviations = z.infer<typeof DailyDeviationsSchema>;

export const TagSearchResultSchema = z.looseObject({ tag_name: z.string() });
export const TagSearchResponseSchema = z.looseObject({ results: z.array(TagSearchResultSchema) });
export type TagSearchResponse = z.infer<typeof TagSearchResponseSchema>;

export const TopicSchema = z.looseObject({
  name: str(),
  canonical_name: str(),
  example_deviations: arr(DeviationSchema),
  deviations: arr(DeviationSchema),
});
export type Topic = z.infer<typeof TopicSchema>;

export const TopTopicsSchema = z.looseObject({ results: z.array(TopicSchema) });
export type TopTopics = z.infer<typeof TopTopicsSchema>;

/** `/browse/morelikethis/preview`; entries may be sparse (ids and deletion state only). */
export const MltPreviewSchema = z.looseObject({
  seed: str(),
  author: UserSchema.nullish(),
  more_from_artist: arr(DeviationSchema),
  more_from_da: arr(DeviationSchema),
  suggested_collections: arr(
    z.looseObject({ collection: GallectionSchema.nullish(), deviations: arr(DeviationSchema) }),
  ),
});
export type MltPreview = z.infer<typeof MltPreviewSchema>;

export const CategoryTreeSchema = z.looseObject({
  categories: arr(
    z.looseObject({ catpath: str(), title: str(), has_subcategory: bool(), parent_catpath: str() }),
  ),
});
export type CategoryTree = z.infer<typeof CategoryTreeSchema>;

/** `/curated` and `/curated/tags`: shape not documented anywhere we have; kept whole. */
export const CuratedSchema = z.looseObject({});
export type Curated = z.infer<typeof CuratedSchema>;

// ---- data and util ---------------------------------------------------------------------------------

export const CountrySchema = z.looseObject({ countryid: z.union([z.number(), z.string()]), name: z.string() });
export const CountriesSchema = z.looseObject({ results: z.array(CountrySchema) });
export type Countries = z.infer<typeof CountriesSchema>;

/** `/data/privacy`, `/data/submission`, `/data/tos`. */
export const PolicyTextSchema = z.looseObject({ text: z.string() });
export type PolicyText = z.infer<typeof PolicyTextSchema>;

/** `{"status":"success"}` while the token is valid (docs/service-behaviour.md#placebo). */
export const PlaceboSchema = z.looseObject({ status: z.string() });
export type Placebo = z.infer<typeof PlaceboSchema>;

// ---- stash -----------------------------------------------------------------------------------------

export const StashSubmitResultSchema = z.looseObject({
  status: str(),
  itemid: StashIdSchema,
  stack: str(),
  stackid: StashIdSchema.nullish(),
});
export type StashSubmitResult = z.infer<typeof StashSubmitResultSchema>;

export const StashPublishResultSchema = z.looseObject({ status: str(), url: str(), deviationid: z.string() });
export type StashPublishResult = z.infer<typeof StashPublishResultSchema>;

/** Item or stack metadata of the removed stash endpoints (docs/service-behaviour.md#stash-delta-shape). */
export const StashMetadataSchema = z.looseObject({
  title: str(),
  path: str(),
  size: num(),
  description: str(),
  parentid: StashIdSchema.nullish(),
  thumb: ImageSchema.nullish(),
  artist_comments: str(),
  original_url: str(),
  category: str(),
  creation_time: EpochSchema.nullish(),
  files: arr(ImageSchema),
  submission: obj({ file_size: str(), resolution: str(), submitted_with: obj({ app: str(), url: str() }) }),
  stats: obj({ views: num(), views_today: num(), downloads: num(), downloads_today: num() }),
  camera: obj({}),
  stackid: StashIdSchema.nullish(),
  itemid: StashIdSchema.nullish(),
  tags: arr(z.string()),
  html: str(),
});
export type StashMetadata = z.infer<typeof StashMetadataSchema>;

export const StashDeltaSchema = z.looseObject({
  cursor: str(),
  has_more: bool(),
  next_offset: num(),
  reset: bool(),
  entries: arr(
    z.looseObject({
      itemid: StashIdSchema.nullish(),
      stackid: StashIdSchema.nullish(),
      metadata: StashMetadataSchema.nullish(),
      stash_metadata: StashMetadataSchema.nullish(),
      position: num(),
    }),
  ),
});
export type StashDelta = z.infer<typeof StashDeltaSchema>;

export const StashSpaceSchema = z.looseObject({ available_space: num(), total_space: num() });
export type StashSpace = z.infer<typeof StashSpaceSchema>;

export const StashPublishUserdataSchema = z.looseObject({ features: arr(z.string()), agreements: arr(z.string()) });
export type StashPublishUserdata = z.infer<typeof StashPublishUserdataSchema>;

// ---- write-operation results -----------------------------------------------------------------------

/** Generic success body of folder, note, message, watch and settings writes. */
export const SuccessSchema = z.looseObject({ success: bool(), status: str() });
export type Success = z.infer<typeof SuccessSchema>;

export const FaveResultSchema = z.looseObject({ success: bool(), favourites: num() });
export type FaveResult = z.infer<typeof FaveResultSchema>;

/** Folder create: the new folder (`folderid`, `name`, maybe more). */
export const FolderCreateResultSchema = z.looseObject({
  folderid: z.string(),
  name: str(),
  description: str(),
  parent: str(),
});
export type FolderCreateResult = z.infer<typeof FolderCreateResultSchema>;

/** Journal/literature create → `{deviationid}`; update and deviation edit → `{status, url, deviationid}`. */
export const DeviationWriteResultSchema = z.looseObject({ status: str(), url: str(), deviationid: z.string() });
export type DeviationWriteResult = z.infer<typeof DeviationWriteResultSchema>;

export const StatusPostResultSchema = z.looseObject({ statusid: z.string() });
export type StatusPostResult = z.infer<typeof StatusPostResultSchema>;

/**
 * One result per recipient (docs/service-behaviour.md#note-send-per-recipient): a recipient that failed
 * comes back with `success: false` and a user object whose fields may all be null. A partial success is
 * a valid answer, never a reason to send again.
 */
export const NoteSendResultSchema = z.looseObject({
  results: z.array(
    z.looseObject({
      success: bool(),
      user: z.looseObject({ userid: str(), username: str(), usericon: str(), type: str() }).nullish(),
      noteid: str(),
    }),
  ),
});
export type NoteSendResult = z.infer<typeof NoteSendResultSchema>;

export const NoteFolderCreateResultSchema = z
  .looseObject({ status: str(), folder: str(), folderid: str(), title: str() })
  .refine((f) => Boolean(f.folder ?? f.folderid), { message: "a created note folder needs `folder` or `folderid`" });
export type NoteFolderCreateResult = z.infer<typeof NoteFolderCreateResultSchema>;
