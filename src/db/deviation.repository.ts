// Deviations, their metadata and their text: set-based page writes (one statement per table per page)
// that detect edits of title, description and tags in the same statement and keep the old values.
import type { DeviationContentInput, DeviationInput, MetadataInput } from "./mirror-input.ts";
import { kysely, sql } from "./kysely.ts";
import { deviationType, epochTime, sortedTags, STATS_DUE, uniqueBy, type RemovedReason, type UpsertCounts } from "./mirror-rows.ts";
import { recordset, upsertPage } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

/**
 * A work the service answered as gone: `deleted` when the answer says not found, `unavailable` for any other
 * refusal; `answer` is what it said (status, error, error_code, error_description; or the is_deleted stub).
 */
export type GoneDeviation = { deviationid: string; reason: Extract<RemovedReason, "deleted" | "unavailable">; answer: Record<string, unknown> };

/** Upsert counts of deviations; `removed` counts known deviations that the page reports deleted. */
export type DeviationCounts = UpsertCounts & { removed: number };

/** The text of a journal or literature deviation: /deviation/content's answer and the excerpt, if known. */
export type DeviationTextInput = {
  deviationid: string;
  content?: DeviationContentInput | null;
  excerpt?: string | null;
};

export class DeviationRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Inserts or refreshes deviations seen at `seenAt`. A title edit writes one deviation_history row; URLs,
   * counters and the raw JSON are refreshed silently (counters at most once a day). A tombstone
   * (`is_deleted`, nothing else) keeps every archived value and sets removed_at / 'deleted'. Authors are
   * not written here: upsert them first (UserRepository.upsertUsers(distinctUsers(...))).
   */
  async upsertDeviations(deviations: readonly DeviationInput[], seenAt: Date): Promise<DeviationCounts> {
    const rows = uniqueBy(deviations, (d) => d.deviationid).map(deviationRow);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0, removed: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`deviationid text, is_deleted boolean, printid text, url text, title text, author_userid text, published_at timestamptz, type deviation_type, is_mature boolean, is_downloadable boolean, download_filesize bigint, is_favourited boolean, stats_favourites integer, stats_comments integer, tier_access text, premium jsonb, raw jsonb`,
      before: sql`
        old AS (
          SELECT d.deviationid, d.title, d.removed_reason FROM deviations d JOIN input USING (deviationid)
        ), history AS (
          INSERT INTO deviation_history (deviationid, changed_at, field, old_value, new_value)
          SELECT i.deviationid, ${seenAt}, 'title', to_jsonb(o.title), to_jsonb(i.title)
          FROM input i JOIN old o USING (deviationid)
          WHERE i.title IS NOT NULL AND o.title IS NOT NULL AND i.title <> o.title
        )`,
      upsert: sql`
        INSERT INTO deviations AS d (deviationid, url, title, author_userid, published_at, type, is_mature,
          is_downloadable, download_filesize, is_deleted, is_favourited, stats_favourites, stats_comments,
          stats_sampled_at, tier_access, premium, printid, raw, first_seen_at, last_seen_at, removed_at, removed_reason)
        SELECT deviationid, url, title, author_userid, published_at, type, is_mature,
          is_downloadable, download_filesize, is_deleted, is_favourited, stats_favourites, stats_comments,
          CASE WHEN stats_favourites IS NOT NULL OR stats_comments IS NOT NULL THEN ${seenAt}::timestamptz END,
          tier_access, premium, printid, raw, ${seenAt}, ${seenAt},
          CASE WHEN is_deleted THEN ${seenAt}::timestamptz END, CASE WHEN is_deleted THEN 'deleted'::removed_reason END
        FROM input ORDER BY deviationid
        ON CONFLICT (deviationid) DO UPDATE SET
          url = COALESCE(EXCLUDED.url, d.url),
          title = COALESCE(EXCLUDED.title, d.title),
          author_userid = COALESCE(EXCLUDED.author_userid, d.author_userid),
          published_at = COALESCE(EXCLUDED.published_at, d.published_at),
          type = COALESCE(EXCLUDED.type, d.type),
          is_mature = COALESCE(EXCLUDED.is_mature, d.is_mature),
          is_downloadable = COALESCE(EXCLUDED.is_downloadable, d.is_downloadable),
          download_filesize = COALESCE(EXCLUDED.download_filesize, d.download_filesize),
          is_deleted = EXCLUDED.is_deleted,
          is_favourited = COALESCE(EXCLUDED.is_favourited, d.is_favourited),
          stats_favourites = CASE WHEN ${STATS_DUE("d")} THEN COALESCE(EXCLUDED.stats_favourites, d.stats_favourites)
                                  ELSE COALESCE(d.stats_favourites, EXCLUDED.stats_favourites) END,
          stats_comments = CASE WHEN ${STATS_DUE("d")} THEN COALESCE(EXCLUDED.stats_comments, d.stats_comments)
                                ELSE COALESCE(d.stats_comments, EXCLUDED.stats_comments) END,
          stats_sampled_at = CASE WHEN ${STATS_DUE("d")} THEN EXCLUDED.stats_sampled_at ELSE d.stats_sampled_at END,
          tier_access = CASE WHEN EXCLUDED.is_deleted THEN d.tier_access ELSE EXCLUDED.tier_access END,
          premium = CASE WHEN EXCLUDED.is_deleted THEN d.premium ELSE EXCLUDED.premium END,
          printid = COALESCE(EXCLUDED.printid, d.printid),
          raw = CASE WHEN EXCLUDED.is_deleted THEN d.raw || EXCLUDED.raw ELSE EXCLUDED.raw END,
          last_seen_at = GREATEST(d.last_seen_at, EXCLUDED.last_seen_at),
          removed_at = CASE WHEN EXCLUDED.is_deleted
                            THEN CASE WHEN d.removed_reason = 'deleted' THEN d.removed_at ELSE EXCLUDED.removed_at END END,
          removed_reason = EXCLUDED.removed_reason,
          removed_answer = CASE WHEN EXCLUDED.is_deleted AND d.removed_reason = 'deleted' THEN d.removed_answer END
        RETURNING d.deviationid, (d.xmax = 0) AS inserted`,
      using: ["deviationid"],
      changed: sql`NOT i.is_deleted AND ((i.title IS NOT NULL AND o.title IS NOT NULL AND i.title <> o.title) OR o.removed_reason IS NOT NULL)`,
      also: {
        removed: sql`i.is_deleted AND o.removed_reason IS DISTINCT FROM 'deleted'`,
      },
    });
  }

  /**
   * Inserts or refreshes /deviation/metadata answers. Description and tag edits write deviation_history
   * rows (descriptions compared without the tokens of signed URLs); stats are sampled at most daily.
   * The deviations must exist (upsertDeviations first): a foreign key says so.
   */
  async upsertMetadata(metadata: readonly MetadataInput[], fetchedAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(metadata, (m) => m.deviationid).map(metadataRow);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`deviationid text, description text, license text, tags text[], mature_level text, mature_classification text[], allows_comments boolean, submission jsonb, camera jsonb, stats jsonb, raw jsonb`,
      before: sql`
        old AS (
          SELECT m.deviationid, m.description, m.tags FROM deviation_metadata m JOIN input USING (deviationid)
        ), changes AS (
          SELECT i.deviationid, f.field, f.old_value, f.new_value
          FROM input i JOIN old o USING (deviationid)
          CROSS JOIN LATERAL (VALUES
            ('description'::deviation_field, to_jsonb(o.description), to_jsonb(i.description),
              i.description IS NOT NULL AND o.description IS NOT NULL
              AND mirror_unsigned(i.description) <> mirror_unsigned(o.description)),
            ('tags'::deviation_field, to_jsonb(o.tags), to_jsonb(i.tags),
              i.tags IS NOT NULL AND o.tags IS NOT NULL AND i.tags <> o.tags)
          ) AS f(field, old_value, new_value, changed)
          WHERE f.changed
        ), history AS (
          INSERT INTO deviation_history (deviationid, changed_at, field, old_value, new_value)
          SELECT deviationid, ${fetchedAt}, field, old_value, new_value FROM changes
        )`,
      upsert: sql`
        INSERT INTO deviation_metadata AS m (deviationid, description, license, tags, mature_level,
          mature_classification, allows_comments, submission, camera, stats, stats_sampled_at, raw, first_seen_at, fetched_at)
        SELECT deviationid, description, license, tags, mature_level, mature_classification, allows_comments, submission, camera, stats,
          CASE WHEN stats IS NOT NULL THEN ${fetchedAt}::timestamptz END, raw, ${fetchedAt}, ${fetchedAt}
        FROM input ORDER BY deviationid
        ON CONFLICT (deviationid) DO UPDATE SET
          description = COALESCE(EXCLUDED.description, m.description),
          license = COALESCE(EXCLUDED.license, m.license),
          tags = COALESCE(EXCLUDED.tags, m.tags),
          mature_level = COALESCE(EXCLUDED.mature_level, m.mature_level),
          mature_classification = COALESCE(EXCLUDED.mature_classification, m.mature_classification),
          allows_comments = COALESCE(EXCLUDED.allows_comments, m.allows_comments),
          submission = COALESCE(EXCLUDED.submission, m.submission),
          camera = COALESCE(EXCLUDED.camera, m.camera),
          stats = CASE WHEN ${STATS_DUE("m")} THEN EXCLUDED.stats ELSE COALESCE(m.stats, EXCLUDED.stats) END,
          stats_sampled_at = CASE WHEN ${STATS_DUE("m")} THEN EXCLUDED.stats_sampled_at ELSE m.stats_sampled_at END,
          raw = EXCLUDED.raw,
          fetched_at = GREATEST(m.fetched_at, EXCLUDED.fetched_at)
        RETURNING m.deviationid, (m.xmax = 0) AS inserted`,
      using: [],
      changed: sql`EXISTS (SELECT 1 FROM changes c WHERE c.deviationid = u.deviationid)`,
    });
  }

  /**
   * Records fetched texts. An empty answer (no html, or only whitespace) is recorded as empty
   * (last_empty_at) and never replaces a body received earlier; `changed` counts bodies that differ.
   */
  async upsertTexts(texts: readonly DeviationTextInput[], fetchedAt: Date): Promise<UpsertCounts> {
    const rows = uniqueBy(texts, (t) => t.deviationid).map(textRow);
    if (rows.length === 0) return { inserted: 0, changed: 0, unchanged: 0 };
    return upsertPage(this.db, {
      rows,
      columns: sql`deviationid text, html text, css text, css_fonts jsonb, excerpt text`,
      before: sql`
        old AS (
          SELECT t.deviationid, t.html FROM deviation_texts t JOIN input USING (deviationid)
        )`,
      upsert: sql`
        INSERT INTO deviation_texts AS t (deviationid, html, css, css_fonts, excerpt, is_empty, body_fetched_at,
          last_empty_at, first_seen_at, fetched_at)
        SELECT deviationid, html, css, css_fonts, excerpt, html IS NULL,
          CASE WHEN html IS NOT NULL THEN ${fetchedAt}::timestamptz END, CASE WHEN html IS NULL THEN ${fetchedAt}::timestamptz END, ${fetchedAt}, ${fetchedAt}
        FROM input ORDER BY deviationid
        ON CONFLICT (deviationid) DO UPDATE SET
          html = COALESCE(EXCLUDED.html, t.html),
          css = CASE WHEN EXCLUDED.html IS NULL THEN t.css ELSE EXCLUDED.css END,
          css_fonts = CASE WHEN EXCLUDED.html IS NULL THEN t.css_fonts ELSE EXCLUDED.css_fonts END,
          excerpt = COALESCE(EXCLUDED.excerpt, t.excerpt),
          is_empty = EXCLUDED.html IS NULL AND t.html IS NULL,
          body_fetched_at = COALESCE(EXCLUDED.body_fetched_at, t.body_fetched_at),
          last_empty_at = COALESCE(EXCLUDED.last_empty_at, t.last_empty_at),
          fetched_at = GREATEST(t.fetched_at, EXCLUDED.fetched_at)
        RETURNING t.deviationid, (t.xmax = 0) AS inserted`,
      after: sql`
        upgrade AS (
          -- A text saved from its excerpt alone (its download ran before /deviation/content was fetched, or the
          -- service gave no body then) is wanted again once the full body is here: the next run replaces it.
          UPDATE downloads d SET status = 'wanted', next_attempt_at = NULL, queued_at = NULL, updated_at = ${fetchedAt}
          FROM input i
          WHERE d.deviationid = i.deviationid AND d.kind = 'text' AND d.status = 'done' AND d.is_partial AND i.html IS NOT NULL
        )`,
      using: ["deviationid"],
      changed: sql`i.html IS NOT NULL AND o.html IS DISTINCT FROM i.html`,
    });
  }

  /**
   * Marks works the service answered as gone (docs/service-behaviour.md#deleted-deviation-lookup) removed,
   * with the reason and the answer itself, keeping every archived value; their folder memberships are
   * removed with the same reason (those already found missing from their folder get the reason too).
   * Rows already removed keep their first removal. Returns how many works were marked.
   */
  async markDeviationsGone(gone: readonly GoneDeviation[], at: Date): Promise<number> {
    const rows = uniqueBy(gone, (g) => g.deviationid);
    if (rows.length === 0) return 0;
    const { rows: result } = await sql<{ marked: number }>`
      WITH input AS (
        SELECT * FROM ${recordset(rows, sql`deviationid text, reason removed_reason, answer jsonb`)}
      ), marked AS (
        UPDATE deviations d SET removed_at = ${at}, removed_reason = i.reason, removed_answer = i.answer,
          is_deleted = d.is_deleted OR i.reason = 'deleted'
        FROM input i WHERE d.deviationid = i.deviationid AND d.removed_at IS NULL
        RETURNING d.deviationid, i.reason
      ), members AS (
        -- A membership the walk already found missing from its folder keeps when, and now says why.
        UPDATE folder_members m SET removed_at = COALESCE(m.removed_at, ${at}), removed_reason = k.reason
        FROM marked k WHERE m.deviationid = k.deviationid AND (m.removed_at IS NULL OR m.removed_reason = 'gone_from_listing')
      )
      SELECT count(*)::int AS marked FROM marked`.execute(kysely(this.db));
    return result[0]?.marked ?? 0;
  }

  /** The archived authors of these deviations (those with one), for asking whether an author is still there. */
  async findAuthors(deviationids: readonly string[]): Promise<Array<{ deviationid: string; userid: string; username: string }>> {
    if (deviationids.length === 0) return [];
    return kysely(this.db)
      .selectFrom("deviations as d")
      .innerJoin("users as u", "u.userid", "d.author_userid")
      .select(["d.deviationid", "u.userid", "u.username"])
      .where("d.deviationid", "=", sql<string>`ANY(${[...deviationids]}::text[])`)
      .orderBy("d.deviationid")
      .execute();
  }
}

