// The service's two paging styles: offset (`has_more`, `next_offset`, `results`; an effective offset
// ceiling of 10 000, docs/service-behaviour.md#offset-ceiling; pages may come back short,
// #short-pages) and cursor (`has_more`, `next_cursor`; empty cursor at the end, #cursor-end).
import { ERR, json, type Reply } from "./http.ts";
import type { ApiContext } from "./world.ts";

/**
 * The default of SimulatorOptions.offsetCeiling: offsets above it return an empty last page, on every offset
 * listing, folders included (documented 50 000, effective 10 000: docs/service-behaviour.md#offset-ceiling).
 */
export const OFFSET_CEILING = 10_000;
export const OFFSET_DOCUMENTED_MAX = 50_000;

export type OffsetWindow = { offset: number; limit: number };

export function offsetWindow(ctx: ApiContext, maxLimit: number, defaultLimit = Math.min(10, maxLimit)): OffsetWindow | Reply {
  const limit = ctx.params.int("limit");
  const offset = ctx.params.int("offset");
  if (limit === "invalid" || (limit !== undefined && (limit < 1 || limit > maxLimit))) return ERR.limitRange();
  if (offset === "invalid" || (offset !== undefined && (offset < 0 || offset > OFFSET_DOCUMENTED_MAX))) {
    return ERR.validation({ offset: "offset is not within the allowed range" });
  }
  return { offset: offset ?? 0, limit: limit ?? defaultLimit };
}

export function isReply(x: unknown): x is Reply {
  return typeof x === "object" && x !== null && "status" in x;
}

export type OffsetPageOptions<T> = {
  maxLimit: number;
  defaultLimit?: number;
  /** Items dropped from the page after slicing (mature for public tokens, deleted): the page comes back short. */
  keep?: (item: T) => boolean;
  render: (item: T) => unknown;
  itemsKey?: "results" | "thread" | "items";
  extra?: Record<string, unknown>;
  /** Add `has_less`/`prev_offset` (comments). */
  bidirectional?: boolean;
  estimatedTotal?: boolean;
  /** Limits between this and maxLimit are accepted but served as this many (browse endpoints: 24). */
  silentLimitCap?: number;
};

export function offsetPage<T>(ctx: ApiContext, items: readonly T[], options: OffsetPageOptions<T>): Reply {
  const win = offsetWindow(ctx, options.maxLimit, options.defaultLimit);
  if (isReply(win)) return win;
  if (options.silentLimitCap !== undefined && win.limit > options.silentLimitCap) win.limit = options.silentLimitCap;
  const key = options.itemsKey ?? "results";
  const body: Record<string, unknown> = {};
  if (win.offset > ctx.world.offsetCeiling) {
    body.has_more = false;
    body.next_offset = null;
    if (options.bidirectional) {
      body.has_less = false;
      body.prev_offset = null;
    }
    body[key] = [];
    return json(200, { ...body, ...options.extra });
  }
  const slice = items.slice(win.offset, win.offset + win.limit);
  const hasMore = win.offset + win.limit < items.length;
  body.has_more = hasMore;
  body.next_offset = hasMore ? win.offset + win.limit : null;
  if (options.bidirectional) {
    body.has_less = win.offset > 0;
    body.prev_offset = win.offset > 0 ? Math.max(0, win.offset - win.limit) : null;
  }
  if (options.estimatedTotal) body.estimated_total = items.length;
  const kept = options.keep ? slice.filter(options.keep) : slice;
  body[key] = kept.map(options.render);
  return json(200, { ...body, ...options.extra });
}

export function encodeCursor(position: number): string {
  return Buffer.from(`sim:${position}`).toString("base64url");
}

export function decodeCursor(cursor: string): number | undefined {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const m = /^sim:(-?\d+)$/.exec(text);
  return m ? Number(m[1]) : undefined;
}

export type CursorPageOptions<T> = {
  maxLimit: number;
  defaultLimit?: number;
  /** Items newest first, each with a strictly decreasing position key. */
  position: (item: T) => number;
  keep?: (item: T) => boolean;
  render: (item: T) => unknown;
  /** Response field names. */
  style: "profile_posts" | "messages" | "feed";
};

/**
 * Cursor paging over a newest-first list; the cursor names the last position served, so items added
 * at the top while paging never shift later pages. The last page has has_more false and an empty cursor.
 */
export function cursorPage<T>(ctx: ApiContext, items: readonly T[], options: CursorPageOptions<T>): Reply {
  const limitRaw = ctx.params.int("limit");
  if (limitRaw === "invalid" || (limitRaw !== undefined && (limitRaw < 1 || limitRaw > options.maxLimit))) return ERR.limitRange();
  const limit = limitRaw ?? options.defaultLimit ?? Math.min(10, options.maxLimit);
  const cursor = ctx.params.get("cursor");
  let start = 0;
  if (cursor) {
    const after = decodeCursor(cursor);
    if (after === undefined) return ERR.validation({ cursor: "cursor is invalid" });
    start = items.findIndex((item) => options.position(item) < after);
    if (start === -1) start = items.length;
  }
  const slice = items.slice(start, start + limit);
  const hasMore = start + limit < items.length;
  const last = slice[slice.length - 1];
  const next = hasMore && last !== undefined ? encodeCursor(options.position(last)) : "";
  const kept = (options.keep ? slice.filter(options.keep) : slice).map(options.render);
  switch (options.style) {
    case "profile_posts":
      return json(200, { has_more: hasMore, next_cursor: next, prev_cursor: cursor ?? "", results: kept });
    case "messages":
      return json(200, { cursor: next, has_more: hasMore, results: kept });
    case "feed":
      return json(200, { cursor: next, has_more: hasMore, items: kept });
    default: {
      const never: never = options.style;
      throw new Error(`unknown cursor style ${String(never)}`);
    }
  }
}
