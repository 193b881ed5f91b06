// The bodies of the user and deviation endpoints (profiles, watching, metadata, downloads).
import { z } from "zod";
import { str, bool, num, arr, emptyArrayAsObject, obj, EpochSchema } from "./shapes.ts";
import { UserSchema, type User, DeviationSchema, StatusSchema, GalleryFolderSchema, CollectionFolderSchema, FolderRefSchema } from "./deviation.ts";

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