// ---- rows ------------------------------------------------------------------------------------------

function deviationRow(d: DeviationInput) {
  const premium = d.tier || d.premium_folder_data ? { tier: d.tier ?? null, premium_folder_data: d.premium_folder_data ?? null } : null;
  return {
    deviationid: d.deviationid,
    is_deleted: d.is_deleted === true,
    printid: d.printid ?? null,
    url: d.url ?? null,
    title: d.title ?? null,
    author_userid: d.author?.userid ?? null,
    published_at: epochTime(d.published_time),
    type: deviationType(d),
    is_mature: d.is_mature ?? null,
    is_downloadable: d.is_downloadable ?? null,
    download_filesize: d.download_filesize ?? null,
    is_favourited: d.is_favourited ?? null,
    stats_favourites: d.stats?.favourites ?? null,
    stats_comments: d.stats?.comments ?? null,
    tier_access: d.tier_access ?? null,
    premium,
    raw: d,
  };
}

function metadataRow(m: MetadataInput) {
  return {
    deviationid: m.deviationid,
    description: m.description ?? null,
    license: m.license ?? null,
    tags: m.tags ? sortedTags(m.tags.map((t) => t.tag_name)) : null,
    mature_level: m.mature_level ?? null,
    mature_classification: m.mature_classification ?? null,
    allows_comments: m.allows_comments ?? m.allow_comments ?? null,
    submission: m.submission ?? null,
    camera: m.camera ?? null,
    stats: m.stats ?? null,
    raw: m,
  };
}

function textRow(t: DeviationTextInput) {
  const html = t.content?.html;
  const hasBody = typeof html === "string" && html.trim() !== "";
  return {
    deviationid: t.deviationid,
    html: hasBody ? html : null,
    css: hasBody ? (t.content?.css ?? null) : null,
    css_fonts: hasBody ? (t.content?.css_fonts ?? null) : null,
    excerpt: t.excerpt ?? null,
  };
}

// ---- statements ------------------------------------------------------------------------------------
