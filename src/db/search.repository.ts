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
  /** The account whose note or message it is (null for the other kinds): the rest of its primary key. */
  account_id: Row<"notes">["account_id"] | null;
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
  /** How many hits the query has in all (the same on every row); with a bound, at most the bound. */
  total: number;
  /** With a bound: whether more hits than the bound match (the page ranks only the newest `bound`). */
  more: boolean;
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
  /**
   * Rank only the newest `bound` hits (by date, then id): a common word's million hits are neither ranked nor
   * counted, each kind's newest are read from its date order. Unset: every hit is ranked and counted.
   */
  bound?: number | undefined;
};

export class SearchRepository {
  constructor(private readonly db: Queryable) {}

  /** One page of hits, best first, each with its snippet (built for the page only) and stored file. */
  async searchHits(q: SearchQuery): Promise<HitRow[]> {
    const { rows } = await searchStatement(q).execute(kysely(this.db));
    return rows;
  }

  /** How many hits the query has (for a page past the last, whose rows cannot say). */
  async countHits(q: Pick<SearchQuery, "text" | "kind" | "user" | "bound">): Promise<{ total: number; more: boolean }> {
    const { rows } = await sql<{ total: number; more: boolean }>`WITH hits AS (${hits(q)}), ${newest(q)}
      SELECT count(*) FILTER (WHERE nth <= ${limitOf(q)})::int AS total, count(*) > ${limitOf(q)} AS more FROM newest`.execute(kysely(this.db));
    return rows[0] ?? { total: 0, more: false };
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
function hits(q: Filters & Pick<SearchQuery, "bound">) {
  const Q = tsquery(q);
  // With a bound each kind gives its newest bound + 1 hits (times the accounts: a note or message two accounts hold
  // is a row of each, one hit) in the one order of `newest` below: the newest of their union are then the newest
  // hits of all. Which way they are read depends on how many rows match, which the planner's estimate of a word
  // does not know (a guess of 1 000 read 200 000 messages by date for none): a kind with fewer than FEW_HITS
  // matching rows (counted from its GIN index, at most FEW_HITS) is read whole by that index and sorted; one with
  // more is read in its date order (deviations_browse_idx, notes_reading_idx, messages_reading_idx) up to the
  // bound, where so many match that the walk soon finds enough. The two are exclusive: the other is never run.
  const newestOf = (table: RawBuilder<unknown>, branch: RawBuilder<unknown>) => {
    if (q.bound === undefined) return branch;
    const few = sql`(SELECT count(*) FROM (SELECT 1 FROM ${table} t WHERE t.search_tsv @@ ${Q} LIMIT ${FEW_HITS}) x) < ${FEW_HITS}`;
    return sql`(SELECT * FROM (${branch}) b WHERE ${few})
  UNION ALL
  (SELECT * FROM (${branch}) b WHERE NOT ${few} ORDER BY coalesce(b.date, '-infinity'::timestamptz) DESC, b.id
    LIMIT ${limitOf(q) + 1} * greatest(1, (SELECT count(*) FROM accounts)))`;
  };
  return sql<Pick<HitRow, "kind" | "id" | "title" | "artist" | "date" | "deviationid" | "rank" | "account_id">>`
  ${newestOf(
    sql`deviations`,
    sql`SELECT (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END) AS kind,
    d.deviationid AS id, d.title, u.username AS artist, d.published_at AS date, d.deviationid,
    ts_rank(d.search_tsv, ${Q}) AS rank, NULL::int AS account_id
  FROM deviations d
  LEFT JOIN users u ON u.userid = d.author_userid
  WHERE d.search_tsv @@ ${Q} AND ${kindIn(q, "deviation", "journal", "literature")} AND ${userMatches(q, sql`u.username`)}
    AND (${q.kind}::text IS NULL OR ${q.kind}::text = (CASE d.type WHEN 'journal' THEN 'journal' WHEN 'literature' THEN 'literature' ELSE 'deviation' END))`,
  )}
  UNION ALL
  ${newestOf(
    sql`comments`,
    sql`SELECT 'comment' AS kind, c.commentid AS id, sd.title, u.username AS artist, c.posted_at AS date,
    CASE WHEN c.subject_kind = 'deviation' THEN c.subject_id END AS deviationid,
    ts_rank(c.search_tsv, ${Q}) AS rank, NULL::int AS account_id
  FROM comments c
  LEFT JOIN users u ON u.userid = c.author_userid
  LEFT JOIN deviations sd ON c.subject_kind = 'deviation' AND sd.deviationid = c.subject_id
  WHERE c.search_tsv @@ ${Q} AND ${kindIn(q, "comment")} AND ${userMatches(q, sql`u.username`)}`,
  )}
  UNION ALL
  ${newestOf(
    sql`notes`,
    sql`SELECT 'note' AS kind, n.noteid AS id, n.subject AS title, u.username AS artist, n.ts AS date, NULL::text AS deviationid,
    ts_rank(n.search_tsv, ${Q}) AS rank, n.account_id
  FROM notes n
  LEFT JOIN users u ON u.userid = n.sender_userid
  WHERE n.search_tsv @@ ${Q} AND ${kindIn(q, "note")} AND ${userMatches(q, sql`u.username`)}`,
  )}
  UNION ALL
  ${newestOf(
    sql`messages`,
    sql`SELECT 'message' AS kind, m.messageid AS id, coalesce(md.title, m.type) AS title, u.username AS artist, m.ts AS date,
    m.subject_deviationid AS deviationid,
    ts_rank(m.search_tsv, ${Q}) AS rank, m.account_id
  FROM messages m
  LEFT JOIN users u ON u.userid = m.originator_userid
  LEFT JOIN deviations md ON md.deviationid = m.subject_deviationid
  WHERE m.search_tsv @@ ${Q} AND ${kindIn(q, "message")} AND ${userMatches(q, sql`u.username`)}`,
  )}`;
}

/** Below this many matching rows a kind's hits are read whole by its GIN index (see hits). */
const FEW_HITS = 10_000;

/** The largest bound a statement is written with: no bound at all reads as this. */
const UNBOUNDED = 2_000_000_000;
const limitOf = (q: Pick<SearchQuery, "bound">) => Math.min(UNBOUNDED - 1, Math.max(1, Math.floor(q.bound ?? UNBOUNDED - 1)));

/**
 * `newest`: the hits, one per kind and id (a note or message two accounts hold: the lowest account's row), numbered
 * newest first (nth), at most one past the bound, so a page can say there were more.
 */
function newest(q: Pick<SearchQuery, "bound">) {
  return sql`one AS (SELECT DISTINCT ON (kind, id) * FROM hits ORDER BY kind, id, account_id),
newest AS (
  SELECT *, row_number() OVER (ORDER BY coalesce(date, '-infinity'::timestamptz) DESC, id) AS nth FROM one
  ORDER BY coalesce(date, '-infinity'::timestamptz) DESC, id LIMIT ${limitOf(q) + 1})`;
}

/** One page of hits with their snippets and stored files (one statement: the page is ranked, then dressed). */
function searchStatement(q: SearchQuery) {
  return sql<HitRow>`
WITH hits AS (${hits(q)}), ${newest(q)},
page AS (
  SELECT *, count(*) OVER () AS total FROM newest WHERE nth <= ${limitOf(q)}
  ORDER BY rank DESC, date DESC NULLS LAST, id LIMIT ${q.limit} OFFSET ${q.offset ?? 0}
)
SELECT p.kind, p.id, p.title, p.artist, p.date, p.deviationid, p.rank, p.account_id, p.total::int AS total,
  (SELECT count(*) FROM newest) > ${limitOf(q)} AS more,
  ts_headline(${config}, ${strip(sql`doc.text`)}, ${tsquery(q)}, ${q.headlineOptions}::text) AS snippet,
  (SELECT dl.path FROM downloads dl
   WHERE dl.deviationid = p.deviationid AND dl.path IS NOT NULL
     AND (dl.status IN ('done', 'degraded') OR (dl.status = 'not_downloadable' AND dl.sha256 IS NOT NULL))
   ORDER BY (dl.kind = 'original') DESC, dl.updated_at DESC LIMIT 1) AS file_path
FROM page p
CROSS JOIN LATERAL (
  SELECT CASE p.kind
    WHEN 'comment' THEN (SELECT c.body FROM comments c WHERE c.commentid = p.id)
    WHEN 'note' THEN (SELECT coalesce(n.body, n.preview) FROM notes n WHERE n.account_id = p.account_id AND n.noteid = p.id)
    WHEN 'message' THEN (SELECT m.html FROM messages m WHERE m.account_id = p.account_id AND m.messageid = p.id)
    ELSE (SELECT concat_ws(' — ', coalesce(t.html, t.excerpt), md.description, array_to_string(md.tags, ' '), d.title)
          FROM deviations d
          LEFT JOIN deviation_texts t ON t.deviationid = d.deviationid
          LEFT JOIN deviation_metadata md ON md.deviationid = d.deviationid
          WHERE d.deviationid = p.id)
  END AS text
) doc
ORDER BY p.rank DESC, p.date DESC NULLS LAST, p.id`;
}
