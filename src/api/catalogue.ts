// Every operation of the service's API (both listings: docs/service-behaviour.md#catalogue-listings): the
// single source of method, path, token kind, scopes, paging, page-size limit and error codes for the client,
// the transport and the tests.

export type HttpMethod = "GET" | "POST";
/** Which grant's token the operation takes (docs/service-behaviour.md#scopes): "any" = client credentials or user. */
export type TokenKind = "user" | "client" | "any";
/** Scope names known from client libraries (docs/service-behaviour.md#scopes); `basic` is always granted. */
export type Scope =
  | "basic"
  | "browse"
  | "browse.mlt"
  | "collection"
  | "comment.post"
  | "feed"
  | "gallery"
  | "message"
  | "note"
  | "publish"
  | "stash"
  | "user"
  | "user.manage";
export type Paging = "offset" | "cursor" | "none";
/** Array field of a listing's body: `thread` for comments, `items` for the legacy /feed/* endpoints. */
export type ItemsKey = "results" | "thread" | "items";
/** The two listings of the catalogue (docs/service-behaviour.md#catalogue-listings): A holds the newer operations, B the older. */
export type Listing = "both" | "A" | "B";

export type Removal = { since: string; reason: string };

/**
 * What an endpoint-specific `error_code` means (docs/service-behaviour.md#error-body). dvault branches on
 * these, never on `error_description`, whose wording the service may change.
 */
export type ErrorMeaning =
  /** The user named in the request (docs/service-behaviour.md#user-error-codes). */
  | "user_suspended"
  | "user_deactivated"
  | "user_not_found"
  /** The deviation (or other object) asked for does not exist. */
  | "not_found"
  /** /deviation/{id}: not owned by this user. */
  | "not_owned"
  /** /deviation/content: not a journal or literature. */
  | "unsupported_type"
  /**
   * /deviation/download: the original is refused, either because the artist does not offer it or because
   * the weekly quota is spent; the code is the same for both (docs/service-behaviour.md#quota-weekly).
   */
  | "download_refused"
  /** /deviation/metadata: too many ids in one request. */
  | "too_many";

export type ErrorCodes = Readonly<Record<number, ErrorMeaning>>;

/** User-scoped listings answer a gone user with these codes (docs/service-behaviour.md#user-error-codes). */
export const USER_ERROR_CODES: ErrorCodes = { 0: "user_suspended", 1: "user_deactivated", 2: "user_not_found" };
export type Deprecation = { since: string; reason: string };

export type Operation = {
  /** Stable dotted name, used in errors, logs, metrics and `DaClient.call`. */
  id: string;
  method: HttpMethod;
  /** Relative to `{base}/api/v1/oauth2`, with a leading slash; placeholders in braces are whole segments. */
  path: string;
  token: TokenKind;
  /** Scopes beyond `basic`; empty when none is needed. */
  scopes: readonly Scope[];
  paging: Paging;
  /** Set when `paging` is not "none", and on unpaged lists (`{results: [...]}`). */
  itemsKey?: ItemsKey;
  /** Largest accepted `limit` (docs/service-behaviour.md#page-size-maxima); larger values are a 400 validation error. */
  maxLimit?: number;
  /** Id batches sent as one array parameter (`/deviation/metadata`). */
  batch?: { param: string; max: number; maxWithExt: number };
  /** The endpoint takes `mature_content` (docs/service-behaviour.md#mature-content-param); the client sends `true` with user tokens. */
  matureContent: boolean;
  removed: false | Removal;
  deprecated: false | Deprecation;
  /** Changes state on the service (a few of these are GETs, as listed). */
  write: boolean;
  /** Which listing it appears in (docs/service-behaviour.md#catalogue-listings); absent when that is not known. */
  listing?: Listing;
  purpose: string;
  /** Caveats a caller should know (uncertain availability, quotas, odd shapes). */
  note?: string;
  /** Meanings of the endpoint's `error_code` values on a 400 answer. */
  errorCodes?: ErrorCodes;
  /**
   * A 400 answer without `error_code` or `error_details` means this (the profile lookup: its only
   * parameter is the username, so a bare refusal is about the user).
   */
  uncodedRefusal?: ErrorMeaning;
};

