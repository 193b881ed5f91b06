// Full-text search's read model: one query over the tsvector columns the database maintains
// (prisma/migrations/20261122040000_search), ranked, with a snippet and the stored file's path.
import type { Queryable } from "./with-transaction.ts";

export const SEARCH_KINDS = ["deviation", "journal", "literature", "comment", "note", "message"] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

/** Must be the configuration the migration builds every search_tsv with. */
const CONFIG = "english";

export type HitRow = {
  kind: SearchKind;
  id: string;
  title: string | null;
  artist: string | null;
  date: Date | null;
  snippet: string | null;
  deviationid: string | null;
  file_path: string | null;
  rank: number;
  /** How many hits the query has in all (the same on every row). */
  total: number;
};

export type SearchQuery = {
  /** The words as typed (websearch syntax); not empty. */
  text: string;
  kind: SearchKind | null;
  /** Username of the artist, sender or originator, any case; null for anyone. */
  user: string | null;
  limit: number;
  /** Hits to skip (paging); 0 for the first page. */
  offset?: number | undefined;
  /** ts_headline's options (StartSel, StopSel, MaxWords...): how the caller wants matches marked. */
  headlineOptions: string;
};

export class SearchRepository {
  constructor(private readonly db: Queryable) {}

  /** One page of hits, best first, each with its snippet (built for the page only) and stored file. */
  async searchHits(q: SearchQuery): Promise<HitRow[]> {
    const { rows } = await this.db.query<HitRow>(SEARCH_SQL, [q.text, q.kind, q.user, q.limit, q.headlineOptions, q.offset ?? 0]);
    return rows;
  }

  /** How many hits the query has (for a page past the last, whose rows cannot say). */
  async countHits(q: Pick<SearchQuery, "text" | "kind" | "user">): Promise<number> {
    const { rows } = await this.db.query<{ total: number }>(`WITH ${HITS} SELECT count(*)::int AS total FROM hits`, [q.text, q.kind, q.user]);
    return rows[0]?.total ?? 0;
  }

  /** The words of `text` the search configuration drops (stop-words such as "the"): they match nothing. */
  async ignoredWords(text: string): Promise<string[]> {
    const { rows } = await this.db.query<{ word: string }>(
      `SELECT DISTINCT w AS word FROM regexp_split_to_table(lower($1::text), '[^[:alnum:]]+') AS w
       WHERE w <> '' AND numnode(plainto_tsquery('${CONFIG}', w)) = 0 ORDER BY 1`,
      [text],
    );
    return rows.map((r) => r.word);
  }
}

// $1 text, $2 kind or null, $3 username or null, $4 limit, $5 headline options, $6 offset.
// Each branch carries its own kind and user filters, so the planner drops the branches a filter excludes
// (custom plans fold `$2 = 'note'`), and each uses its GIN index. Snippets are built for the page only.
const strip = (expr: string) => `regexp_replace(${expr}, '<[^>]*>', ' ', 'g')`;
const userMatches = (column: string) => `($3::text IS NULL OR lower(${column}) = lower($3::text))`;
const kindIn = (...kinds: SearchKind[]) => `($2::text IS NULL OR $2::text IN (${kinds.map((k) => `'${k}'`).join(", ")}))`;

// The query is written out in each branch rather than taken from a CTE: as an expression of constants it is
// folded before planning, which lets each branch use its GIN index (a CTE column would force seq scans).
const Q = `websearch_to_tsquery('${CONFIG}', $1::text)`;

const HITS = `hits AS (
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
)`;

const SEARCH_SQL = `
WITH ${HITS},
page AS (
  SELECT *, count(*) OVER () AS total FROM hits ORDER BY rank DESC, date DESC NULLS LAST, id LIMIT $4 OFFSET $6
)
SELECT p.kind, p.id, p.title, p.artist, p.date, p.deviationid, p.rank, p.total::int AS total,
  ts_headline('${CONFIG}', ${strip("doc.text")}, ${Q}, $5::text) AS snippet,
  (SELECT dl.path FROM downloads dl
   WHERE dl.deviationid = p.deviationid AND dl.path IS NOT NULL
     AND (dl.status IN ('done', 'degraded') OR (dl.status = 'not_downloadable' AND dl.sha256 IS NOT NULL))
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
