// The typed client: one method per operation dvault uses, each going through the catalogue (method, path,
// paging, page size) and a response schema, over any ApiTransport. Handlers call this, never the transport.
import { z } from "zod";
import { expandPath, operation, pathParams, type Operation, type OperationId, type ResponseOf, type Scope } from "./catalogue.ts";
import type { ApiRequest, ApiTransport, PageIterator, ParamValue, Params } from "./transport.ts";
import {
  CategoryTreeSchema,
  CollectionFolderSchema,
  CommentSchema,
  CountriesSchema,
  CuratedSchema,
  DailyDeviationsSchema,
  DamnTokenSchema,
  DeviationContentSchema,
  DeviationSchema,
  DeviationWriteResultSchema,
  DownloadSchema,
  FaveResultSchema,
  FeedItemSchema,
  FeedSettingsSchema,
  FolderCreateResultSchema,
  FriendsSearchResponseSchema,
  GalleryFolderSchema,
  MessageSchema,
  MetadataResponseSchema,
  MetadataSchema,
  MltPreviewSchema,
  NoteFolderCreateResultSchema,
  NoteFoldersResponseSchema,
  NoteSchema,
  NoteSendResultSchema,
  PlaceboSchema,
  PolicyTextSchema,
  ProfilePostSchema,
  ProfileSchema,
  StashDeltaSchema,
  StashMetadataSchema,
  StashPublishResultSchema,
  StashPublishUserdataSchema,
  StashSpaceSchema,
  StashSubmitResultSchema,
  StatusPostResultSchema,
  StatusSchema,
  SuccessSchema,
  TagSearchResponseSchema,
  TiersResponseSchema,
  TopicSchema,
  TopTopicsSchema,
  UserSchema,
  WatchEntrySchema,
  WatchingSchema,
  WhofavedEntrySchema,
  WhoisResponseSchema,
  CommentContextSchema,
  type CollectionFolder,
  type Comment,
  type Countries,
  type DailyDeviations,
  type Deviation,
  type DeviationContent,
  type DeviationWriteResult,
  type Download,
  type FaveResult,
  type FeedItem,
  type FeedSettings,
  type FolderCreateResult,
  type FriendsSearchResponse,
  type GalleryFolder,
  type Message,
  type Metadata,
  type MltPreview,
  type Note,
  type NoteFolderCreateResult,
  type NoteFoldersResponse,
  type NoteSendResult,
  type Placebo,
  type PolicyText,
  type ProfilePost,
  type Profile,
  type StashPublishResult,
  type StashSubmitResult,
  type StatusPostResult,
  type Success,
  type TagSearchResponse,
  type TiersResponse,
  type Topic,
  type TopTopics,
  type User,
  type WatchEntry,
  type Watching,
  type WhofavedEntry,
  type WhoisResponse,
} from "./types.ts";

// ---- response schemas ------------------------------------------------------------------------------

export type { ResponseOf } from "./catalogue.ts";

/** The schema `call(id)` validates the body of `id` with: the one in its catalogue entry. */
export function responseSchema<Id extends OperationId>(id: Id): z.ZodType<ResponseOf<Id>> {
  // The entry of `id` carries this schema (src/api/catalogue.ts types ResponseOf from it).
  return operation(id).response as z.ZodType<ResponseOf<Id>>;
}

// ---- parameter types -------------------------------------------------------------------------------

/** Listing options: page size (the catalogue's maximum by default), where to start, and cancellation. */
export type OffsetListOptions = { limit?: number; startOffset?: number; ceiling?: number; signal?: AbortSignal; maxWaitMs?: number };
export type CursorListOptions = { limit?: number; startCursor?: string; signal?: AbortSignal; maxWaitMs?: number };
export type CallOptions = { signal?: AbortSignal; maxWaitMs?: number };