// ---- building blocks -------------------------------------------------------------------------------

type Defaults = Pick<Operation, "token" | "scopes" | "write">;
const READ_ANY_BROWSE: Defaults = { token: "any", scopes: ["browse"], write: false };
const USER: (scopes: readonly Scope[]) => Defaults = (scopes) => ({ token: "user", scopes, write: false });
const WRITE: (scopes: readonly Scope[]) => Defaults = (scopes) => ({ token: "user", scopes, write: true });

type Entry = Omit<Operation, "matureContent" | "removed" | "deprecated" | "paging"> &
  Partial<Pick<Operation, "matureContent" | "removed" | "deprecated" | "paging">>;

const offset = (maxLimit: number | undefined, itemsKey: ItemsKey = "results") =>
  ({ paging: "offset", itemsKey, ...(maxLimit === undefined ? {} : { maxLimit }) }) as const;
const cursor = (itemsKey: ItemsKey = "results", maxLimit?: number) =>
  ({ paging: "cursor", itemsKey, ...(maxLimit === undefined ? {} : { maxLimit }) }) as const;
const LIST = { paging: "none", itemsKey: "results" } as const;

const STASH_GONE: Removal = {
  since: "2024-07 (minor version 20240701)",
  reason: "all Sta.sh endpoints except submit and publish were removed from the API (docs/service-behaviour.md#endpoint-status)",
};
const FEED_DEPRECATED: Deprecation = {
  since: "2022",
  reason: "the /feed/* endpoints are deprecated; staff point to /messages/* instead (docs/service-behaviour.md#feed-deprecated)",
};

function defineCatalogue<const T extends readonly (Entry & { id: string })[]>(entries: T) {
  return Object.freeze(
    entries.map((e) =>
      Object.freeze({
        matureContent: false,
        removed: false,
        deprecated: false,
        paging: "none",
        ...e,
      }),
    ),
  ) as readonly (Operation & { id: T[number]["id"] })[];
}

// ---- the catalogue ---------------------------------------------------------------------------------

