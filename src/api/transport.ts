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
};

export type Page<T> = {
  items: T[];
  hasMore: boolean;
  /** Offset style: the offset this page was requested at and the service's next_offset, verbatim. */
  offset?: number;
  nextOffset?: number | null;
  /** Cursor style: the cursor this page was requested with and the next one, verbatim. */
  cursor?: string;
  nextCursor?: string | null;
  /** The whole parsed body, for page-level fields such as a folder's `name` or a comment `total`. */
  raw: Record<string, unknown>;
};

/** Why a listing stopped before the service said it had no more. */
export type Truncation = { reason: "offset_ceiling"; atOffset: number; ceiling: number };

export type PageIterator<T> = AsyncIterable<Page<T>> & {
  /** Set once iteration has stopped at the offset ceiling while the service still had more. */
  readonly truncation: Truncation | undefined;
};

export type OffsetPagingOptions = {
  /** Page size sent as `limit` (the catalogue's maximum for the operation by default). */
  limit: number;
  /** Array field of the page: `results` for most listings, `thread` for comments. */
  itemsKey?: "results" | "thread" | "items";
  startOffset?: number;
  /** Offsets stop working near 10 000 on the real service. */
  ceiling?: number;
};

export type CursorPagingOptions = {
  limit?: number;
  /** `results` for /user/profile/posts and /messages/feed; `items` for the legacy /feed/* endpoints. */
  itemsKey?: "results" | "items";
  startCursor?: string;
};

export interface ApiTransport {
  /** One call; the body is validated by `schema` (malformed JSON or a schema mismatch is an ApiError naming the operation). */
  request<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>>;
  paginateOffset<S extends z.ZodType>(req: ApiRequest, itemSchema: S, options: OffsetPagingOptions): PageIterator<z.infer<S>>;
  paginateCursor<S extends z.ZodType>(req: ApiRequest, itemSchema: S, options: CursorPagingOptions): PageIterator<z.infer<S>>;
}
