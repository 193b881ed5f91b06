// The parameter types of the client's methods: listing options, owner and mature flags, and the fields
// of the write operations.
import type { Params } from "../transport.ts";
import type { Metadata } from "../types.ts";

/** Listing options: page size (the catalogue's maximum by default), where to start, and cancellation. */
export type OffsetListOptions = { limit?: number; startOffset?: number; ceiling?: number; signal?: AbortSignal; maxWaitMs?: number };
export type CursorListOptions = { limit?: number; startCursor?: string; signal?: AbortSignal; maxWaitMs?: number };
export type CallOptions = {
  signal?: AbortSignal;
  maxWaitMs?: number;
  /** One attempt: a throttle, a 5xx or no answer is not retried (the caller asks again at a later run). */
  once?: boolean;
};

/** `expand` options; each one costs an extra request against the rate limit (docs/service-behaviour.md#rate-limits). */
export type Expand = "user.details" | "user.geo" | "user.profile" | "user.stats" | "user.watch" | "deviation.challenge" | (string & {});
export type Mature = {
  /** Defaults to true with a user token (client tokens hide mature items anyway). */
  mature_content?: boolean;
};
export type WithSession = {
  /** Whether per-viewer state (watch/fave flags) is computed; `false` empties mature folders for signed-in users (dakit). */
  with_session?: boolean;
};
export type OwnerParams = Mature &
  WithSession & {
    /** Owner of the gallery/collection; omitted = the authenticated user. */
    username?: string;
    expand?: readonly Expand[];
  };
export type FolderListParams = OwnerParams & {
  calculate_size?: boolean;
  /** First 5 deviations of each folder. */
  ext_preload?: boolean;
  filter_empty_folder?: boolean;
};
export type GalleryFolderParams = OwnerParams & { mode?: "newest" | "popular" };
export type MetadataExt = {
  ext_submission?: boolean;
  ext_camera?: boolean;
  ext_stats?: boolean;
  /** User token only. */
  ext_collection?: boolean;
  /** User token only. */
  ext_gallery?: boolean;
};
export type MetadataBatch = {
  /** The ids sent in this batch, in the caller's order. */
  ids: string[];
  /** Metadata in the order of `ids` (ids the service did not answer for are left out and listed in `missing`). */
  metadata: Metadata[];
  missing: string[];
};
export type CommentListParams = Mature & {
  /** Replies of this comment only. */
  commentid?: string;
  /** 0–5. */
  maxdepth?: number;
};
export type FeedbackType = "comments" | "replies" | "activity" | (string & {});
export type MessageFolderParams = { stack?: boolean; folderid?: string };
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
export type FeedInclude = {
  statuses: boolean;
  deviations: boolean;
  journals: boolean;
  group_deviations: boolean;
  collections: boolean;
  misc: boolean;
};
export type License = { creative_commons: false } | { creative_commons: true; commercial: "yes" | "no"; modify: "yes" | "no" | "share" };
export type MatureClassification = "nudity" | "sexual" | "gore" | "language" | "ideology";

/** The editable fields of a journal; an update sends all of them (an omitted field would be cleared). */
export type JournalFields = {
  title: string;
  tags: readonly string[];
  is_mature: boolean;
  allow_comments: boolean;
  license: License;
  /** The cover is the one field an update keeps when omitted; `null` in changes clears it. */
  cover_image_deviation_id?: string | null;
};
export type JournalCreate = Omit<JournalFields, "cover_image_deviation_id"> & {
  body: string;
  cover_image_deviation_id?: string;
  embedded_image_deviation_id?: string;
};
/** The editable fields of literature; an update sends all of them (null or empty clears). */
export type LiteratureFields = {
  title: string;
  tags: readonly string[];
  galleryids: readonly string[];
  is_mature: boolean;
  mature_level?: "strict" | "moderate";
  mature_classification?: readonly MatureClassification[];
  allow_comments: boolean;
  license: License;
};
export type LiteratureCreate = LiteratureFields & { body: string; description?: string; embedded_image_deviation_id?: string };
export type DeviationEdit = {
  title?: string;
  is_mature?: boolean;
  mature_level?: "strict" | "moderate";
  mature_classification?: readonly MatureClassification[];
  allow_comments?: boolean;
  galleryids?: readonly string[];
  allow_free_download?: boolean;
  add_watermark?: boolean;
  license?: License;
  tags?: readonly string[];
};
export type StashSubmit = {
  /** Overwrite this existing item instead of creating a new one. */
  itemid?: string;
  title?: string;
  artist_comments?: string;
  tags?: readonly string[];
  original_url?: string;
  is_dirty?: boolean;
  /** Name of a new stack, or the id of an existing one. */
  stack?: string;
  stackid?: string;
  /**
   * File upload is NOT supported yet: ApiRequest carries only form fields, and /stash/submit needs a
   * multipart body. Passing files throws; only metadata changes of an existing `itemid` can be sent.
   */
  files?: never;
};
export type StashPublish = {
  itemid: string;
  is_mature: boolean;
  mature_level?: "strict" | "moderate";
  mature_classification?: readonly MatureClassification[];
  agree_submission: boolean;
  agree_tos: boolean;
  feature?: boolean;
  allow_comments?: boolean;
  request_critique?: boolean;
  /** 0–8. */
  display_resolution?: number;
  sharing?: string;
  license?: License;
  galleryids?: readonly string[];
  allow_free_download?: boolean;
  add_watermark?: boolean;
  /** Fields added later (e.g. AI flags), sent as given. */
  extra?: Params;
};
export type ProfileUpdate = {
  user_is_artist?: boolean;
  /** 0 none, 1 student, 2 hobbyist, 3 professional. */
  artist_level?: number;
  /** 0–9 (DeviantArtFs ArtistSpecialty). */
  artist_specialty?: number;
  countryid?: number;
  website?: string;
  website_label?: string;
  tagline?: string;
  show_badges?: boolean;
  /** interests[n] by the service's interest number. */
  interests?: Readonly<Record<number, string>>;
  /** social_links[n] by the service's network number. */
  social_links?: Readonly<Record<number, string>>;
};

/** The fields of a folder update; only the ones given are sent. */
export type FolderUpdate = { folderid: string; name?: string; description?: string; cover_deviationid?: string };
