// The bodies of messages, notes and the deprecated feed.
import { z } from "zod";
import { str, bool, num, arr, obj, textId } from "./shapes.ts";
import { UserSchema, DeviationSchema, StatusSchema, CommentSchema, GalleryFolderSchema, CollectionFolderSchema } from "./deviation.ts";

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
