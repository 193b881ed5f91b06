// Reading one page tolerantly (docs/service-behaviour.md#tolerant-reading): the items array under any known
// key, paging fields as numbers or numeric strings, each item on its own, and what the iterators need from
// the HTTP layer to fetch it.
import type { Got, OptionsInit, Response } from "got";
import type { z } from "zod";
import type { ApiRequest, Page } from "../transport.ts";

/** What the iterators need from the HTTP layer (src/api/http.ts provides it). */
export type PageIO = {
  client: Got;
  relativePath(req: ApiRequest): string;
  gotOptions(req: ApiRequest): OptionsInit;
  /** A fresh per-call state for each page, so retry counters and the one-refresh rule apply per page. */
  freshContext(req: ApiRequest): Record<string, unknown>;
  /** The body as JSON; a body that is not JSON (a truncated answer) throws a transient malformed error. */
  readJson(response: Response, req: ApiRequest): unknown;
  /** Records what could not be read (docs/service-behaviour.md#tolerant-reading). */
  report(req: ApiRequest, subject: string, detail: string, raw: unknown): Promise<void>;
  /** A request the body guard cancelled, as the error of what tripped (src/api/body-guard.ts); others unchanged. */
  mapError(err: unknown, req: ApiRequest): Error;
  /** When the error is an answer that passed the byte cap: the bytes received when it was cut off. */
  tooLarge(err: unknown): number | undefined;
  /** The wait before the n-th (1-based) retry. */
  backoff(n: number): number;
  maxBodyBytes: number;
};

/** Array keys listings are known to use; the declared one is tried first. */
const ITEM_KEYS = ["results", "items", "thread"] as const;

/** A page whose envelope could not be read: not yielded; retried once, then recorded and skipped. */
export type Unreadable = { unreadable: string; raw: unknown };
export type Read<T> = Page<T> | Unreadable;

export const isUnreadable = (page: object): page is Unreadable => "unreadable" in page;

/** true/false, also sent as "true"/"1"/1; undefined for anything else. */
export function looseBool(value: unknown): boolean | undefined {
  if (typeof value === "boolean") return value;
  if (value === 1 || value === "1" || value === "true") return true;
  if (value === 0 || value === "0" || value === "false") return false;
  return undefined;
}

/** An integer, also sent as a numeric string; null for null/absent/""; undefined for anything else. */
export function looseInt(value: unknown): number | null | undefined {
  if (value === null || value === undefined || value === "") return null;
  const n = typeof value === "string" && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) ? n : undefined;
}

/** The stable name of an item for the unreadable record: its id field, else its index in the page. */
export function subjectOf(item: unknown, index: number): string {
  if (item && typeof item === "object") {
    const o = item as Record<string, unknown>;
    for (const key of ["deviationid", "noteid", "messageid", "commentid", "folderid", "statusid", "bucketid", "userid"]) {
      if (typeof o[key] === "string" && o[key]) return `item ${key}=${o[key] as string}`;
    }
    const user = o.user as Record<string, unknown> | undefined;
    if (user && typeof user.userid === "string") return `item user.userid=${user.userid}`;
  }
  return `item #${index}`;
}

export function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue && issue.path.length > 0 ? issue.path.map(String).join(".") : "(item)";
  return `unexpected shape at ${where}: ${issue?.message ?? "schema mismatch"}`;
}

export type Envelope = { items: unknown[]; hasMore: boolean | undefined; nextOffset: number | null; nextCursor: string | null };

/** The paging envelope of a page body, or the reason it cannot be read. */
export function readEnvelope(body: unknown, itemsKey: string): Envelope | string {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return "the page is not a JSON object";
  const o = body as Record<string, unknown>;
  const key = [itemsKey, ...ITEM_KEYS].find((k) => Array.isArray(o[k]));
  if (key === undefined) return `the page has no array of items (looked for ${[...new Set([itemsKey, ...ITEM_KEYS])].join(", ")})`;
  const hasMore = looseBool(o.has_more);
  if (o.has_more !== undefined && o.has_more !== null && hasMore === undefined) return `has_more is not a boolean (${JSON.stringify(o.has_more)})`;
  const nextOffset = looseInt(o.next_offset);
  if (nextOffset === undefined) return `next_offset is not a number (${JSON.stringify(o.next_offset)})`;
  const cursor = o.next_cursor ?? o.cursor;
  if (cursor !== undefined && cursor !== null && typeof cursor !== "string") return `the cursor is not a string (${JSON.stringify(cursor)})`;
  return { items: o[key] as unknown[], hasMore, nextOffset, nextCursor: (cursor as string | null | undefined) ?? null };
}

/** Each item on its own: the readable ones, in order; the others recorded and counted. */
export async function readItems<S extends z.ZodType>(io: PageIO, req: ApiRequest, schema: S, items: unknown[], skipped: { items: number }) {
  const out: z.infer<S>[] = [];
  for (const [index, item] of items.entries()) {
    const parsed = schema.safeParse(item);
    if (parsed.success) {
      out.push(parsed.data);
      continue;
    }
    skipped.items++;
    await io.report(req, subjectOf(item, index), issueText(parsed.error), item);
  }
  return out;
}
