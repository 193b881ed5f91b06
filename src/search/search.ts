// Full-text search over the archive: one query over the tsvector columns the database maintains
// (prisma/migrations/20261122040000_search), ranked, with a highlighted snippet and the local file.
import path from "node:path";
import { z } from "zod";
import type { Queryable } from "../db/with-transaction.ts";

export const SEARCH_KINDS = ["deviation", "journal", "literature", "comment", "note", "message"] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

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

/** Must be the configuration the migration builds every search_tsv with. */
const CONFIG = "english";
const HEADLINE_OPTIONS = `StartSel=${HIGHLIGHT_START}, StopSel=${HIGHLIGHT_END}, MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "`;

type HitRow = {
  kind: SearchKind;
  id: string;
  title: string | null;
  artist: string | null;
  date: Date | null;
  snippet: string | null;
  deviationid: string | null;
  file_path: string | null;
  rank: number;
};

/** Searches everything the archive holds; an empty or stop-word-only query finds nothing. */
export async function searchArchive(db: Queryable, options: SearchOptions): Promise<SearchHit[]> {
  const text = options.text.trim();
  if (!text) return [];
  const limit = Math.min(Math.max(1, Math.floor(options.limit ?? DEFAULT_SEARCH_LIMIT)), MAX_SEARCH_LIMIT);
  const { rows } = await db.query<HitRow>(SEARCH_SQL, [text, options.type ?? null, options.user?.trim() || null, limit, HEADLINE_OPTIONS]);
  return rows.map((r) => ({
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
}

/** A download's stored path, absolute. Paths are stored relative to the archive (or absolute). */
export function resolveArchivePath(archiveDir: string, stored: string): string {
  return path.isAbsolute(stored) ? path.normalize(stored) : path.join(archiveDir, stored);
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", "#39": "'" };

/** ts_headline works on the stripped text; decode the common entities and squeeze the whitespace. */
function cleanSnippet(snippet: string): string {
  return snippet
    .replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, (whole, name: string) => {
      const known = ENTITIES[name.toLowerCase()];
      if (known) return known;
      const code = name.startsWith("#x") || name.startsWith("#X") ? parseInt(name.slice(2), 16) : name.startsWith("#") ? parseInt(name.slice(1), 10) : NaN;
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : whole;
    })
    .replace(/\s+/g, " ")
    .trim();
}

/** Marks matches for a terminal: bold where the output is a TTY, plain otherwise. */
export function highlight(snippet: string, mark: (word: string) => string): string {
  return snippet.replace(new RegExp(`${HIGHLIGHT_START}([^${HIGHLIGHT_END}]*)${HIGHLIGHT_END}`, "g"), (_, word: string) => mark(word));
}

// $1 text, $2 kind or null, $3 username or null, $4 limit, $5 headline options.
// Each branch carries its own kind and user filters, so the planner drops the branches a filter excludes
// (custom plans fold `$2 = 'note'`), and each uses its GIN index. Snippets are built for the page only.
const strip = (expr: string) => `regexp_replace(${expr}, '<[^>]*>', ' ', 'g')`;
const userMatches = (column: string) => `($3::text IS NULL OR lower(${column}) = lower($3::text))`;
const kindIn = (...kinds: SearchKind[]) => `($2::text IS NULL OR $2::text IN (${kinds.map((k) => `'${k}'`).join(", ")}))`;

// The query is written out in each branch rather than taken from a CTE: as an expression of constants it is
// folded before planning, which lets each branch use its GIN index (a CTE column would force seq scans).
const Q = `websearch_to_tsquery('${CONFIG}', $1::text)`;

const SEARCH_SQL = `
WITH hits AS (
  SELECT (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END) AS kind,
    d.deviationid AS id, d.title, u.username AS artist, d.published_at AS date, d.deviationid,
    ts_rank(d.search_tsv, ${Q}) AS rank
  FROM deviations d
  LEFT JOIN users u ON u.userid = d.author_userid
  WHERE d.search_tsv @@ ${Q} AND ${kindIn("deviation", "journal", "literature")} AND ${userMatches("u.username")}
    AND ($2::text IS NULL OR $2::text = (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END))
  UNION ALL
  SELECT 'comment', c.commentid, sd.title, u.username, c.posted_at,
    CASE WHEN c.subject_kind = 'deviation' THEN c.subject_id END,
    ts_rank(c.search_tsv, ${Q})
  FROM comments c
  LEFT JOIN users u ON u.userid = c.author_userid
  LEFT JOIN deviations sd ON c.subject_kind = 'deviation' AND sd.deviationid = c.subject_id
  WHERE c.search_tsv @@ ${Q} AND ${kindIn("comment")} AND ${userMatches("u.username")}
  UNION ALL
  SELECT DISTINCT ON (n.noteid) 'note', n.noteid, n.subject, u.username, n.ts, NULL::text,
    ts_rank(n.search_tsv, ${Q})
  FROM notes n
  LEFT JOIN users u ON u.userid = n.sender_userid
  WHERE n.search_tsv @@ ${Q} AND ${kindIn("note")} AND ${userMatches("u.username")}
  UNION ALL
  SELECT DISTINCT ON (m.messageid) 'message', m.messageid, coalesce(md.title, m.type), u.username, m.ts, m.subject_deviationid,
    ts_rank(m.search_tsv, ${Q})
  FROM messages m
  LEFT JOIN users u ON u.userid = m.originator_userid
  LEFT JOIN deviations md ON md.deviationid = m.subject_deviationid
  WHERE m.search_tsv @@ ${Q} AND ${kindIn("message")} AND ${userMatches("u.username")}
),
page AS (
  SELECT * FROM hits ORDER BY rank DESC, date DESC NULLS LAST, id LIMIT $4
)
SELECT p.kind, p.id, p.title, p.artist, p.date, p.deviationid, p.rank,
  ts_headline('${CONFIG}', ${strip("doc.text")}, ${Q}, $5::text) AS snippet,
  (SELECT dl.path FROM downloads dl
   WHERE dl.deviationid = p.deviationid AND dl.status IN ('done', 'degraded') AND dl.path IS NOT NULL
   ORDER BY (dl.kind = 'original') DESC, dl.updated_at DESC LIMIT 1) AS file_path
FROM page p
CROSS JOIN LATERAL (
  SELECT CASE p.kind
    WHEN 'comment' THEN (SELECT c.body FROM comments c WHERE c.commentid = p.id)
    WHEN 'note' THEN (SELECT coalesce(n.body, n.preview) FROM notes n WHERE n.noteid = p.id LIMIT 1)
    WHEN 'message' THEN (SELECT m.html FROM messages m WHERE m.messageid = p.id LIMIT 1)
    ELSE (SELECT concat_ws(' — ', coalesce(t.html, t.excerpt), md.description, array_to_string(md.tags, ' '), d.title)
          FROM deviations d
          LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
          LEFT JOIN deviation_metadata md ON md.deviationid = d.deviationid
          WHERE d.deviationid = p.id)
  END AS text
) doc
ORDER BY p.rank DESC, p.date DESC NULLS LAST, p.id`;
