// Page iterators for the service's two paging styles (docs/service-behaviour.md#offset-paging,
// #cursor-end), built on got.paginate so every page goes through the same instance — pacer, auth, retry
// and error hooks included. Each yielded "item" of got.paginate is one whole page; the stop rules live in
// nextOffset/nextCursor (pure, unit-tested). Pages are read tolerantly
// (docs/service-behaviour.md#tolerant-reading): the items array under any known key, paging fields as
// numbers or numeric strings, each item on its own — one unreadable item is recorded and skipped, and a
// page that cannot be read twice in a row is recorded and skipped, never failing the listing.
import { setTimeout as wait } from "node:timers/promises";
import type { PaginationOptions, Response } from "got";
import type { z } from "zod";
import type { ApiRequest, CursorPagingOptions, OffsetPagingOptions, Page, PageIterator, Truncation } from "./transport.ts";
import { isUnreadable, readEnvelope, readItems, type Envelope, type PageIO, type Read, type Unreadable } from "./paginate/read-page.ts";

/** Readings of a page past the byte cap before it is recorded as unreadable and skipped. */
export const TOO_LARGE_READINGS = 3;

/** The practical offset ceiling of the real service (docs/service-behaviour.md#offset-ceiling). */
export const DEFAULT_OFFSET_CEILING = 10_000;

/**
 * Empty pages in a row a walk goes past when each says has_more and where to go on: a page of nothing but
 * left-out works (docs/service-behaviour.md#short-pages). One more ends the walk as an empty page does.
 */
export const EMPTY_PAGES_PASSED = 3;

export type OffsetDecision = { next: number; truncation?: undefined } | { next?: undefined; truncation?: Truncation };

/**
 * Where the next page starts, or why there is none. `next_offset` is followed verbatim; when it is null
 * while `has_more` is true, advance by the items received (as gallery-dl does), and so when it does not
 * move forward. An empty page that says `has_more` and gives a `next_offset` further on is gone past, up
 * to EMPTY_PAGES_PASSED in a row (its works were all left out: docs/service-behaviour.md#short-pages);
 * any other empty page ends the listing even if `has_more` says otherwise. An offset at or past the known
 * ceiling ends it with a truncation, and so does such an empty page after one that said there was more:
 * the service stopped at a ceiling of its own (docs/service-behaviour.md#offset-ceiling), whatever its value.
 */
export function nextOffset(
  page: {
    items: readonly unknown[];
    received?: number | undefined;
    hasMore: boolean;
    offset: number;
    nextOffset?: number | null | undefined;
    afterMore?: boolean | undefined;
    emptyBefore?: number | undefined;
  },
  ceiling: number,
): OffsetDecision {
  // Unreadable items (recorded and left out) still made the page non-empty.
  const received = page.received ?? page.items.length;
  if (received === 0) {
    const onward = page.hasMore && typeof page.nextOffset === "number" && page.nextOffset > page.offset;
    if (!onward || (page.emptyBefore ?? 0) >= EMPTY_PAGES_PASSED) {
      return page.afterMore ? { truncation: { reason: "offset_ceiling", atOffset: page.offset, ceiling: page.offset } } : {};
    }
  } else if (!page.hasMore) return {};
  // A next_offset that does not move forward (repeated, or going back) would loop forever; it still said
  // there is more, so go on by the items received, as for a null one: ending here would take the rest of
  // the listing for gone.
  const given = page.nextOffset ?? page.offset + received;
  const next = given > page.offset ? given : page.offset + received;
  if (next >= ceiling) return { truncation: { reason: "offset_ceiling", atOffset: next, ceiling } };
  return { next };
}

/** The next cursor, verbatim, or undefined when paging must stop (no more, empty page, empty/missing/repeated cursor). */
export function nextCursor(page: {
  items: readonly unknown[];
  received?: number | undefined;
  hasMore: boolean;
  cursor?: string | undefined;
  nextCursor?: string | null | undefined;
}): string | undefined {
  if (!page.hasMore || (page.received ?? page.items.length) === 0) return undefined;
  if (!page.nextCursor || page.nextCursor === page.cursor) return undefined;
  return page.nextCursor;
}

// ---- iterators --------------------------------------------------------------------------------------

type PageState<T> = {
  truncation: Truncation | undefined;
  skipped: { pages: number; items: number };
  pages: () => AsyncIterableIterator<Read<T>>;
};

function iterator<T>(req: ApiRequest, state: PageState<T>): PageIterator<T> {
  return {
    get truncation() {
      return state.truncation;
    },
    get skipped() {
      return state.skipped;
    },
    async *[Symbol.asyncIterator]() {
      req.signal?.throwIfAborted();
      for await (const page of state.pages()) {
        if (isUnreadable(page)) continue;
        yield page;
        // An abort between pages ends the listing with the abort error, never as if it were complete.
        req.signal?.throwIfAborted();
      }
    },
  };
}

