// What the mirror repositories take: the service's objects as far as dvault stores them, owned here so src/db
// does not depend on src/api's wire types (docs/ARCHITECTURE.md#what-each-folder-may-import). Each shape
// lists the fields a repository or a helper of mirror-rows.ts reads; the objects the client returns have
// these and more, and are passed as they are (the whole object is kept as the row's raw JSON). Fields the
// service may omit accept null as well, as it sends both; JSON kept as it came is `unknown`.
type Maybe<T> = T | null | undefined;

export type UserInput = {
  userid: string;
  username: string;
  usericon?: Maybe<string>;
  type?: Maybe<string>;
  details?: Maybe<{ joindate?: Maybe<string> }>;
  geo?: Maybe<{ country?: Maybe<string>; countryid?: Maybe<number> }>;
  profile?: Maybe<{
    user_is_artist?: Maybe<boolean>;
    artist_level?: Maybe<string>;
    artist_specialty?: Maybe<string>;
    real_name?: Maybe<string>;
    tagline?: Maybe<string>;
    website?: Maybe<string>;
    cover_photo?: Maybe<string>;
  }>;
  stats?: Maybe<{ watchers?: Maybe<number>; friends?: Maybe<number> }>;
};

/** /user/profile: the user and what only the profile tells. */
export type ProfileInput = {
  user: UserInput;
  user_is_artist?: Maybe<boolean>;
  artist_level?: Maybe<string>;
  artist_specialty?: Maybe<string>;
  real_name?: Maybe<string>;
  tagline?: Maybe<string>;
  countryid?: Maybe<number>;
  country?: Maybe<string>;
  website?: Maybe<string>;
  bio?: Maybe<string>;
  cover_photo?: Maybe<string>;
  stats?: Maybe<{
    user_deviations?: Maybe<number>;
    user_favourites?: Maybe<number>;
    user_comments?: Maybe<number>;
    profile_pageviews?: Maybe<number>;
    profile_comments?: Maybe<number>;
  }>;
};

export type DeviationInput = {
  deviationid: string;
  is_deleted?: Maybe<boolean>;
  printid?: Maybe<string>;
  url?: Maybe<string>;
  title?: Maybe<string>;
  author?: Maybe<UserInput>;
  stats?: Maybe<{ comments?: Maybe<number>; favourites?: Maybe<number> }>;
  /** Epoch seconds, as a string or a number. */
  published_time?: Maybe<string | number>;
  preview?: Maybe<object>;
  content?: Maybe<object>;
  videos?: Maybe<readonly object[]>;
  flash?: Maybe<object>;
  excerpt?: Maybe<string>;
  text_content?: Maybe<{ excerpt?: Maybe<string> }>;
  is_mature?: Maybe<boolean>;
  is_downloadable?: Maybe<boolean>;
  download_filesize?: Maybe<number>;
  is_favourited?: Maybe<boolean>;
  tier?: unknown;
  tier_access?: Maybe<string>;
  premium_folder_data?: unknown;
};

/** /deviation/metadata: one deviation's description, tags and submission details. */
export type MetadataInput = {
  deviationid: string;
  description?: Maybe<string>;
  license?: Maybe<string>;
  tags?: Maybe<ReadonlyArray<{ tag_name: string }>>;
  mature_level?: Maybe<string>;
  mature_classification?: Maybe<readonly string[]>;
  allows_comments?: Maybe<boolean>;
  allow_comments?: Maybe<boolean>;
  submission?: unknown;
  camera?: unknown;
  stats?: unknown;
};

/** /deviation/content: a journal's or literature's HTML. */
export type DeviationContentInput = {
  html?: Maybe<string>;
  css?: Maybe<string>;
  css_fonts?: Maybe<readonly string[]>;
};

export type StatusInput = {
  statusid?: Maybe<string>;
  body?: Maybe<string>;
  ts?: Maybe<string>;
  url?: Maybe<string>;
  comments_count?: Maybe<number>;
  is_share?: Maybe<boolean>;
  is_deleted?: Maybe<boolean>;
  author?: Maybe<UserInput>;
  items?: Maybe<ReadonlyArray<{ deviation?: Maybe<{ deviationid: string }> }>>;
};