export const CATALOGUE = defineCatalogue([
  // Browse
  { id: "browse.categorytree", method: "GET", path: "/browse/categorytree", ...READ_ANY_BROWSE,
    purpose: "Category information for browsing", note: "categories were retired in 2022; availability uncertain (docs/service-behaviour.md#endpoint-status)" },
  { id: "browse.dailydeviations", method: "GET", path: "/browse/dailydeviations", ...READ_ANY_BROWSE, ...LIST, matureContent: true,
    purpose: "Daily deviations", note: "takes date=YYYY-MM-DD; returns has_more but no usable paging (docs/service-behaviour.md#browse-paging)" },
  { id: "browse.deviantsyouwatch", method: "GET", path: "/browse/deviantsyouwatch", ...USER(["browse"]), ...offset(50), matureContent: true,
    listing: "A", purpose: "Deviations of users the caller watches",
    removed: { since: "2024-07-29", reason: "answers 404 \"Api endpoint not found.\" (docs/service-behaviour.md#endpoint-status)" } },
  { id: "browse.home", method: "GET", path: "/browse/home", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    listing: "A", purpose: "Homepage browse" },
  { id: "browse.hot", method: "GET", path: "/browse/hot", ...READ_ANY_BROWSE, ...offset(undefined), matureContent: true,
    listing: "B", purpose: "Hot deviations", note: "not in any current wrapper; availability uncertain (docs/service-behaviour.md#endpoint-status)" },
  { id: "browse.morelikethis", method: "GET", path: "/browse/morelikethis", token: "any", scopes: ["browse", "browse.mlt"], write: false,
    ...offset(undefined), matureContent: true, purpose: "More Like This result for a seed deviation",
    removed: { since: "unknown (reported gone by dakit 0.1.11)", reason: "the page endpoint no longer exists; only /browse/morelikethis/preview remains (docs/service-behaviour.md#endpoint-status)" } },
  { id: "browse.morelikethis.preview", method: "GET", path: "/browse/morelikethis/preview", token: "any", scopes: ["browse", "browse.mlt"],
    write: false, matureContent: true, purpose: "More Like This preview for a seed deviation" },
  { id: "browse.newest", method: "GET", path: "/browse/newest", ...READ_ANY_BROWSE, ...offset(120), matureContent: true,
    listing: "B", purpose: "Newest deviations", note: "120 documented, 24 effective (docs/service-behaviour.md#browse-limit-cap)",
    removed: { since: "2024-08", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" } },
  { id: "browse.popular", method: "GET", path: "/browse/popular", ...READ_ANY_BROWSE, ...offset(120), matureContent: true,
    purpose: "Popular deviations", note: "120 documented, 24 effective (docs/service-behaviour.md#browse-limit-cap)",
    removed: { since: "2024-08", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" } },
  { id: "browse.tags", method: "GET", path: "/browse/tags", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "Browse one tag", note: "also accepts cursor paging (docs/service-behaviour.md#browse-paging)" },
  { id: "browse.tags.search", method: "GET", path: "/browse/tags/search", ...READ_ANY_BROWSE, ...LIST, purpose: "Tag autocomplete" },
  { id: "browse.topic", method: "GET", path: "/browse/topic", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    listing: "A", purpose: "Deviations of a topic" },
  { id: "browse.topics", method: "GET", path: "/browse/topics", ...READ_ANY_BROWSE, ...offset(10), matureContent: true,
    listing: "A", purpose: "Topics with deviations of each", note: "num_deviations_per_topic; huge values give 500 (docs/service-behaviour.md#server-5xx)" },
  { id: "browse.toptopics", method: "GET", path: "/browse/toptopics", ...READ_ANY_BROWSE, ...LIST, matureContent: true,
    listing: "A", purpose: "Top topics with an example deviation each" },
  { id: "browse.undiscovered", method: "GET", path: "/browse/undiscovered", ...READ_ANY_BROWSE, ...offset(undefined), matureContent: true,
    purpose: "Undiscovered deviations", note: "not in any current wrapper; availability uncertain (docs/service-behaviour.md#endpoint-status)" },
  { id: "browse.user.journals", method: "GET", path: "/browse/user/journals", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "Journals of a user",
    removed: { since: "2024-08", reason: "removed; /user/profile/posts replaces it (docs/service-behaviour.md#endpoint-status)" } },

  // Collections
  { id: "collections.folder", method: "GET", path: "/collections/{folderid}", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    purpose: "Contents of a collection folder", errorCodes: USER_ERROR_CODES },
  { id: "collections.all", method: "GET", path: "/collections/all", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    listing: "A", purpose: "All deviations in the user's collection",
    note: "offsets stop near 10 000; walk folders too (docs/service-behaviour.md#offset-ceiling)", errorCodes: USER_ERROR_CODES },
  { id: "collections.fave", method: "POST", path: "/collections/fave", ...WRITE(["browse", "collection"]),
    purpose: "Add a deviation to favourites" },
  { id: "collections.unfave", method: "POST", path: "/collections/unfave", ...WRITE(["browse", "collection"]),
    purpose: "Remove a deviation from favourites" },
  { id: "collections.folders", method: "GET", path: "/collections/folders", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "List collection folders", errorCodes: USER_ERROR_CODES },
  { id: "collections.folders.copy_deviations", method: "POST", path: "/collections/folders/copy_deviations", ...WRITE(["browse", "collection"]),
    purpose: "Copy a list of deviations to a destination folder" },
  { id: "collections.folders.create", method: "POST", path: "/collections/folders/create", ...WRITE(["browse", "collection"]),
    purpose: "Create a collection folder" },
  { id: "collections.folders.move_deviations", method: "POST", path: "/collections/folders/move_deviations", ...WRITE(["browse", "collection"]),
    purpose: "Move a list of deviations to a destination folder (listed with the copy purpose)" },
  { id: "collections.folders.remove", method: "GET", path: "/collections/folders/remove/{folderid}", ...WRITE(["browse", "collection"]),
    purpose: "Delete a collection folder", note: "a state-changing GET, as listed" },
  { id: "collections.folders.remove_deviations", method: "POST", path: "/collections/folders/remove_deviations", ...WRITE(["browse", "collection"]),
    purpose: "Remove a list of deviations from a folder" },
  { id: "collections.folders.update", method: "POST", path: "/collections/folders/update", ...WRITE(["browse", "collection"]),
    purpose: "Update a folder (name, description, cover)" },
  { id: "collections.folders.update_deviation_order", method: "POST", path: "/collections/folders/update_deviation_order",
    ...WRITE(["browse", "collection"]), purpose: "Change the order of a deviation in a folder" },
  { id: "collections.folders.update_order", method: "POST", path: "/collections/folders/update_order", ...WRITE(["browse", "collection"]),
    purpose: "Rearrange folder positions" },

  // Comments
  { id: "comments.siblings", method: "GET", path: "/comments/{commentid}/siblings", ...READ_ANY_BROWSE, ...offset(50, "thread"),
    matureContent: true, purpose: "Siblings of a comment", note: "the page also carries `context`" },
  { id: "comments.deviation", method: "GET", path: "/comments/deviation/{deviationid}", ...READ_ANY_BROWSE, ...offset(50, "thread"),
    matureContent: true, purpose: "Comments on a deviation", note: "maxdepth ≤ 5; commentid for replies of one comment" },
  { id: "comments.post.deviation", method: "POST", path: "/comments/post/deviation/{deviationid}", ...WRITE(["browse", "comment.post"]),
    purpose: "Post a comment on a deviation" },
  { id: "comments.post.profile", method: "POST", path: "/comments/post/profile/{username}", ...WRITE(["browse", "comment.post"]),
    purpose: "Post a comment on a user profile" },
  { id: "comments.post.status", method: "POST", path: "/comments/post/status/{statusid}", ...WRITE(["browse", "comment.post"]),
    purpose: "Post a comment on a status" },
  { id: "comments.profile", method: "GET", path: "/comments/profile/{username}", ...READ_ANY_BROWSE, ...offset(50, "thread"),
    matureContent: true, purpose: "Comments on a user profile", errorCodes: USER_ERROR_CODES },
  { id: "comments.status", method: "GET", path: "/comments/status/{statusid}", ...READ_ANY_BROWSE, ...offset(50, "thread"),
    matureContent: true, purpose: "Comments on a status" },

  // Curated
  { id: "curated", method: "GET", path: "/curated", ...READ_ANY_BROWSE, listing: "B", purpose: "Available curated content",
    note: "not in any current wrapper; availability and shape uncertain (docs/service-behaviour.md#endpoint-status)" },
  { id: "curated.tags", method: "GET", path: "/curated/tags", ...READ_ANY_BROWSE, purpose: "Featured tags",
    note: "not in any current wrapper; availability and shape uncertain (docs/service-behaviour.md#endpoint-status)" },

  // Data
  { id: "data.countries", method: "GET", path: "/data/countries", token: "any", scopes: [], write: false, ...LIST, purpose: "List of countries" },
  { id: "data.privacy", method: "GET", path: "/data/privacy", token: "any", scopes: [], write: false, purpose: "The service's privacy policy" },
  { id: "data.submission", method: "GET", path: "/data/submission", token: "any", scopes: [], write: false,
    purpose: "The service's submission policy" },
  { id: "data.tos", method: "GET", path: "/data/tos", token: "any", scopes: [], write: false, purpose: "The service's terms of service" },

  // Deviation
  { id: "deviation.get", method: "GET", path: "/deviation/{deviationid}", ...READ_ANY_BROWSE, purpose: "Fetch a deviation", errorCodes: { 0: "not_found", 1: "not_owned" } },
  { id: "deviation.content", method: "GET", path: "/deviation/content", ...READ_ANY_BROWSE, matureContent: true,
    purpose: "Full data not included in the main deviation object",
    note: "html often empty since 2024 (docs/service-behaviour.md#content-empty-html)", errorCodes: { 0: "not_found", 1: "unsupported_type" } },
  { id: "deviation.download", method: "GET", path: "/deviation/download/{deviationid}", ...READ_ANY_BROWSE, matureContent: true,
    purpose: "Original file download, if allowed",
    note: "counts against a weekly per-account quota (docs/service-behaviour.md#quota-weekly); src expires in ~10 min (docs/service-behaviour.md#download-url-ttl)",
    errorCodes: { 2: "download_refused" } },
  { id: "deviation.embeddedcontent", method: "GET", path: "/deviation/embeddedcontent", ...READ_ANY_BROWSE, ...offset(undefined),
    matureContent: true, purpose: "Content embedded in a deviation",
    removed: { since: "2024-08", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" } },
  { id: "deviation.edit", method: "POST", path: "/deviation/edit/{deviationid}", ...WRITE(["stash", "publish"]), listing: "A",
    purpose: "Edit a deviation" },
  { id: "deviation.journal.create", method: "POST", path: "/deviation/journal/create", ...WRITE(["user.manage"]), listing: "A",
    purpose: "Create a journal" },
  { id: "deviation.journal.update", method: "POST", path: "/deviation/journal/update/{deviationid}", ...WRITE(["user.manage"]), listing: "A",
    purpose: "Update a journal", note: "every field left empty is cleared except the cover; reset_cover_image_deviation_id=true clears it" },
  { id: "deviation.literature.create", method: "POST", path: "/deviation/literature/create", ...WRITE(["user.manage"]), listing: "A",
    purpose: "Create literature" },
  { id: "deviation.literature.update", method: "POST", path: "/deviation/literature/update/{deviationid}", ...WRITE(["user.manage"]),
    listing: "A", purpose: "Update literature",
    note: "null or empty values clear fields; DeviantArtFs uses /deviation/journal/literature/update/{id} instead (UNCERTAIN: docs/service-behaviour.md#literature-update-path)" },
  { id: "deviation.metadata", method: "GET", path: "/deviation/metadata", ...READ_ANY_BROWSE, matureContent: true,
    batch: { param: "deviationids", max: 50, maxWithExt: 10 }, purpose: "Metadata for a set of deviations",
    note: "results come back in request order; ext_collection/ext_gallery need a user token", errorCodes: { 0: "too_many" } },
  { id: "deviation.whofaved", method: "GET", path: "/deviation/whofaved", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "Users who faved a deviation" },

  // Feed (deprecated)
  { id: "feed.home", method: "GET", path: "/feed/home", ...USER(["feed"]), ...cursor("items"), deprecated: FEED_DEPRECATED, matureContent: true,
    purpose: "Watch feed" },
  { id: "feed.home.bucket", method: "GET", path: "/feed/home/{bucketid}", ...USER(["feed"]), ...offset(50, "items"), matureContent: true,
    deprecated: FEED_DEPRECATED, purpose: "Content related to one watch event" },
  { id: "feed.notifications", method: "GET", path: "/feed/notifications", ...USER(["feed"]), ...cursor("items"),
    deprecated: FEED_DEPRECATED, purpose: "Notifications" },
  { id: "feed.profile", method: "GET", path: "/feed/profile", ...USER(["feed"]), ...cursor("items"), deprecated: FEED_DEPRECATED,
    purpose: "Profile feed" },
  { id: "feed.settings", method: "GET", path: "/feed/settings", ...USER(["feed"]), deprecated: FEED_DEPRECATED, purpose: "Feed settings" },
  { id: "feed.settings.update", method: "POST", path: "/feed/settings/update", ...WRITE(["feed"]), deprecated: FEED_DEPRECATED,
    purpose: "Change feed settings" },

  // Gallery
  { id: "gallery.folder", method: "GET", path: "/gallery/{folderid}", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    purpose: "Contents of a gallery folder", errorCodes: USER_ERROR_CODES },
  { id: "gallery.all", method: "GET", path: "/gallery/all", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    purpose: "The \"all\" view of a user's gallery",
    note: "offsets stop near 10 000; walk folders too (docs/service-behaviour.md#offset-ceiling)", errorCodes: USER_ERROR_CODES },
  { id: "gallery.folders", method: "GET", path: "/gallery/folders", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "List gallery folders", errorCodes: USER_ERROR_CODES },
  { id: "gallery.folders.copy_deviations", method: "POST", path: "/gallery/folders/copy_deviations", ...WRITE(["browse", "gallery"]),
    purpose: "Copy a list of deviations to a destination folder" },
  { id: "gallery.folders.create", method: "POST", path: "/gallery/folders/create", ...WRITE(["browse", "gallery"]),
    purpose: "Create gallery folders" },
  { id: "gallery.folders.move", method: "POST", path: "/gallery/folders/move", ...WRITE(["browse", "gallery"]),
    purpose: "Move a folder into another folder" },
  { id: "gallery.folders.move_deviations", method: "POST", path: "/gallery/folders/move_deviations", ...WRITE(["browse", "gallery"]),
    purpose: "Move a list of deviations to a destination folder (listed with the copy purpose)" },
  { id: "gallery.folders.remove", method: "GET", path: "/gallery/folders/remove/{folderid}", ...WRITE(["browse", "gallery"]),
    purpose: "Delete a gallery folder",
    note: "one listing gives GET, the other POST; GET is what DeviantArtFs and go-deviantart send, so it is the default" },
  { id: "gallery.folders.remove.post", method: "POST", path: "/gallery/folders/remove/{folderid}", ...WRITE(["browse", "gallery"]),
    purpose: "Delete a gallery folder (the listing that gives POST)", note: "one listing gives GET, the other POST; both are catalogued" },
  { id: "gallery.folders.remove_deviations", method: "POST", path: "/gallery/folders/remove_deviations", ...WRITE(["browse", "gallery"]),
    purpose: "Remove a list of deviations from a gallery folder" },
  { id: "gallery.folders.update", method: "POST", path: "/gallery/folders/update", ...WRITE(["browse", "gallery"]),
    purpose: "Update a folder (name, description, cover)" },
  { id: "gallery.folders.update_deviation_order", method: "POST", path: "/gallery/folders/update_deviation_order",
    ...WRITE(["browse", "gallery"]), purpose: "Change the order of a deviation in a folder" },
  { id: "gallery.folders.update_order", method: "POST", path: "/gallery/folders/update_order", ...WRITE(["browse", "gallery"]),
    purpose: "Rearrange folder positions" },

  // Messages
  { id: "messages.delete", method: "POST", path: "/messages/delete", ...WRITE(["message"]), purpose: "Delete a message or a message stack" },
  { id: "messages.feed", method: "GET", path: "/messages/feed", ...USER(["message"]), ...cursor("results"), purpose: "Feed of all messages" },
  { id: "messages.feedback", method: "GET", path: "/messages/feedback", ...USER(["message"]), ...offset(5), purpose: "Feedback messages",
    note: "`type` is required; max limit 5 in DeviantArtFs 2026, 50 in 2020 (UNCERTAIN)" },
  { id: "messages.feedback.stack", method: "GET", path: "/messages/feedback/{stackid}", ...USER(["message"]), ...offset(50),
    purpose: "Messages in a feedback stack" },
  { id: "messages.mentions", method: "GET", path: "/messages/mentions", ...USER(["message"]), ...offset(50), purpose: "Mention messages" },
  { id: "messages.mentions.stack", method: "GET", path: "/messages/mentions/{stackid}", ...USER(["message"]), ...offset(50),
    purpose: "Messages in a mentions stack" },

  // Notes (scope `note` is inferred from its name, docs/service-behaviour.md#scopes)
  { id: "notes.list", method: "GET", path: "/notes", ...USER(["note"]), ...offset(24), purpose: "List notes",
    note: "max limit 24 in DeviantArtFs 2024, 50 in 2020; folder param `folder` (2024) vs `folderid` (2020), UNCERTAIN" },
  { id: "notes.get", method: "GET", path: "/notes/{noteid}", ...USER(["note"]), purpose: "One note" },
  { id: "notes.delete", method: "POST", path: "/notes/delete", ...WRITE(["note"]), purpose: "Delete one or several notes" },
  { id: "notes.folders", method: "GET", path: "/notes/folders", ...USER(["note"]), ...LIST, purpose: "List note folders" },
  { id: "notes.folders.create", method: "POST", path: "/notes/folders/create", ...WRITE(["note"]), purpose: "Create a note folder" },
  { id: "notes.folders.remove", method: "POST", path: "/notes/folders/remove/{folderid}", ...WRITE(["note"]), purpose: "Delete a note folder" },
  { id: "notes.folders.rename", method: "POST", path: "/notes/folders/rename/{folderid}", ...WRITE(["note"]), purpose: "Rename a note folder" },
  { id: "notes.mark", method: "POST", path: "/notes/mark", ...WRITE(["note"]), purpose: "Mark notes" },
  { id: "notes.move", method: "POST", path: "/notes/move", ...WRITE(["note"]), purpose: "Move notes to a folder" },
  { id: "notes.send", method: "POST", path: "/notes/send", ...WRITE(["note"]), purpose: "Send a note" },

  // Stash (staging area): everything but submit and publish is gone
  { id: "stash.stack", method: "GET", path: "/stash/{stackid}", ...USER(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Metadata of a stack" },
  { id: "stash.stack.contents", method: "GET", path: "/stash/{stackid}/contents", ...USER(["stash"]), ...offset(50), listing: "B",
    removed: STASH_GONE, purpose: "Contents of a stack" },
  { id: "stash.delete", method: "GET", path: "/stash/delete", ...WRITE(["stash"]), removed: STASH_GONE,
    purpose: "Delete a previously submitted file" },
  { id: "stash.delta", method: "GET", path: "/stash/delta", ...USER(["stash"]), removed: STASH_GONE,
    purpose: "List all staging folders and submissions of a user",
    note: "paged by cursor + offset (limit ≤ 120) with an `entries` array; not modelled by the transport's iterators (docs/service-behaviour.md#stash-delta-shape)" },
  { id: "stash.item", method: "GET", path: "/stash/item/{itemid}", ...USER(["stash"]), removed: STASH_GONE, purpose: "Metadata of an item" },
  { id: "stash.move", method: "POST", path: "/stash/move/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Move the stack into a target stack" },
  { id: "stash.position", method: "POST", path: "/stash/position/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Change the position of a stack within its parent" },
  { id: "stash.publish", method: "POST", path: "/stash/publish", ...WRITE(["stash", "publish"]),
    purpose: "Publish a staged item as a deviation" },
  { id: "stash.publish.categorytree", method: "GET", path: "/stash/publish/categorytree", ...USER(["stash", "publish"]), removed: STASH_GONE,
    purpose: "Category information for publishing" },
  { id: "stash.publish.userdata", method: "GET", path: "/stash/publish/userdata", ...USER(["stash", "publish"]), removed: STASH_GONE,
    purpose: "The user's data about features and agreements" },
  { id: "stash.space", method: "GET", path: "/stash/space", ...USER(["stash"]), removed: STASH_GONE,
    purpose: "Staging space the user has left for uploads" },
  { id: "stash.submit", method: "POST", path: "/stash/submit", ...WRITE(["stash"]),
    purpose: "Submit files to the staging area or modify existing files", note: "multipart with files; call /placebo first on long uploads" },
  { id: "stash.update", method: "POST", path: "/stash/update/{stackid}", ...WRITE(["stash"]), listing: "B", removed: STASH_GONE,
    purpose: "Update a stack's details" },

  // User
  { id: "user.damntoken", method: "GET", path: "/user/damntoken", ...USER(["user"]), listing: "B",
    purpose: "Retrieve the auth token needed to connect to the service's chat servers",
    note: "availability uncertain (docs/service-behaviour.md#endpoint-status)" },
  { id: "user.friends", method: "GET", path: "/user/friends/{username}", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "A user's list of friends (the users they watch)", errorCodes: USER_ERROR_CODES },
  { id: "user.friends.search", method: "GET", path: "/user/friends/search", ...READ_ANY_BROWSE, ...LIST, purpose: "Search friends by username" },
  { id: "user.friends.unwatch", method: "GET", path: "/user/friends/unwatch/{username}", ...WRITE(["browse", "user.manage"]),
    purpose: "Unwatch a user", note: "a state-changing GET, as listed" },
  { id: "user.friends.watch", method: "POST", path: "/user/friends/watch/{username}", ...WRITE(["browse", "user.manage"]),
    purpose: "Watch a user", note: "throttled: too many watches in a short period → 400 error_code 2 (docs/service-behaviour.md#watch-throttle)" },
  { id: "user.friends.watching", method: "GET", path: "/user/friends/watching/{username}", ...USER(["browse", "user"]),
    purpose: "Whether a user is watched by the given user" },
  { id: "user.profile", method: "GET", path: "/user/profile/{username}", ...READ_ANY_BROWSE, purpose: "Profile information", errorCodes: USER_ERROR_CODES, uncodedRefusal: "user_not_found" },
  { id: "user.profile.avatar.update", method: "POST", path: "/user/profile/avatar/update", ...WRITE(["user.manage"]), listing: "A",
    purpose: "Upload a new avatar", note: "multipart upload; scope not stated by any source (UNCERTAIN)" },
  { id: "user.profile.posts", method: "GET", path: "/user/profile/posts", ...READ_ANY_BROWSE, ...cursor("results", 50), matureContent: true,
    listing: "A", purpose: "All journals and status updates of a user in one feed",
    note: "stop on an empty next_cursor (docs/service-behaviour.md#cursor-end); statuses are known to be missing (docs/service-behaviour.md#profile-posts-incomplete)",
    errorCodes: USER_ERROR_CODES },
  { id: "user.profile.update", method: "POST", path: "/user/profile/update", ...WRITE(["user.manage"]),
    purpose: "Update the user's profile", note: "scope not stated by GODA; user.manage is likely (UNCERTAIN)" },
  { id: "user.statuses", method: "GET", path: "/user/statuses/", ...READ_ANY_BROWSE, ...offset(50), listing: "B",
    purpose: "A user's statuses",
    removed: { since: "2024-08", reason: "removed; /user/profile/posts replaces it (docs/service-behaviour.md#endpoint-status)" } },
  { id: "user.statuses.get", method: "GET", path: "/user/statuses/{statusid}", ...READ_ANY_BROWSE, listing: "B", purpose: "One status",
    removed: { since: "2024-10", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" } },
  { id: "user.statuses.post", method: "POST", path: "/user/statuses/post", ...WRITE(["browse", "user.manage"]), purpose: "Post a status" },
  { id: "user.tiers", method: "GET", path: "/user/tiers/{username}", ...USER(["user"]), ...LIST, listing: "A",
    purpose: "A user's subscription tiers (tier objects are deviations)", errorCodes: USER_ERROR_CODES },
  { id: "user.watchers", method: "GET", path: "/user/watchers/{username}", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "A user's list of watchers", note: "capped at 50 000 entries (docs/service-behaviour.md#watchers-cap)", errorCodes: USER_ERROR_CODES },
  { id: "user.whoami", method: "GET", path: "/user/whoami", ...USER(["user"]), purpose: "Info on the authenticated user" },
  { id: "user.whois", method: "POST", path: "/user/whois", ...USER(["browse"]), ...LIST, purpose: "Info for given usernames",
    note: "a read sent as POST with usernames[]" },

  // Util
  { id: "placebo", method: "GET", path: "/placebo", token: "any", scopes: [], write: false,
    purpose: "Confirm that the access token is valid" },
]);

export type OperationId = (typeof CATALOGUE)[number]["id"];

const BY_ID: ReadonlyMap<string, Operation> = new Map(CATALOGUE.map((op) => [op.id, op]));

export function isOperationId(id: string): id is OperationId {
  return BY_ID.has(id);
}

/** The catalogue entry for `id`; throws on an unknown id (a typo must not become a silent no-op). */
export function operation(id: OperationId | (string & {})): Operation {
  const op = BY_ID.get(id);
  if (!op) throw new Error(`unknown API operation "${id}": it is not in src/api/catalogue.ts`);
  return op;
}

/** The catalogue entry for `id`, or undefined for an id the catalogue does not know (error classification). */
export function operationIfKnown(id: string): Operation | undefined {
  return BY_ID.get(id);
}

const PLACEHOLDER = /\{([A-Za-z0-9_]+)\}/g;

/** The placeholder names of a path template, in order: "/gallery/{folderid}" → ["folderid"]. */
export function pathParams(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1] as string);
}

/**
 * Fills `{name}` placeholders from `params`, URL-encoding each value as one path segment (so a `/` in a
 * username cannot change the route). Throws when a placeholder has no value or an empty one: an empty
 * segment would address a different endpoint (e.g. `/user/friends/` instead of `/user/friends/{username}`).
 */
export function expandPath(template: string, params: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const value = params[name];
    if (value === undefined || value === null || value === "") {
      throw new Error(`path ${template} needs a value for {${name}}`);
    }
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "bigint") {
      throw new Error(`path ${template}: {${name}} must be a string or a number, got ${typeof value}`);
    }
    return encodeURIComponent(String(value));
  });
}