/** `expand` options; each one costs an extra request against the rate limit (docs/service-behaviour.md#rate-limits). */
export type Expand = "user.details" | "user.geo" | "user.profile" | "user.stats" | "user.watch" | "deviation.challenge" | (string & {});
export type Mature = {
  /** Defaults to true with a user token (client tokens hide mature items anyway). */
  mature_content?: boolean;
};
type WithSession = {
  /** Whether per-viewer state (watch/fave flags) is computed; `false` empties mature folders for signed-in users (dakit). */
  with_session?: boolean;
};
export type OwnerParams = Mature & WithSession & {
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
export type License =
  | { creative_commons: false }
  | { creative_commons: true; commercial: "yes" | "no"; modify: "yes" | "no" | "share" };
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

// ---- the client ------------------------------------------------------------------------------------

/** Page size when the catalogue knows no maximum: browse endpoints cut larger pages to 24 anyway (docs/service-behaviour.md#browse-limit-cap). */
export const DEFAULT_PAGE_SIZE = 24;

/** Write methods and the catalogue operation each one sends, so the scope a method needs can be named. */
export const WRITE_OPERATIONS = {
  fave: "collections.fave",
  unfave: "collections.unfave",
  collectionFolderCreate: "collections.folders.create",
  collectionFolderRemove: "collections.folders.remove",
  collectionFolderUpdate: "collections.folders.update",
  collectionFolderUpdateOrder: "collections.folders.update_order",
  collectionFolderUpdateDeviationOrder: "collections.folders.update_deviation_order",
  collectionFolderCopyDeviations: "collections.folders.copy_deviations",
  collectionFolderMoveDeviations: "collections.folders.move_deviations",
  collectionFolderRemoveDeviations: "collections.folders.remove_deviations",
  galleryFolderCreate: "gallery.folders.create",
  galleryFolderRemove: "gallery.folders.remove",
  galleryFolderUpdate: "gallery.folders.update",
  galleryFolderUpdateOrder: "gallery.folders.update_order",
  galleryFolderUpdateDeviationOrder: "gallery.folders.update_deviation_order",
  galleryFolderCopyDeviations: "gallery.folders.copy_deviations",
  galleryFolderMoveDeviations: "gallery.folders.move_deviations",
  galleryFolderRemoveDeviations: "gallery.folders.remove_deviations",
  galleryFolderMove: "gallery.folders.move",
  noteSend: "notes.send",
  notesMove: "notes.move",
  notesMark: "notes.mark",
  notesDelete: "notes.delete",
  noteFolderCreate: "notes.folders.create",
  noteFolderRemove: "notes.folders.remove",
  noteFolderRename: "notes.folders.rename",
  commentPostDeviation: "comments.post.deviation",
  commentPostProfile: "comments.post.profile",
  commentPostStatus: "comments.post.status",
  journalCreate: "deviation.journal.create",
  journalUpdate: "deviation.journal.update",
  literatureCreate: "deviation.literature.create",
  literatureUpdate: "deviation.literature.update",
  deviationEdit: "deviation.edit",
  stashSubmit: "stash.submit",
  stashPublish: "stash.publish",
  watch: "user.friends.watch",
  unwatch: "user.friends.unwatch",
  profileUpdate: "user.profile.update",
  statusPost: "user.statuses.post",
  feedSettingsUpdate: "feed.settings.update",
  messagesDelete: "messages.delete",
} as const satisfies Record<string, OperationId>;
export type WriteMethod = keyof typeof WRITE_OPERATIONS;

export type DaClientOptions = {
  /** Which token the transport sends; decides the `mature_content` default. */
  tokenKind?: "user" | "client";
  /** Overrides the `mature_content` default (true for user tokens, not sent for client tokens). */
  matureContent?: boolean;
};

export class DaClient {
  private readonly matureDefault: boolean | undefined;

  constructor(
    private readonly transport: ApiTransport,
    options: DaClientOptions = {},
  ) {
    this.matureDefault = options.matureContent ?? ((options.tokenKind ?? "user") === "user" ? true : undefined);
  }

  /** The scopes a write method needs (from the catalogue), e.g. for "grant scope X" messages and auth prompts. */
  static scopesFor(method: WriteMethod): readonly Scope[] {
    return operation(WRITE_OPERATIONS[method]).scopes;
  }

  // ---- generic ------------------------------------------------------------------------------------

  /**
   * Any catalogue operation, one request: placeholders are filled from `params`, everything else goes to
   * the query (GET) or the form body (POST) as given (no defaults added). Listings return one page.
   */
  async call<Id extends OperationId>(id: Id, params: Params = {}, options: CallOptions = {}): Promise<ResponseOf<Id>> {
    const op = operation(id);
    return this.transport.request(this.build(op, params, options), responseSchema(id));
  }

  // ---- util, user ---------------------------------------------------------------------------------

  placebo(options?: CallOptions): Promise<Placebo> {
    return this.get("placebo", {}, PlaceboSchema, options);
  }

  whoami(params: { expand?: readonly Expand[] } = {}): Promise<User> {
    return this.get("user.whoami", { expand: joinExpand(params.expand) }, UserSchema);
  }

  /** POST with `usernames[]`, but a read. */
  whois(usernames: readonly string[], params: { expand?: readonly Expand[] } = {}): Promise<WhoisResponse> {
    return this.get("user.whois", { usernames: [...usernames], expand: joinExpand(params.expand) }, WhoisResponseSchema);
  }

  profile(
    username: string,
    params: { ext_collections?: boolean; ext_galleries?: boolean; expand?: readonly Expand[] } & WithSession = {},
  ): Promise<Profile> {
    return this.get("user.profile", { username, ...params, expand: joinExpand(params.expand) }, ProfileSchema);
  }

  /** Journals and status updates of a user (cursor paging; stops on an empty cursor). */
  profilePosts(params: { username: string } & Mature & CursorListOptions): PageIterator<ProfilePost> {
    const { username, mature_content, ...list } = params;
    return this.cursor("user.profile.posts", { username, mature_content }, ProfilePostSchema, list);
  }

  /** The users `username` watches (gallery-dl's "watching" list). */
  friends(username: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WatchEntry> {
    const { expand, mature_content, ...list } = params;
    return this.offset("user.friends", { username, expand: joinExpand(expand), mature_content }, WatchEntrySchema, list);
  }

  watchers(username: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WatchEntry> {
    const { expand, mature_content, ...list } = params;
    return this.offset("user.watchers", { username, expand: joinExpand(expand), mature_content }, WatchEntrySchema, list);
  }

  /** Whether the authenticated user watches `username`. */
  watching(username: string): Promise<Watching> {
    return this.get("user.friends.watching", { username }, WatchingSchema);
  }

  /** Friends of `username` (default: the authenticated user) whose name starts with `query` (go-deviantart's and DeviantArtFs 2020's names). */
  friendsSearch(params: { query: string; username?: string; search?: string }): Promise<FriendsSearchResponse> {
    return this.get("user.friends.search", params, FriendsSearchResponseSchema);
  }

  /** A user's subscription tiers (deviation-shaped). */
  tiers(username: string): Promise<TiersResponse> {
    return this.get("user.tiers", { username }, TiersResponseSchema);
  }

  // ---- gallery and collections --------------------------------------------------------------------

  galleryFolders(params: FolderListParams & OffsetListOptions = {}): PageIterator<GalleryFolder> {
    const { list, rest } = splitList(params);
    return this.offset("gallery.folders", ownerParams(rest), GalleryFolderSchema, list);
  }

  galleryFolder(folderid: string, params: GalleryFolderParams & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("gallery.folder", { folderid, ...ownerParams(rest) }, DeviationSchema, list);
  }

  galleryAll(params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("gallery.all", ownerParams(rest), DeviationSchema, list);
  }

  collectionFolders(params: FolderListParams & OffsetListOptions = {}): PageIterator<CollectionFolder> {
    const { list, rest } = splitList(params);
    return this.offset("collections.folders", ownerParams(rest), CollectionFolderSchema, list);
  }

  collectionFolder(folderid: string, params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("collections.folder", { folderid, ...ownerParams(rest) }, DeviationSchema, list);
  }

  collectionsAll(params: OwnerParams & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("collections.all", ownerParams(rest), DeviationSchema, list);
  }

  // ---- deviations ---------------------------------------------------------------------------------

  deviation(deviationid: string, params: { expand?: readonly Expand[] } & WithSession = {}): Promise<Deviation> {
    return this.get("deviation.get", { deviationid, with_session: params.with_session, expand: joinExpand(params.expand) }, DeviationSchema);
  }

  deviationContent(deviationid: string, params: Mature = {}): Promise<DeviationContent> {
    return this.get("deviation.content", { deviationid, ...params }, DeviationContentSchema);
  }

  /** The original file's signed URL (~10 min). Counts against the account's weekly download quota. */
  deviationDownload(deviationid: string, params: Mature = {}): Promise<Download> {
    return this.get("deviation.download", { deviationid, ...params }, DownloadSchema);
  }

  /**
   * Metadata for any number of ids, one request per batch (50 ids, or 10 when any ext_* is set), yielded
   * per batch in the caller's order. Duplicate ids are sent once.
   */
  async *deviationMetadata(
    deviationids: readonly string[],
    params: MetadataExt & Mature & CallOptions = {},
  ): AsyncGenerator<MetadataBatch, void, undefined> {
    const op = operation("deviation.metadata");
    const { signal, maxWaitMs, ...query } = params;
    const withExt = Object.entries(query).some(([k, v]) => k.startsWith("ext_") && v === true);
    const size = withExt ? (op.batch?.maxWithExt ?? 10) : (op.batch?.max ?? 50);
    const unique = [...new Set(deviationids)];
    for (let i = 0; i < unique.length; i += size) {
      const ids = unique.slice(i, i + size);
      // Each answer read on its own: one unreadable entry is recorded and counts as missing (docs/service-behaviour.md#tolerant-reading).
      const body = await this.getItems("deviation.metadata", { ...query, deviationids: ids }, "metadata", MetadataSchema, { signal, maxWaitMs });
      const byId = new Map(body.map((m) => [m.deviationid.toUpperCase(), m]));
      const metadata: Metadata[] = [];
      const missing: string[] = [];
      for (const id of ids) {
        const m = byId.get(id.toUpperCase());
        if (m) metadata.push(m);
        else missing.push(id);
      }
      yield { ids, metadata, missing };
    }
  }

  /** All batches of deviationMetadata, flattened, in the caller's order. */
  async deviationMetadataAll(deviationids: readonly string[], params: MetadataExt & Mature & CallOptions = {}): Promise<Metadata[]> {
    const all: Metadata[] = [];
    for await (const batch of this.deviationMetadata(deviationids, params)) all.push(...batch.metadata);
    return all;
  }

  whofaved(deviationid: string, params: { expand?: readonly Expand[] } & Mature & OffsetListOptions = {}): PageIterator<WhofavedEntry> {
    const { expand, mature_content, ...list } = params;
    return this.offset("deviation.whofaved", { deviationid, expand: joinExpand(expand), mature_content }, WhofavedEntrySchema, list);
  }

  // ---- comments -----------------------------------------------------------------------------------

  deviationComments(deviationid: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
    const { list, rest } = splitList(params);
    return this.offset("comments.deviation", { deviationid, ...rest }, CommentSchema, list);
  }

  profileComments(username: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
    const { list, rest } = splitList(params);
    return this.offset("comments.profile", { username, ...rest }, CommentSchema, list);
  }

  statusComments(statusid: string, params: CommentListParams & OffsetListOptions = {}): PageIterator<Comment> {
    const { list, rest } = splitList(params);
    return this.offset("comments.status", { statusid, ...rest }, CommentSchema, list);
  }

  /** Siblings of a comment; each page's `raw.context` holds the parent and the commented item (with ext_item). */
  commentSiblings(commentid: string, params: { ext_item?: boolean } & Mature & OffsetListOptions = {}): PageIterator<Comment> {
    const { list, rest } = splitList(params);
    return this.offset("comments.siblings", { commentid, ...rest }, CommentSchema, list);
  }

  // ---- messages and notes -------------------------------------------------------------------------

  messagesFeed(params: MessageFolderParams & CursorListOptions = {}): PageIterator<Message> {
    const { stack, folderid, ...list } = params;
    return this.cursor("messages.feed", { stack, folderid }, MessageSchema, list);
  }

  feedback(params: { type: FeedbackType } & MessageFolderParams & OffsetListOptions): PageIterator<Message> {
    const { list, rest } = splitList(params);
    return this.offset("messages.feedback", rest, MessageSchema, list);
  }

  feedbackStack(stackid: string, params: OffsetListOptions = {}): PageIterator<Message> {
    return this.offset("messages.feedback.stack", { stackid }, MessageSchema, params);
  }

  mentions(params: MessageFolderParams & OffsetListOptions = {}): PageIterator<Message> {
    const { list, rest } = splitList(params);
    return this.offset("messages.mentions", rest, MessageSchema, list);
  }

  mentionsStack(stackid: string, params: OffsetListOptions = {}): PageIterator<Message> {
    return this.offset("messages.mentions.stack", { stackid }, MessageSchema, params);
  }

  /**
   * Notes of a folder (inbox when omitted). Clients disagree on the parameter's name (`folder` in
   * DeviantArtFs 2024, `folderid` in 2020: docs/service-behaviour.md#notes-folder-param): both are sent.
   */
  notes(params: { folder?: string } & OffsetListOptions = {}): PageIterator<Note> {
    const { list, rest } = splitList(params);
    return this.offset("notes.list", rest.folder === undefined ? rest : { ...rest, folderid: rest.folder }, NoteSchema, list);
  }

  note(noteid: string): Promise<Note> {
    return this.get("notes.get", { noteid }, NoteSchema);
  }

  noteFolders(): Promise<NoteFoldersResponse> {
    return this.get("notes.folders", {}, NoteFoldersResponseSchema);
  }

  // ---- legacy feed (deprecated endpoints) ---------------------------------------------------------

  feedHome(params: CursorListOptions = {}): PageIterator<FeedItem> {
    return this.cursor("feed.home", {}, FeedItemSchema, params);
  }

  feedHomeBucket(bucketid: string, params: OffsetListOptions = {}): PageIterator<Deviation> {
    return this.offset("feed.home.bucket", { bucketid }, DeviationSchema, params);
  }

  feedNotifications(params: CursorListOptions = {}): PageIterator<FeedItem> {
    return this.cursor("feed.notifications", {}, FeedItemSchema, params);
  }

  feedProfile(params: CursorListOptions = {}): PageIterator<FeedItem> {
    return this.cursor("feed.profile", {}, FeedItemSchema, params);
  }

  feedSettings(): Promise<FeedSettings> {
    return this.get("feed.settings", {}, FeedSettingsSchema);
  }

  // ---- static data --------------------------------------------------------------------------------

  countries(): Promise<Countries> {
    return this.get("data.countries", {}, CountriesSchema);
  }

  privacyPolicy(): Promise<PolicyText> {
    return this.get("data.privacy", {}, PolicyTextSchema);
  }

  submissionPolicy(): Promise<PolicyText> {
    return this.get("data.submission", {}, PolicyTextSchema);
  }

  termsOfService(): Promise<PolicyText> {
    return this.get("data.tos", {}, PolicyTextSchema);
  }

  // ---- browse -------------------------------------------------------------------------------------

  browseTags(tag: string, params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("browse.tags", { tag, ...rest }, DeviationSchema, list);
  }

  tagSearch(tag_name: string): Promise<TagSearchResponse> {
    return this.get("browse.tags.search", { tag_name }, TagSearchResponseSchema);
  }

  /** Daily deviations of one day (`YYYY-MM-DD`, today when omitted); not paged. */
  dailyDeviations(params: { date?: string } & Mature = {}): Promise<DailyDeviations> {
    return this.get("browse.dailydeviations", params, DailyDeviationsSchema);
  }

  browseTopic(topic: string, params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("browse.topic", { topic, ...rest }, DeviationSchema, list);
  }

  browseTopics(params: { num_deviations_per_topic?: number } & Mature & OffsetListOptions = {}): PageIterator<Topic> {
    const { list, rest } = splitList(params);
    return this.offset("browse.topics", rest, TopicSchema, list);
  }

  topTopics(params: Mature = {}): Promise<TopTopics> {
    return this.get("browse.toptopics", params, TopTopicsSchema);
  }

  browseHome(params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
    const { list, rest } = splitList(params);
    return this.offset("browse.home", rest, DeviationSchema, list);
  }

  mltPreview(seed: string, params: Mature = {}): Promise<MltPreview> {
    return this.get("browse.morelikethis.preview", { seed, ...params }, MltPreviewSchema);
  }

  // ---- writes: collections and galleries (scopes: browse + collection / gallery) ------------------

  /** Scopes: browse, collection. `folderids` empty = the default Favourites folder. */
  fave(deviationid: string, params: { folderids?: readonly string[] } = {}): Promise<FaveResult> {
    return this.get("collections.fave", { deviationid, folderid: list(params.folderids) }, FaveResultSchema);
  }

  /** Scopes: browse, collection. */
  unfave(deviationid: string, params: { folderids?: readonly string[] } = {}): Promise<FaveResult> {
    return this.get("collections.unfave", { deviationid, folderid: list(params.folderids) }, FaveResultSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderCreate(params: { folder: string; description?: string }): Promise<FolderCreateResult> {
    return this.get("collections.folders.create", params, FolderCreateResultSchema);
  }

  /** Scopes: browse, collection. A GET, as listed. */
  collectionFolderRemove(folderid: string): Promise<Success> {
    return this.get("collections.folders.remove", { folderid }, SuccessSchema);
  }

  /** Scopes: browse, collection. Sends only the fields given. */
  collectionFolderUpdate(params: FolderUpdate): Promise<Success> {
    return this.get("collections.folders.update", params, SuccessSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderUpdateOrder(params: { folderid: string; position: number }): Promise<Success> {
    return this.get("collections.folders.update_order", params, SuccessSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderUpdateDeviationOrder(params: { folderid: string; deviationid: string; position: number }): Promise<Success> {
    return this.get("collections.folders.update_deviation_order", params, SuccessSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderCopyDeviations(params: { target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("collections.folders.copy_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderMoveDeviations(params: { source_folderid: string; target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("collections.folders.move_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, collection. */
  collectionFolderRemoveDeviations(params: { folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("collections.folders.remove_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderCreate(params: { folder: string; description?: string; parent_folderid?: string }): Promise<FolderCreateResult> {
    return this.get("gallery.folders.create", params, FolderCreateResultSchema);
  }

  /** Scopes: browse, gallery. Sent as GET (what current clients use); `gallery.folders.remove.post` is the other listing's form. */
  galleryFolderRemove(folderid: string): Promise<Success> {
    return this.get("gallery.folders.remove", { folderid }, SuccessSchema);
  }

  /** Scopes: browse, gallery. Sends only the fields given. */
  galleryFolderUpdate(params: FolderUpdate): Promise<Success> {
    return this.get("gallery.folders.update", params, SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderUpdateOrder(params: { folderid: string; position: number }): Promise<Success> {
    return this.get("gallery.folders.update_order", params, SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderUpdateDeviationOrder(params: { folderid: string; deviationid: string; position: number }): Promise<Success> {
    return this.get("gallery.folders.update_deviation_order", params, SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderCopyDeviations(params: { target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("gallery.folders.copy_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderMoveDeviations(params: { source_folderid: string; target_folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("gallery.folders.move_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, gallery. */
  galleryFolderRemoveDeviations(params: { folderid: string; deviationids: readonly string[] }): Promise<Success> {
    return this.get("gallery.folders.remove_deviations", withList(params), SuccessSchema);
  }

  /** Scopes: browse, gallery. Moves folder `folderid` under `to_folderid` (DeviantArtFs' names). */
  galleryFolderMove(params: { folderid: string; to_folderid: string }): Promise<Success> {
    return this.get("gallery.folders.move", params, SuccessSchema);
  }

  // ---- writes: notes (scope: note) ----------------------------------------------------------------

  /** Scope: note. `noteid` replies to that note. */
  noteSend(params: { to: readonly string[]; subject?: string; body: string; noteid?: string }): Promise<NoteSendResult> {
    return this.get("notes.send", { ...params, to: [...params.to] }, NoteSendResultSchema);
  }

  /** Scope: note. */
  notesMove(params: { noteids: readonly string[]; folderid: string }): Promise<Success> {
    return this.get("notes.move", { ...params, noteids: [...params.noteids] }, SuccessSchema);
  }

  /** Scope: note. */
  notesMark(params: { noteids: readonly string[]; mark_as: "read" | "unread" | "starred" | "notstarred" | "spam" }): Promise<Success> {
    return this.get("notes.mark", { ...params, noteids: [...params.noteids] }, SuccessSchema);
  }

  /** Scope: note. */
  notesDelete(params: { noteids: readonly string[]; folderid?: string }): Promise<Success> {
    return this.get("notes.delete", { ...params, noteids: [...params.noteids] }, SuccessSchema);
  }

  /** Scope: note. */
  noteFolderCreate(params: { title: string; parentid?: string }): Promise<NoteFolderCreateResult> {
    return this.get("notes.folders.create", params, NoteFolderCreateResultSchema);
  }

  /** Scope: note. */
  noteFolderRemove(folderid: string): Promise<Success> {
    return this.get("notes.folders.remove", { folderid }, SuccessSchema);
  }

  /** Scope: note. */
  noteFolderRename(folderid: string, title: string): Promise<Success> {
    return this.get("notes.folders.rename", { folderid, title }, SuccessSchema);
  }

  // ---- writes: comments, statuses, messages -------------------------------------------------------

  /** Scopes: browse, comment.post. `commentid` replies to that comment. */
  commentPostDeviation(deviationid: string, params: { body: string; commentid?: string }): Promise<Comment> {
    return this.get("comments.post.deviation", { deviationid, ...params }, CommentSchema);
  }

  /** Scopes: browse, comment.post. */
  commentPostProfile(username: string, params: { body: string; commentid?: string }): Promise<Comment> {
    return this.get("comments.post.profile", { username, ...params }, CommentSchema);
  }

  /** Scopes: browse, comment.post. */
  commentPostStatus(statusid: string, params: { body: string; commentid?: string }): Promise<Comment> {
    return this.get("comments.post.status", { statusid, ...params }, CommentSchema);
  }

  /** Scopes: browse, user.manage. `id` embeds a deviation or status; `parentid` shares a status; `stashid` a stash item. */
  statusPost(params: { body?: string; id?: string; parentid?: string; stashid?: string }): Promise<StatusPostResult> {
    return this.get("user.statuses.post", params, StatusPostResultSchema);
  }

  /** Scope: message. Deletes one message (`messageid`) or a whole stack (`stackid`). */
  messagesDelete(params: { folderid?: string } & ({ messageid: string; stackid?: never } | { stackid: string; messageid?: never })): Promise<Success> {
    return this.get("messages.delete", params, SuccessSchema);
  }

  // ---- writes: journals, literature, deviations (scope: user.manage; edit: stash + publish) --------

  /** Scope: user.manage. */
  journalCreate(fields: JournalCreate): Promise<DeviationWriteResult> {
    const { body, embedded_image_deviation_id, cover_image_deviation_id, ...rest } = fields;
    return this.get(
      "deviation.journal.create",
      { body, embedded_image_deviation_id, cover_image_deviation_id, ...journalForm(rest) },
      DeviationWriteResultSchema,
    );
  }

  /**
   * Scope: user.manage. The service clears every field left empty (except the cover), so this takes the
   * CURRENT fields and the changes and sends the merged whole. The cover is kept unless `changes` sets it:
   * a new id replaces it, `null` sends `reset_cover_image_deviation_id=true`.
   */
  journalUpdate(deviationid: string, current: JournalFields, changes: Partial<JournalFields>): Promise<DeviationWriteResult> {
    return this.get("deviation.journal.update", { deviationid, ...journalUpdateForm(current, changes) }, DeviationWriteResultSchema);
  }

  /** Scope: user.manage. */
  literatureCreate(fields: LiteratureCreate): Promise<DeviationWriteResult> {
    const { body, description, embedded_image_deviation_id, ...rest } = fields;
    return this.get(
      "deviation.literature.create",
      { body, description, embedded_image_deviation_id, ...literatureForm(rest) },
      DeviationWriteResultSchema,
    );
  }

  /**
   * Scope: user.manage. Null or empty values clear fields on the service, so this takes the CURRENT fields
   * and the changes and sends the merged whole.
   */
  literatureUpdate(deviationid: string, current: LiteratureFields, changes: Partial<LiteratureFields>): Promise<DeviationWriteResult> {
    return this.get("deviation.literature.update", { deviationid, ...literatureForm({ ...current, ...definedOnly(changes) }) }, DeviationWriteResultSchema);
  }

  /** Scopes: stash, publish. Sends only the fields given (the service documents no clearing rule for edit). */
  deviationEdit(deviationid: string, fields: DeviationEdit): Promise<DeviationWriteResult> {
    const { license, tags, galleryids, mature_classification, ...rest } = fields;
    return this.get(
      "deviation.edit",
      {
        deviationid,
        ...rest,
        ...(license ? licenseForm(license) : {}),
        tags: list(tags),
        galleryids: list(galleryids),
        mature_classification: list(mature_classification),
      },
      DeviationWriteResultSchema,
    );
  }

  // ---- writes: stash (scope: stash; publish also needs publish) -----------------------------------

  /**
   * Scope: stash. TODO(multipart): ApiTransport sends form bodies only, so files cannot be uploaded yet;
   * this sends the metadata fields (useful to modify an existing `itemid`). A new submission needs files.
   */
  stashSubmit(fields: StashSubmit): Promise<StashSubmitResult> {
    if ((fields as { files?: unknown }).files !== undefined) {
      throw new Error("stashSubmit: file uploads need a multipart body, which the HTTP transport does not send yet");
    }
    const { tags, ...rest } = fields;
    return this.get("stash.submit", { ...rest, tags: list(tags) }, StashSubmitResultSchema);
  }

  /** Scopes: stash, publish. */
  stashPublish(fields: StashPublish): Promise<StashPublishResult> {
    const { license, galleryids, mature_classification, extra, ...rest } = fields;
    return this.get(
      "stash.publish",
      {
        ...rest,
        ...(license ? licenseForm(license) : {}),
        galleryids: list(galleryids),
        mature_classification: list(mature_classification),
        ...extra,
      },
      StashPublishResultSchema,
    );
  }

  // ---- writes: watching, profile, feed settings ---------------------------------------------------

  /**
   * Scopes: browse, user.manage. Sends all eight `watch[...]` flags; unspecified ones default to true
   * except `friend`. Watching unlocks watchers-only folders. Throttled by the service when repeated quickly.
   */
  watch(username: string, flags: Partial<WatchFlags> = {}): Promise<Success> {
    const all: WatchFlags = {
      friend: false,
      deviations: true,
      journals: true,
      forum_threads: true,
      critiques: true,
      scraps: true,
      activity: true,
      collections: true,
      ...definedOnly(flags),
    };
    return this.get("user.friends.watch", { username, ...bracketed("watch", all) }, SuccessSchema);
  }

  /** Scopes: browse, user.manage. A GET, as listed. */
  unwatch(username: string): Promise<Success> {
    return this.get("user.friends.unwatch", { username }, SuccessSchema);
  }

  /** Scope: user.manage (UNCERTAIN). Sends only the fields given. */
  profileUpdate(fields: ProfileUpdate): Promise<Success> {
    const { interests, social_links, ...rest } = fields;
    return this.get(
      "user.profile.update",
      { ...rest, ...bracketed("interests", interests ?? {}), ...bracketed("social_links", social_links ?? {}) },
      SuccessSchema,
    );
  }

  /** Scope: feed. Sends only the flags given, as `include[...]`. */
  feedSettingsUpdate(include: Partial<FeedInclude>): Promise<Success> {
    return this.get("feed.settings.update", bracketed("include", definedOnly(include)), SuccessSchema);
  }

  // ---- plumbing -----------------------------------------------------------------------------------

  /** ApiRequest for `op`: path placeholders from `params`, the rest as query (GET) or form (POST). */
  private build(op: Operation, params: Params, options: CallOptions): ApiRequest {
    const inPath = new Set(pathParams(op.path));
    const rest: Params = {};
    for (const [key, value] of Object.entries(params)) {
      if (!inPath.has(key) && value !== undefined) rest[key] = value;
    }
    return {
      operation: op.id,
      method: op.method,
      path: expandPath(op.path, params),
      ...(op.method === "GET" ? { query: rest } : { form: rest }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
    };
  }

  /** Adds `mature_content` where the endpoint takes it and the caller did not say. */
  private withDefaults(op: Operation, params: Params): Params {
    if (!op.matureContent || params.mature_content !== undefined || this.matureDefault === undefined) return params;
    return { ...params, mature_content: this.matureDefault };
  }

  /** One request of a non-listing operation (any method), validated by `schema`. */
  private get<S extends z.ZodType>(id: OperationId, params: Params, schema: S, options: CallOptions = {}): Promise<z.infer<S>> {
    const op = operation(id);
    return this.transport.request(this.build(op, this.withDefaults(op, params), options), schema);
  }

  /** One request whose body lists items under `key`, each read on its own (unreadable ones recorded, left out). */
  private async getItems<S extends z.ZodType>(id: OperationId, params: Params, key: string, item: S, options: CallOptions = {}): Promise<z.infer<S>[]> {
    const op = operation(id);
    return (await this.transport.requestItems(this.build(op, this.withDefaults(op, params), options), key, item)).items;
  }

  private offset<S extends z.ZodType>(id: OperationId, params: Params, item: S, list: OffsetListOptions): PageIterator<z.infer<S>> {
    const op = operation(id);
    if (op.paging !== "offset") throw new Error(`${id} is not an offset listing (paging: ${op.paging})`);
    const req = this.build(op, this.withDefaults(op, params), list);
    return this.transport.paginateOffset(req, item, {
      limit: list.limit ?? op.maxLimit ?? DEFAULT_PAGE_SIZE,
      ...(op.itemsKey ? { itemsKey: op.itemsKey } : {}),
      ...(list.startOffset !== undefined ? { startOffset: list.startOffset } : {}),
      ...(list.ceiling !== undefined ? { ceiling: list.ceiling } : {}),
    });
  }

  private cursor<S extends z.ZodType>(id: OperationId, params: Params, item: S, list: CursorListOptions): PageIterator<z.infer<S>> {
    const op = operation(id);
    if (op.paging !== "cursor") throw new Error(`${id} is not a cursor listing (paging: ${op.paging})`);
    const itemsKey = op.itemsKey === "items" ? "items" : "results";
    const limit = list.limit ?? op.maxLimit;
    return this.transport.paginateCursor(this.build(op, this.withDefaults(op, params), list), item, {
      itemsKey,
      ...(limit !== undefined ? { limit } : {}),
      ...(list.startCursor !== undefined ? { startCursor: list.startCursor } : {}),
    });
  }
}

// ---- form helpers ----------------------------------------------------------------------------------

type FolderUpdate = { folderid: string; name?: string; description?: string; cover_deviationid?: string };

const LIST_KEYS = ["limit", "startOffset", "ceiling", "signal", "maxWaitMs", "startCursor"] as const;

/** Separates listing options from request parameters. */
function splitList<T extends OffsetListOptions & Record<string, unknown>>(params: T): { list: OffsetListOptions; rest: Params } {
  const listOptions: Record<string, unknown> = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    if ((LIST_KEYS as readonly string[]).includes(key)) listOptions[key] = value;
    else rest[key] = value;
  }
  // Keys were sorted by name above; the values keep the caller's types (listing options vs Params).
  return { list: listOptions as OffsetListOptions, rest: rest as Params };
}

function ownerParams(params: Params): Params {
  const { expand, ...rest } = params;
  return { ...rest, expand: Array.isArray(expand) ? joinExpand(expand.map(String)) : expand };
}

function joinExpand(expand: readonly string[] | undefined): string | undefined {
  return expand && expand.length > 0 ? expand.join(",") : undefined;
}

function list(values: readonly string[] | undefined): string[] | undefined {
  return values && values.length > 0 ? [...values] : undefined;
}

function withList<T extends { deviationids: readonly string[] }>(params: T): Params {
  return { ...(params as Omit<T, "deviationids">), deviationids: [...params.deviationids] } as Params;
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** `{a: 1}` under "watch" → `{"watch[a]": 1}` (the service's nested-form syntax). */
function bracketed(name: string, values: Readonly<Record<string | number, ParamValue>>): Params {
  const out: Params = {};
  for (const [key, value] of Object.entries(values)) out[`${name}[${key}]`] = value;
  return out;
}

function licenseForm(license: License): Params {
  if (!license.creative_commons) return { "license_options[creative_commons]": false };
  return {
    "license_options[creative_commons]": true,
    "license_options[commercial]": license.commercial,
    "license_options[modify]": license.modify,
  };
}

function journalForm(fields: Omit<JournalFields, "cover_image_deviation_id">): Params {
  return {
    title: fields.title,
    tags: [...fields.tags],
    is_mature: fields.is_mature,
    allow_comments: fields.allow_comments,
    ...licenseForm(fields.license),
  };
}

/** Every field from current+changes, so nothing is cleared by omission; cover per the service's rule. */
export function journalUpdateForm(current: JournalFields, changes: Partial<JournalFields>): Params {
  const merged = { ...current, ...definedOnly(changes) };
  const form: Params = journalForm(merged);
  if ("cover_image_deviation_id" in changes && changes.cover_image_deviation_id === null) {
    form.reset_cover_image_deviation_id = true;
  } else if (merged.cover_image_deviation_id) {
    form.cover_image_deviation_id = merged.cover_image_deviation_id;
  }
  return form;
}

function literatureForm(fields: LiteratureFields): Params {
  const form: Params = {
    title: fields.title,
    tags: [...fields.tags],
    galleryids: [...fields.galleryids],
    is_mature: fields.is_mature,
    allow_comments: fields.allow_comments,
    ...licenseForm(fields.license),
  };
  if (fields.is_mature) {
    form.mature_level = fields.mature_level;
    form.mature_classification = fields.mature_classification ? [...fields.mature_classification] : undefined;
  }
  return form;
}
