// What one catalogue entry says about an operation, and the building blocks the area files
// (src/api/catalogue/*.ts) write their entries with.
import type { z } from "zod";

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
  /** The body schema the client validates an answer with; for a listing, the schema of one page. */
  response: z.ZodType;
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

export type Defaults = Pick<Operation, "token" | "scopes" | "write">;
export const READ_ANY_BROWSE: Defaults = { token: "any", scopes: ["browse"], write: false };
export const USER: (scopes: readonly Scope[]) => Defaults = (scopes) => ({ token: "user", scopes, write: false });
export const WRITE: (scopes: readonly Scope[]) => Defaults = (scopes) => ({ token: "user", scopes, write: true });

/** An entry as an area file writes it: the flags that are mostly off may be left out. */
export type Entry = Omit<Operation, "matureContent" | "removed" | "deprecated" | "paging"> &
  Partial<Pick<Operation, "matureContent" | "removed" | "deprecated" | "paging">>;

export const offset = (maxLimit: number | undefined, itemsKey: ItemsKey = "results") =>
  ({ paging: "offset", itemsKey, ...(maxLimit === undefined ? {} : { maxLimit }) }) as const;
export const cursor = (itemsKey: ItemsKey = "results", maxLimit?: number) =>
  ({ paging: "cursor", itemsKey, ...(maxLimit === undefined ? {} : { maxLimit }) }) as const;
export const LIST = { paging: "none", itemsKey: "results" } as const;

export const STASH_GONE: Removal = {
  since: "2024-07 (minor version 20240701)",
  reason: "all Sta.sh endpoints except submit and publish were removed from the API (docs/service-behaviour.md#endpoint-status)",
};
export const FEED_DEPRECATED: Deprecation = {
  since: "2022",
  reason: "the /feed/* endpoints are deprecated; staff point to /messages/* instead (docs/service-behaviour.md#feed-deprecated)",
};
