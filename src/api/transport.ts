// The contract between the typed client (client.ts, catalogue.ts, types.ts) and the HTTP layer
// (http.ts: got instance, auth, pacing, retry, error mapping; paginate.ts: page iterators).
import type { z } from "zod";

export type Scalar = string | number | boolean;
/** Arrays are sent in the service's bracket syntax: `deviationids[]=a&deviationids[]=b`. */
export type ParamValue = Scalar | null | undefined | Scalar[];
export type Params = Record<string, ParamValue>;

export type ApiRequest = {
  /** Catalogue id of the operation, e.g. "gallery.folder"; named in errors, logs and metrics. */
  operation: string;
  method: "GET" | "POST";
  /** Expanded path relative to the API root (`{base}/api/v1/oauth2`), with a leading slash. */
  path: string;
  query?: Params;
  /** POST body, sent form-encoded (the service does not parse JSON bodies). */
  form?: Params;
  /**
   * Longest the caller will wait for the pacer before getting a ThrottleDelayError carrying the wait,
   * so a job can be delayed instead of holding a worker slot. Defaults to a few seconds.
   */
  maxWaitMs?: number;
  /** Aborts paging or a pacer wait early. */
  signal?: AbortSignal;
  /**
   * A single attempt: no retry after a throttle, a 5xx or a cut-short answer, for a caller that asks again
   * at its next run anyway (src/sync/sources/vanished.ts). A 401 is still refreshed once.
   */
  once?: boolean;
};

export type Page<T> = {
  /** The items that could be read (unreadable ones are recorded and left out). */
  items: T[];
  /**
   * How many items the service sent, readable or not: what paging decisions count (a page whose items
   * were all unreadable is not the empty last page). Absent means `items.length`.
   */
  received?: number;
  hasMore: boolean;
  /** Offset style: the offset this page was requested at and the service's next_offset, verbatim. */
  offset?: number;
  /**
   * Offset style: this page was asked for because the page before it said there was more (or it resumes
   * a walk). Empty, it means the listing stopped at an offset ceiling, not at its end.
   */
  afterMore?: boolean;
  /** Offset style: how many empty pages came right before this one in the walk (absent: none). */
  emptyBefore?: number;
  nextOffset?: number | null;
  /** Cursor style: the cursor this page was requested with and the next one, verbatim. */
  cursor?: string;
  nextCursor?: string | null;
  /** The whole parsed body, for page-level fields such as a folder's `name` or a comment `total`. */
  raw: Record<string, unknown>;
};

/** Why a listing stopped before the service said it had no more. */
export type Truncation =
  | { reason: "offset_ceiling"; atOffset: number; ceiling: number }
  /** A cursor page that could not be read twice in a row, or that repeats a cursor: the pages after it cannot be reached. */
  | { reason: "unreadable_page"; detail: string };

export type PageIterator<T> = AsyncIterable<Page<T>> & {
  /** Set once iteration has stopped at the offset ceiling (or an unreadable cursor page) while the service still had more. */
  readonly truncation: Truncation | undefined;
  /**
   * What this walk could not read and skipped: whole pages (read twice, recorded in the unreadable
   * responses) and single items of otherwise readable pages. A listing with any is not complete.
   */
  readonly skipped: { pages: number; items: number };
};

/**
 * Whether a walk read every page and item it met: one that skipped any has not seen what they held, so it ends
 * nothing that was not seen (docs/service-behaviour.md#tolerant-reading).
 */
export function readWhole(pages: Pick<PageIterator<unknown>, "skipped">): boolean {
  return pages.skipped.pages === 0 && pages.skipped.items === 0;
}

/**
 * Something the service sent that dvault could not read, kept with its raw JSON so nothing is lost
 * silently (docs/service-behaviour.md#tolerant-reading). The transport reports; src/db stores.
 */
export type UnreadableReport = {
  operation: string;
  /** The request's path and parameters (tokens travel in headers, never here). */
  request: { method: string; path: string; params: Params };
  /** "" for a whole response, "item <id>" (or "item #<index>") for one item of a page. */
  subject: string;
  /** What was wrong, e.g. "unexpected shape at author.userid: expected string, received null". */
  detail: string;
  /** The item or body as received: parsed JSON, or the text when it was not JSON. */
  raw: unknown;
  account?: string | undefined;
};

export interface UnreadableSink {
  record(report: UnreadableReport): Promise<void>;
}

export type OffsetPagingOptions = {
  /** Page size sent as `limit` (the catalogue's maximum for the operation by default). */
  limit: number;
  /**
   * Array field of the page: `results` for most listings, `thread` for comments. When the page has no
   * such field, the other known keys are tried (docs/service-behaviour.md#feed-bucket-page-key).
   */
  itemsKey?: "results" | "thread" | "items";
  startOffset?: number;
  /** Offsets stop working near 10 000 on the real service. */
  ceiling?: number;
};

export type CursorPagingOptions = {
  limit?: number;
  /** `results` for /user/profile/posts and /messages/feed; `items` for the legacy /feed/* endpoints (either is accepted). */
  itemsKey?: "results" | "items";
  startCursor?: string;
};

export interface ApiTransport {
  /** One call; the body is validated by `schema` (malformed JSON or a schema mismatch is an ApiError naming the operation). */
  request<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>>;
  /** One call whose body lists items under `key`: each read on its own, unreadable ones recorded and left out. */
  requestItems<S extends z.ZodType>(req: ApiRequest, key: string, itemSchema: S): Promise<{ body: Record<string, unknown>; items: z.infer<S>[] }>;
  paginateOffset<S extends z.ZodType>(req: ApiRequest, itemSchema: S, options: OffsetPagingOptions): PageIterator<z.infer<S>>;
  paginateCursor<S extends z.ZodType>(req: ApiRequest, itemSchema: S, options: CursorPagingOptions): PageIterator<z.infer<S>>;
}
