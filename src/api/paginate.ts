// Page iterators for the service's two paging styles (api-notes §5), built on got.paginate so every page
// goes through the same instance — pacer, auth, retry and error hooks included. Each yielded "item" of
// got.paginate is one whole page; the stop rules live in nextOffset/nextCursor (pure, unit-tested).
import type { Got, OptionsInit, Response } from "got";
import { z } from "zod";
import type { ApiRequest, CursorPagingOptions, OffsetPagingOptions, Page, PageIterator, Truncation } from "./transport.ts";

/** What the iterators need from the HTTP layer (http.ts provides it). */
export type PageIO = {
  client: Got;
  relativePath(req: ApiRequest): string;
  gotOptions(req: ApiRequest): OptionsInit;
  /** A fresh per-call state for each page, so retry counters and the one-refresh rule apply per page. */
  freshContext(req: ApiRequest): Record<string, unknown>;
  parse<S extends z.ZodType>(response: Response, req: ApiRequest, schema: S): z.infer<S>;
};

/** The practical offset ceiling of the real service (api-notes §5.1). */
export const DEFAULT_OFFSET_CEILING = 10_000;

export type OffsetDecision = { next: number; truncation?: undefined } | { next?: undefined; truncation?: Truncation };

/**
 * Where the next page starts, or why there is none. `next_offset` is followed verbatim; when it is null
 * while `has_more` is true, advance by the items received (as gallery-dl does). An empty page ends the
 * listing even if `has_more` says otherwise; an offset at or past the ceiling ends it with a truncation.
 */
export function nextOffset(
  page: { items: readonly unknown[]; hasMore: boolean; offset: number; nextOffset?: number | null | undefined },
  ceiling: number,
): OffsetDecision {
  if (!page.hasMore || page.items.length === 0) return {};
  const next = page.nextOffset ?? page.offset + page.items.length;
  // A next_offset that does not move forward would loop forever.
  if (next <= page.offset) return {};
  if (next >= ceiling) return { truncation: { reason: "offset_ceiling", atOffset: next, ceiling } };
  return { next };
}

/** The next cursor, verbatim, or undefined when paging must stop (no more, empty page, empty/missing/repeated cursor). */
export function nextCursor(page: {
  items: readonly unknown[];
  hasMore: boolean;
  cursor?: string | undefined;
  nextCursor?: string | null | undefined;
}): string | undefined {
  if (!page.hasMore || page.items.length === 0) return undefined;
  if (!page.nextCursor || page.nextCursor === page.cursor) return undefined;
  return page.nextCursor;
}

function pageSchema(itemsKey: string, itemSchema: z.ZodType, paging: Record<string, z.ZodType>) {
  return z.looseObject({ has_more: z.boolean(), ...paging, [itemsKey]: z.array(itemSchema) });
}

const OFFSET_FIELDS = { next_offset: z.number().int().nullable().optional() };
// /user/profile/posts answers `next_cursor`; /messages/feed and the legacy /feed/* answer `cursor`.
const CURSOR_FIELDS = { next_cursor: z.string().nullable().optional(), cursor: z.string().nullable().optional() };

type PageState<T> = { truncation: Truncation | undefined; pages: () => AsyncIterableIterator<Page<T>> };

function iterator<T>(req: ApiRequest, state: PageState<T>): PageIterator<T> {
  return {
    get truncation() {
      return state.truncation;
    },
    async *[Symbol.asyncIterator]() {
      req.signal?.throwIfAborted();
      for await (const page of state.pages()) {
        yield page;
        // An abort between pages ends the listing with the abort error, never as if it were complete.
        req.signal?.throwIfAborted();
      }
    },
  };
}

export function paginateOffset<S extends z.ZodType>(
  io: PageIO,
  req: ApiRequest,
  itemSchema: S,
  options: OffsetPagingOptions,
): PageIterator<z.infer<S>> {
  type T = z.infer<S>;
  const itemsKey = options.itemsKey ?? "results";
  const ceiling = options.ceiling ?? DEFAULT_OFFSET_CEILING;
  const schema = pageSchema(itemsKey, itemSchema, OFFSET_FIELDS);
  const state: PageState<T> = {
    truncation: undefined,
    pages: () => {
      state.truncation = undefined;
      const start = options.startOffset ?? 0;
      if (start >= ceiling) {
        state.truncation = { reason: "offset_ceiling", atOffset: start, ceiling };
        return emptyPages<T>();
      }
      let offset = start;
      const first: ApiRequest = { ...req, query: { ...req.query, offset: start, limit: options.limit } };
      return io.client.paginate<Page<T>, string>(io.relativePath(first), {
        ...io.gotOptions(first),
        pagination: {
          transform: (response) => {
            const body = io.parse(response, req, schema) as Record<string, unknown>;
            const page: Page<T> = {
              items: body[itemsKey] as T[],
              hasMore: body.has_more as boolean,
              offset,
              nextOffset: (body.next_offset as number | null | undefined) ?? null,
              raw: body,
            };
            return [page];
          },
          paginate: ({ currentItems }) => {
            const page = currentItems[0];
            if (!page) return false;
            const decision = nextOffset({ ...page, offset: page.offset ?? offset }, ceiling);
            if (decision.truncation) state.truncation = decision.truncation;
            if (decision.next === undefined) return false;
            offset = decision.next;
            return { searchParams: { offset }, context: io.freshContext(req) };
          },
          countLimit: Number.POSITIVE_INFINITY,
          requestLimit: Number.POSITIVE_INFINITY,
          backoff: 0,
          stackAllItems: false,
        },
      });
    },
  };
  return iterator(req, state);
}

export function paginateCursor<S extends z.ZodType>(
  io: PageIO,
  req: ApiRequest,
  itemSchema: S,
  options: CursorPagingOptions,
): PageIterator<z.infer<S>> {
  type T = z.infer<S>;
  const itemsKey = options.itemsKey ?? "results";
  const schema = pageSchema(itemsKey, itemSchema, CURSOR_FIELDS);
  const state: PageState<T> = {
    truncation: undefined,
    pages: () => {
      let cursor = options.startCursor;
      const first: ApiRequest = { ...req, query: { ...req.query, cursor, limit: options.limit } };
      return io.client.paginate<Page<T>, string>(io.relativePath(first), {
        ...io.gotOptions(first),
        pagination: {
          transform: (response) => {
            const body = io.parse(response, req, schema) as Record<string, unknown>;
            const next = (body.next_cursor ?? body.cursor) as string | null | undefined;
            const page: Page<T> = {
              items: body[itemsKey] as T[],
              hasMore: body.has_more as boolean,
              nextCursor: next ?? null,
              raw: body,
            };
            if (cursor !== undefined) page.cursor = cursor;
            return [page];
          },
          paginate: ({ currentItems }) => {
            const page = currentItems[0];
            if (!page) return false;
            const next = nextCursor({ ...page, cursor });
            if (next === undefined) return false;
            cursor = next;
            return { searchParams: { cursor }, context: io.freshContext(req) };
          },
          countLimit: Number.POSITIVE_INFINITY,
          requestLimit: Number.POSITIVE_INFINITY,
          backoff: 0,
          stackAllItems: false,
        },
      });
    },
  };
  return iterator(req, state);
}

async function* emptyPages<T>(): AsyncIterableIterator<Page<T>> {
  // Nothing to fetch: the start offset is already past the ceiling.
}
