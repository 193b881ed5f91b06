// The bodies of browse, static data, util, the staging area (Sta.sh) and the write operations.
import { z } from "zod";
import { str, bool, num, arr, obj, EpochSchema, StashIdSchema } from "./shapes.ts";
import { ImageSchema, UserSchema, DeviationSchema, GallectionSchema } from "./deviation.ts";

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
  suggested_collections: arr(z.looseObject({ collection: GallectionSchema.nullish(), deviations: arr(DeviationSchema) })),
});
export type MltPreview = z.infer<typeof MltPreviewSchema>;

export const CategoryTreeSchema = z.looseObject({
  categories: arr(z.looseObject({ catpath: str(), title: str(), has_subcategory: bool(), parent_catpath: str() })),
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