/**
 * The shared reading step: the envelope, then the items. An unreadable envelope is read again once
 * (`retry` says whether this is that second reading); the second failure is recorded.
 */
async function readPage<S extends z.ZodType>(
  io: PageIO,
  req: ApiRequest,
  response: Response,
  args: { schema: S; itemsKey: string; second: boolean; skipped: { items: number } },
): Promise<{ envelope: Envelope; items: z.infer<S>[]; body: Record<string, unknown> } | Unreadable> {
  const body = io.readJson(response, req);
  const envelope = readEnvelope(body, args.itemsKey);
  if (typeof envelope === "string") {
    if (args.second) await io.report(req, "", envelope, body);
    return { unreadable: envelope, raw: body };
  }
  const items = await readItems(io, req, args.schema, envelope.items, args.skipped);
  return { envelope, items, body: body as Record<string, unknown> };
}

export function paginateOffset<S extends z.ZodType>(io: PageIO, req: ApiRequest, itemSchema: S, options: OffsetPagingOptions): PageIterator<z.infer<S>> {
  type T = z.infer<S>;
  const itemsKey = options.itemsKey ?? "results";
  const ceiling = options.ceiling ?? DEFAULT_OFFSET_CEILING;
  const state: PageState<T> = {
    truncation: undefined,
    skipped: { pages: 0, items: 0 },
    pages: () => {
      state.truncation = undefined;
      state.skipped = { pages: 0, items: 0 };
      const start = options.startOffset ?? 0;
      if (start >= ceiling) {
        state.truncation = { reason: "offset_ceiling", atOffset: start, ceiling };
        return emptyPages<T>();
      }
      let offset = start;
      /** The current offset was read once and could not be: the next reading is the second. */
      let rereading = false;
      /** Empty pages read in a row just before the next one. */
      let empties = 0;
      const at = (o: number): ApiRequest => ({ ...req, query: { ...req.query, offset: o, limit: options.limit } });
      // After an answer past the byte cap, paging starts again at the offset it failed at, or after it.
      const restart = () => {
        const first = at(offset);
        return io.client.paginate<Read<T>, string>(io.relativePath(first), { ...io.gotOptions(first), pagination: pagination() });
      };
      // A page recorded as unread is stepped over as if it held a full page.
      const skipPage = () => {
        const next = offset + options.limit;
        if (next >= ceiling) {
          state.truncation = { reason: "offset_ceiling", atOffset: next, ceiling };
          return false;
        }
        offset = next;
        return true;
      };
      return guardedPages(io, () => at(offset), restart, { skipped: state.skipped, afterSkip: skipPage });
      function pagination() {
        return {
          transform: async (response) => {
            const read = await readPage(io, at(offset), response, { schema: itemSchema, itemsKey, second: rereading, skipped: state.skipped });
            if (isUnreadable(read)) return [read];
            const { envelope, items, body } = read;
            const page: Page<T> = {
              items,
              // Without has_more, a next_offset says there is more.
              hasMore: envelope.hasMore ?? envelope.nextOffset !== null,
              offset,
              nextOffset: envelope.nextOffset,
              // Every page after the first was asked for because the one before said there was more.
              afterMore: offset > 0,
              raw: body,
            };
            if (items.length !== envelope.items.length) page.received = envelope.items.length;
            if (empties > 0) page.emptyBefore = empties;
            empties = envelope.items.length === 0 ? empties + 1 : 0;
            return [page];
          },
          paginate: ({ currentItems }) => {
            const page = currentItems[0];
            if (!page) return false;
            if (isUnreadable(page)) {
              if (!rereading) {
                rereading = true;
                return { searchParams: { offset }, context: io.freshContext(req) };
              }
              // Read twice and unreadable both times: skip it.
              rereading = false;
              state.skipped.pages++;
              return skipPage() && { searchParams: { offset }, context: io.freshContext(req) };
            }
            rereading = false;
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
        } satisfies PaginationOptions<Read<T>, string>;
      }
    },
  };
  return iterator(req, state);
}

export function paginateCursor<S extends z.ZodType>(io: PageIO, req: ApiRequest, itemSchema: S, options: CursorPagingOptions): PageIterator<z.infer<S>> {
  type T = z.infer<S>;
  const itemsKey = options.itemsKey ?? "results";
  const state: PageState<T> = {
    truncation: undefined,
    skipped: { pages: 0, items: 0 },
    pages: () => {
      state.truncation = undefined;
      state.skipped = { pages: 0, items: 0 };
      let cursor = options.startCursor;
      let rereading = false;
      /** Cursors this walk has asked with: one handed back again would read the same pages for ever. */
      const asked = new Set<string>();
      const at = (c: string | undefined): ApiRequest => ({ ...req, query: { ...req.query, cursor: c, limit: options.limit } });
      const restart = () => {
        const first = at(cursor);
        return io.client.paginate<Read<T>, string>(io.relativePath(first), { ...io.gotOptions(first), pagination: pagination() });
      };
      // A cursor page past the byte cap cannot be stepped over: the pages after it cannot be reached.
      const stopAfterTooLarge = () => {
        state.truncation = { reason: "unreadable_page", detail: "response too large" };
        return false;
      };
      return guardedPages(io, () => at(cursor), restart, { skipped: state.skipped, afterSkip: stopAfterTooLarge });
      function pagination() {
        return {
          transform: async (response) => {
            const read = await readPage(io, at(cursor), response, { schema: itemSchema, itemsKey, second: rereading, skipped: state.skipped });
            if (isUnreadable(read)) return [read];
            const { envelope, items, body } = read;
            const page: Page<T> = {
              items,
              hasMore: envelope.hasMore ?? Boolean(envelope.nextCursor),
              nextCursor: envelope.nextCursor,
              raw: body,
            };
            if (cursor !== undefined) page.cursor = cursor;
            if (items.length !== envelope.items.length) page.received = envelope.items.length;
            if (cursor !== undefined) asked.add(cursor);
            const next = envelope.nextCursor;
            if (page.hasMore && envelope.items.length > 0 && next && asked.has(next)) await cursorStuck(io, at(cursor), state, next, body);
            return [page];
          },
          paginate: ({ currentItems }) => {
            const page = currentItems[0];
            if (!page) return false;
            if (isUnreadable(page)) {
              if (!rereading) {
                rereading = true;
                return { searchParams: cursor === undefined ? {} : { cursor }, context: io.freshContext(req) };
              }
              // A cursor page read twice and unreadable: the pages after it cannot be reached.
              state.skipped.pages++;
              state.truncation = { reason: "unreadable_page", detail: page.unreadable };
              return false;
            }
            rereading = false;
            const next = nextCursor({ ...page, cursor });
            if (next === undefined || asked.has(next)) return false;
            cursor = next;
            return { searchParams: { cursor }, context: io.freshContext(req) };
          },
          countLimit: Number.POSITIVE_INFINITY,
          requestLimit: Number.POSITIVE_INFINITY,
          backoff: 0,
          stackAllItems: false,
        } satisfies PaginationOptions<Read<T>, string>;
      }
    },
  };
  return iterator(req, state);
}

/**
 * A cursor page that says there is more but hands back a cursor already asked with: the pages after it cannot
 * be reached. Its items are read; the rest of the listing is recorded as unread, as after an unreadable
 * page, so the walk ends nothing it did not see (docs/service-behaviour.md#cursor-end).
 */
async function cursorStuck(io: PageIO, req: ApiRequest, state: PageState<unknown>, next: string, body: unknown): Promise<void> {
  const detail = `has_more is true but next_cursor repeats one already asked with (${next})`;
  await io.report(req, "", detail, body);
  state.skipped.pages++;
  state.truncation = { reason: "unreadable_page", detail };
}

/**
 * Runs a got.paginate walk (`start` begins one where the walk stands) and gives its errors their meaning
 * (io.mapError). A page past the byte cap (docs/service-behaviour.md#hostile-answers) is asked for again
 * with backoff, TOO_LARGE_READINGS times in all; then it is recorded as unreadable and `afterSkip` decides
 * whether paging goes on after it (true) or stops there (false).
 */
async function* guardedPages<T>(
  io: PageIO,
  current: () => ApiRequest,
  start: () => AsyncIterableIterator<Read<T>>,
  policy: { skipped: { pages: number }; afterSkip: () => boolean },
): AsyncIterableIterator<Read<T>> {
  let tooLarge = 0;
  for (;;) {
    try {
      for await (const page of start()) {
        tooLarge = 0;
        yield page;
      }
      return;
    } catch (err) {
      const received = io.tooLarge(err);
      if (received === undefined) throw io.mapError(err, current());
      if (++tooLarge < TOO_LARGE_READINGS) {
        await wait(io.backoff(tooLarge), undefined, current().signal ? { signal: current().signal } : undefined);
        continue;
      }
      const mapped = io.mapError(err, current()) as Error & { detail?: string };
      await io.report(current(), "", mapped.detail ?? "response too large", {
        dvault_unread: "the body passed the byte cap",
        maxBytes: io.maxBodyBytes,
        received,
      });
      policy.skipped.pages++;
      tooLarge = 0;
      if (!policy.afterSkip()) return;
    }
  }
}

async function* emptyPages<T>(): AsyncIterableIterator<Read<T>> {
  // Nothing to fetch: the start offset is already past the ceiling.
}
