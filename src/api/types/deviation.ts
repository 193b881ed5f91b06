// The schemas of the objects most answers carry: images, users, deviations, statuses, comments and folders.
import { z } from "zod";
import { str, bool, num, arr, obj, textId, EpochSchema } from "./shapes.ts";

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