export type CommentInput = {
  commentid: string;
  parentid?: Maybe<string>;
  posted?: Maybe<string>;
  replies?: Maybe<number>;
  hidden?: Maybe<string>;
  body?: Maybe<string>;
  likes?: Maybe<number>;
  user?: Maybe<UserInput>;
};

/** `deviations` (a folder's first page, when asked for) is not kept with the folder. */
export type GalleryFolderInput = {
  folderid: string;
  deviations?: unknown;
  parent?: Maybe<string>;
  name?: Maybe<string>;
  description?: Maybe<string>;
  size?: Maybe<number>;
  subfolders?: Maybe<readonly GalleryFolderInput[]>;
};

export type CollectionFolderInput = {
  folderid: string;
  deviations?: unknown;
  name?: Maybe<string>;
  description?: Maybe<string>;
  size?: Maybe<number>;
};

/** The things a message is about: what the service sends in `subject`, or (older messages) at the top level. */
type MessageSubjects = {
  profile?: Maybe<{ userid: string }>;
  deviation?: Maybe<{ deviationid: string }>;
  status?: Maybe<{ statusid?: Maybe<string> }>;
  comment?: Maybe<{ commentid: string }>;
  collection?: Maybe<{ folderid: string }>;
};

export type MessageInput = MessageSubjects & {
  messageid: string;
  type?: Maybe<string>;
  orphaned?: Maybe<boolean>;
  ts?: Maybe<string>;
  stackid?: Maybe<string>;
  stack_count?: Maybe<number>;
  is_new?: Maybe<boolean>;
  originator?: Maybe<UserInput>;
  subject?: Maybe<MessageSubjects & { gallery?: Maybe<{ folderid: string }> }>;
  html?: Maybe<string>;
};

export type NoteInput = {
  noteid: string;
  ts?: Maybe<string>;
  unread?: Maybe<boolean>;
  starred?: Maybe<boolean>;
  sent?: Maybe<boolean>;
  subject?: Maybe<string>;
  preview?: Maybe<string>;
  body?: Maybe<string>;
  user?: Maybe<UserInput>;
  recipients?: Maybe<readonly UserInput[]>;
};

export type NoteFolderInput = {
  folder?: Maybe<string>;
  folderid?: Maybe<string>;
  parentid?: Maybe<string>;
  title?: Maybe<string>;
  count?: Maybe<string | number>;
};

export type FeedItemInput = {
  ts?: Maybe<string>;
  type?: Maybe<string>;
  by_user?: Maybe<UserInput>;
  deviations?: Maybe<ReadonlyArray<{ deviationid: string }>>;
  bucketid?: Maybe<string>;
  bucket_total?: Maybe<number>;
  status?: Maybe<{ statusid?: Maybe<string> }>;
  comment?: Maybe<{ commentid: string }>;
  collection?: Maybe<{ folderid?: Maybe<string> }>;
};

export type WatchEntryInput = {
  user: UserInput;
  watches_you?: Maybe<boolean>;
  lastvisit?: Maybe<string>;
  watch?: unknown;
};

/** A stash stack's or item's metadata (ids are 64-bit integers kept as decimal strings). */
export type StashMetadataInput = {
  stackid?: Maybe<string>;
  itemid?: Maybe<string>;
  parentid?: Maybe<string>;
  title?: Maybe<string>;
  path?: Maybe<string>;
  size?: Maybe<number>;
  description?: Maybe<string>;
  thumb?: unknown;
  artist_comments?: Maybe<string>;
  original_url?: Maybe<string>;
  category?: Maybe<string>;
  /** Epoch seconds, as a string or a number. */
  creation_time?: Maybe<string | number>;
  files?: unknown;
  submission?: unknown;
  stats?: unknown;
  camera?: unknown;
  tags?: Maybe<readonly string[]>;
  html?: Maybe<string>;
};
