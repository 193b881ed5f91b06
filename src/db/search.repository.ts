// Full-text search's read model: one query over the tsvector columns the database maintains
// (prisma/migrations/20261122040000_search), ranked, with a snippet and the stored file's path.
import { kysely, type RawBuilder, sql } from "./kysely.ts";
import type { Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export const SEARCH_KINDS = ["deviation", "journal", "literature", "comment", "note", "message"] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

/** Must be the configuration the migration builds every search_tsv with. */
const CONFIG = "english";

type Deviation = Row<"deviations">;

/** A hit, typed from the columns each branch of the statement below reads. */
export type HitRow = {
  kind: SearchKind;
  id: Deviation["deviationid"] | Row<"comments">["commentid"] | Row<"notes">["noteid"] | Row<"messages">["messageid"];
  title: Deviation["title"] | Row<"notes">["subject"] | Row<"messages">["type"];
  artist: Row<"users">["username"] | null;
  date: Deviation["published_at"] | Row<"comments">["posted_at"] | Row<"notes">["ts"] | Row<"messages">["ts"];
  /** ts_headline's marked excerpt of the hit's text. */
  snippet: string | null;
  deviationid: Deviation["deviationid"] | null;
  file_path: Row<"downloads">["path"];
  /** ts_rank (real). */
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
    const { rows } = await searchStatement(q).execute(kysely(this.db));
    return rows;
  }

  /** How many hits the query has (for a page past the last, whose rows cannot say). */
  async countHits(q: Pick<SearchQuery, "text" | "kind" | "user">): Promise<number> {
    const { rows } = await sql<{ total: number }>`WITH hits AS (${hits(q)}) SELECT count(*)::int AS total FROM hits`.execute(kysely(this.db));
    return rows[0]?.total ?? 0;
  }

  /** The words of `text` the search configuration drops (stop-words such as "the"): they match nothing. */
  async ignoredWords(text: string): Promise<string[]> {
    const rows = await kysely(this.db)
      .selectFrom(sql<{ w: string }>`regexp_split_to_table(lower(${text}::text), '[^[:alnum:]]+')`.as("w"))
      .select("w.w as word")
      .distinct()
      .where("w.w", "<>", sql.lit(""))
      .where(sql`numnode(plainto_tsquery(${config}, w))`, "=", sql.lit(0))
      .orderBy(sql.lit(1))
      .execute();
    return rows.map((r) => r.word);
  }
}

// Each branch carries its own kind and user filters, so the planner drops the branches a filter excludes
// (custom plans fold `kind = 'note'`), and each uses its GIN index. Snippets are built for the page only.
const config = sql.lit(CONFIG);
const strip = (expr: RawBuilder<unknown>) => sql`regexp_replace(${expr}, '<[^>]*>', ' ', 'g')`;
type Filters = Pick<SearchQuery, "text" | "kind" | "user">;
const userMatches = (q: Filters, column: RawBuilder<unknown>) => sql`(${q.user}::text IS NULL OR lower(${column}) = lower(${q.user}::text))`;
const kindIn = (q: Filters, ...kinds: SearchKind[]) => sql`(${q.kind}::text IS NULL OR ${q.kind}::text IN (${sql.join(kinds.map((k) => sql.lit(k)))}))`;

// The query is written out in each branch rather than taken from a CTE: as an expression of constants it is
// folded before planning, which lets each branch use its GIN index (a CTE column would force seq scans).
const tsquery = (q: Filters) => sql`websearch_to_tsquery(${config}, ${q.text}::text)`;

/** The hits of every kind, unranked and without snippets: the CTE both statements read. */
function hits(q: Filters) {
  const Q = tsquery(q);
  return sql<Pick<HitRow, "kind" | "id" | "title" | "artist" | "date" | "deviationid" | "rank">>`
  SELECT (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END) AS kind,
    d.deviationid AS id, d.title, u.username AS artist, d.published_at AS date, d.deviationid,
    ts_rank(d.search_tsv, ${Q}) AS rank
  FROM deviations d
  LEFT JOIN users u ON u.userid = d.author_userid
  WHERE d.search_tsv @@ ${Q} AND ${kindIn(q, "deviation", "journal", "literature")} AND ${userMatches(q, sql`u.username`)}
    AND (${q.kind}::text IS NULL OR ${q.kind}::text = (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END))
  UNION ALL
  SELECT 'comment', c.commentid, sd.title, u.username, c.posted_at,
    CASE WHEN c.subject_kind = 'deviation' THEN c.subject_id END,
    ts_rank(c.search_tsv, ${Q})
  FROM comments c
  LEFT JOIN users u ON u.userid = c.author_userid
  LEFT JOIN deviations sd ON c.subject_kind = 'deviation' AND sd.deviationid = c.subject_id
  WHERE c.search_tsv @@ ${Q} AND ${kindIn(q, "comment")} AND ${userMatches(q, sql`u.username`)}
  UNION ALL
  SELECT DISTINCT ON (n.noteid) 'note', n.noteid, n.subject, u.username, n.ts, NULL::text,
    ts_rank(n.search_tsv, ${Q})
  FROM notes n
  LEFT JOIN users u ON u.userid = n.sender_userid
  WHERE n.search_tsv @@ ${Q} AND ${kindIn(q, "note")} AND ${userMatches(q, sql`u.username`)}
  UNION ALL
  SELECT DISTINCT ON (m.messageid) 'message', m.messageid, coalesce(md.title, m.type), u.username, m.ts, m.subject_deviationid,
    ts_rank(m.search_tsv, ${Q})
  FROM messages m
  LEFT JOIN users u ON u.userid = m.originator_userid
  LEFT JOIN deviations md ON md.deviationid = m.subject_deviationid
  WHERE m.search_tsv @@ ${Q} AND ${kindIn(q, "message")} AND ${userMatches(q, sql`u.username`)}`;
}

/** One page of hits with their snippets and stored files (one statement: the page is ranked, then dressed). */
function searchStatement(q: SearchQuery) {
  return sql<HitRow>`
WITH hits AS (${hits(q)}),
page AS (
  SELECT *, count(*) OVER () AS total FROM hits ORDER BY rank DESC, date DESC NULLS LAST, id LIMIT ${q.limit} OFFSET ${q.offset ?? 0}
)
SELECT p.kind, p.id, p.title, p.artist, p.date, p.deviationid, p.rank, p.total::int AS total,
  ts_headline(${config}, ${strip(sql`doc.text`)}, ${tsquery(q)}, ${q.headlineOptions}::text) AS snippet,
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
}
