// Full-text search over the archive: the hits of src/db/search.repository.ts (one ranked query over the tsvector
// columns the database maintains), with a cleaned, highlighted snippet and the local file.
import path from "node:path";
import { z } from "zod";
import { SEARCH_KINDS, SearchRepository, type SearchKind } from "../db/search.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";
import { decodeEntities } from "../text/html-to-text.ts";

// The kinds are the repository's (each is a branch of its query); kept importable from here.
export { SEARCH_KINDS, type SearchKind };

/** Wrap the matched words of a snippet (ts_headline's StartSel/StopSel): control characters no text contains. */
export const HIGHLIGHT_START = "\u0002";
export const HIGHLIGHT_END = "\u0003";

export type SearchOptions = {
  text: string;
  type?: SearchKind | undefined;
  /** Username of the artist (deviations, comments), sender (notes) or originator (messages); any case. */
  user?: string | undefined;
  limit?: number | undefined;
  /** DVAULT_ARCHIVE_DIR: relative download paths are resolved against it. */
  archiveDir: string;
};

export const SearchHitSchema = z.object({
  kind: z.enum(SEARCH_KINDS),
  /** The row's id: deviationid, commentid, noteid or messageid. */
  id: z.string(),
  title: z.string().nullable(),
  artist: z.string().nullable(),
  /** ISO time: published, posted or sent. */
  date: z.string().nullable(),
  /** Plain text around the matches, matched words between HIGHLIGHT_START and HIGHLIGHT_END. */
  snippet: z.string(),
  /** The deviation the hit is or is about (a comment's subject, a message's subject), for links. */
  deviationid: z.string().nullable(),
  /** Absolute path of the archived file when the deviation's file is in the archive. */
  localPath: z.string().nullable(),
  rank: z.number(),
});
export type SearchHit = z.infer<typeof SearchHitSchema>;

export const DEFAULT_SEARCH_LIMIT = 20;
export const MAX_SEARCH_LIMIT = 500;

const HEADLINE_OPTIONS = `StartSel=${HIGHLIGHT_START}, StopSel=${HIGHLIGHT_END}, MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "`;

/**
 * One page of hits, the total the query has, and the words it ignored (stop-words such as "the"). With a bound,
 * `total` is at most the bound and `more` says that more hits match: the page ranks the newest `bound` only.
 */
export type SearchPage = { hits: SearchHit[]; total: number; more: boolean; ignored: string[] };

export async function searchPage(
  db: Queryable,
  options: SearchOptions & { offset?: number | undefined; countIgnored?: boolean; bound?: number | undefined },
): Promise<SearchPage> {
  const text = options.text.trim();
  if (!text) return { hits: [], total: 0, more: false, ignored: [] };
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_SEARCH_LIMIT)), MAX_SEARCH_LIMIT);
  const offset = Math.max(0, Math.floor(options.offset ?? 0));
  const repo = new SearchRepository(db);
  const query = { text, kind: options.type ?? null, user: options.user?.trim() || null, bound: options.bound };
  const [rows, ignored] = await Promise.all([
    repo.searchHits({ ...query, limit, offset, headlineOptions: HEADLINE_OPTIONS }),
    options.countIgnored ? repo.ignoredWords(text) : Promise.resolve([]),
  ]);
  const { total, more } = rows[0] ?? (offset > 0 ? await repo.countHits(query) : { total: 0, more: false });
  const hits = rows.map((r) => ({
    kind: r.kind,
    id: r.id,
    title: r.title,
    artist: r.artist,
    date: r.date ? r.date.toISOString() : null,
    snippet: cleanSnippet(r.snippet ?? ""),
    deviationid: r.deviationid,
    localPath: r.file_path ? resolveArchivePath(options.archiveDir, r.file_path) : null,
    rank: Number(r.rank),
  }));
  return { hits, total, more, ignored };
}

/** A download's stored path, absolute. Paths are stored relative to the archive (or absolute). */
export function resolveArchivePath(archiveDir: string, stored: string): string {
  return path.isAbsolute(stored) ? path.normalize(stored) : path.join(archiveDir, stored);
}

/** ts_headline works on the stripped text; decode its entities and squeeze the whitespace (no-break spaces too). */
function cleanSnippet(snippet: string): string {
  return decodeEntities(snippet).replace(/\s+/g, " ").trim();
}

/** Marks matches for a terminal: bold where the output is a TTY, plain otherwise. */
export function highlight(snippet: string, mark: (word: string) => string): string {
  return snippet.replace(new RegExp(`${HIGHLIGHT_START}([^${HIGHLIGHT_END}]*)${HIGHLIGHT_END}`, "g"), (_, word: string) => mark(word));
}
