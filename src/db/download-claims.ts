// Which downloads rows are due, and in what order: the one definition of "due now" that a claim takes rows by and
// that what-is-left counts (the run, its summary, status and the exit codes read it), and the rank of a row's
// class in the configured priority order. src/db/download.repository.ts's DownloadRepository runs these.
import { kysely, type RawBuilder, sql } from "./kysely.ts";
import type { DownloadKind, DownloadStatus, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/** A row handed to the queue (or to `dvault download --once`), with what orders it. */
export type ClaimedDownload = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  accountId: number | null;
  /** 1-based rank of its class in the configured priority order. */
  rank: number;
  publishedAt: Date | null;
};

/** A row a claim took (claimDue), with its state before the claim: what OnceClaims gives a row it already had back to. */
export type Claim = ClaimedDownload & { before: { status: DownloadStatus; nextAttemptAt: Date | null; queuedAt: Date | null } };

/**
 * What is left of some accounts' downloads at a moment. "Due now" is what a run could still do; everything else
 * waits for something a run cannot hurry: a queue that holds it (a worker, another run), the next quota window,
 * a retry's time, or nothing (failed for good).
 */
export type DownloadsLeft = {
  dueNow: number;
  /** Held by a queue: a running worker's, or another `download --once`. */
  queued: number;
  /** Waiting for the next quota window with nothing stored yet. */
  deferred: number;
  /** A free rendition is stored; the original waits for the next quota window. */
  degradedWaiting: number;
  nextWindow: Date | null;
  /** Failed on a fault that passes; tried again on their own from `nextRetry`. */
  retryLater: number;
  nextRetry: Date | null;
  /** The service refused them: never tried again on their own. */
  failedForGood: number;
};

/** Done for now: nothing is due that a run could do at this moment (what waits is listed, not undone). */
export function doneForNow(left: DownloadsLeft): boolean {
  return left.dueNow === 0;
}

export function byPriority(a: ClaimedDownload, b: ClaimedDownload): number {
  return a.rank - b.rank || (b.publishedAt?.getTime() ?? -Infinity) - (a.publishedAt?.getTime() ?? -Infinity) || Number(a.id) - Number(b.id);
}

type ClaimedRow = Pick<Row<"downloads">, "id" | "deviationid" | "kind" | "status" | "account_id"> & Pick<Row<"deviations">, "published_at"> & { rank: number };
type ClaimRow = ClaimedRow & { was_status: DownloadStatus; was_next_attempt_at: Date | null; was_queued_at: Date | null };

function toClaimed(r: ClaimedRow): ClaimedDownload {
  return { id: r.id, deviationid: r.deviationid, kind: r.kind, status: r.status, accountId: r.account_id, rank: r.rank, publishedAt: r.published_at };
}

function toClaim(r: ClaimRow): Claim {
  return { ...toClaimed(r), before: { status: r.was_status, nextAttemptAt: r.was_next_attempt_at, queuedAt: r.was_queued_at } };
}

/**
 * The rank of a row's class in the configured order: its deviation is the account's own (gallery), in one of its
 * collections, by a user it tracks, or none of these (other). The best matching class counts; classes left out
 * of the order come after the listed ones. Needs d (downloads), v (deviations), a (accounts).
 */
function rank(classes: readonly string[]): RawBuilder<number> {
  const order = sql`${[...classes]}::text[]`;
  return sql<number>`LEAST(
    CASE WHEN a.user_id IS NOT NULL AND v.author_userid = a.user_id THEN array_position(${order}, 'gallery') END,
    CASE WHEN EXISTS (SELECT 1 FROM folder_members m JOIN collection_folders c ON c.folderid = m.folderid
                      WHERE m.kind = 'collection' AND m.deviationid = d.deviationid AND m.removed_at IS NULL AND c.owner_userid = a.user_id)
         THEN array_position(${order}, 'collections') END,
    CASE WHEN EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = a.id AND t.removed_at IS NULL AND t.userid = v.author_userid)
         THEN array_position(${order}, 'tracked') END,
    COALESCE(array_position(${order}, 'other'), cardinality(${order}) + 1))`;
}

/**
 * The account `b` (an accounts row: id, user_id) wants the work of downloads `d`, deviations `v` as its own: its gallery,
 * one of its collections, or a user it tracks (rank's classes other than 'other').
 */
function wantedBy(b: string): RawBuilder<boolean> {
  const acc = sql.table(b);
  return sql<boolean>`(v.author_userid = ${acc}.user_id
    OR EXISTS (SELECT 1 FROM folder_members m JOIN collection_folders c ON c.folderid = m.folderid
               WHERE m.kind = 'collection' AND m.deviationid = d.deviationid AND m.removed_at IS NULL AND c.owner_userid = ${acc}.user_id)
    OR EXISTS (SELECT 1 FROM tracked_users t WHERE t.account_id = ${acc}.id AND t.removed_at IS NULL AND t.userid = v.author_userid))`;
}

/**
 * An unattributed row (of downloads `d`, deviations `v`) that accounts `mine` may take: one they want as their own, or
 * one none of the accounts `leaveTo` (the install's other accounts that can download) wants as its own. A row of
 * another account's gallery, collections or tracked users waits for that account, whose allowance it spends: taken by
 * whichever account claimed first, it spent that one's, and the other account's allowance went unused while its own
 * works waited for the first one's next window.
 */
function mayTake(mine: RawBuilder<number[]>, leaveTo: readonly number[]): RawBuilder<boolean> {
  const others = sql`${[...leaveTo]}::int[]`;
  return sql<boolean>`(cardinality(${others}) = 0
    OR EXISTS (SELECT 1 FROM accounts mine WHERE mine.id = ANY(${mine}) AND ${wantedBy("mine")})
    OR NOT EXISTS (SELECT 1 FROM accounts theirs WHERE theirs.id = ANY(${others}) AND ${wantedBy("theirs")}))`;
}

/** Due now (of downloads `d`): not held by a queue, and wanted, or waiting for a window or a retry that has come. */
function dueNow(now: Date): RawBuilder<boolean> {
  return sql<boolean>`(d.queued_at IS NULL AND (d.status IN ('wanted', 'queued') OR (d.status IN ('deferred_quota', 'degraded', 'failed') AND d.next_attempt_at <= ${now})))`;
}

/**
 * A row a run may fetch while the sync that wants it still runs (of downloads `d`, deviations `v`): an original that
 * src/downloads/download-file.ts#fetchOriginal settles without /deviation/download, so it cannot spend the weekly
 * allowance (its deviation deleted, or not offered for download). Other originals may spend it; texts wait for the
 * end of their source's run, which fetches their /deviation/content (jobs/sync-source/handler.ts).
 */
function spendsNothing(): RawBuilder<boolean> {
  return sql<boolean>`(d.kind = 'original' AND (v.is_downloadable IS FALSE OR v.is_deleted IS TRUE))`;
}

/** What a claim takes (see DownloadRepository.claimDueDownloads). */
export type ClaimArgs = {
  accountId: number;
  now: Date;
  classes: readonly string[];
  limit: number;
  queuedBefore?: Date;
  /** Only these deviations' rows (`dvault add`); all when absent. */
  deviationids?: readonly string[] | undefined;
  /** Only originals that cannot spend the weekly allowance, no texts (`dvault archive --once` while its sync runs: spendsNothing). */
  freeOnly?: boolean;
  /** Rows left out whatever their state (a `--once` run's rows it already had that came due again: src/downloads/once-claims.ts). */
  exceptIds?: readonly string[];
  /** The install's other accounts that can download: unattributed rows one of them wants as its own are left to it (mayTake). */
  leaveTo?: readonly number[];
};

/** See DownloadRepository.claimDueDownloads. */
export async function claimDue(db: Queryable, args: ClaimArgs): Promise<Claim[]> {
  const { accountId, now, limit } = args;
  const queuedBefore = args.queuedBefore ?? null;
  const only = sql`${args.deviationids ? [...args.deviationids] : null}::text[]`;
  const freeOnly = args.freeOnly === true;
  const except = sql`${[...(args.exceptIds ?? [])]}::bigint[]`;
  const { rows } = await sql<ClaimRow>`
WITH a AS (SELECT id, user_id FROM accounts WHERE id = ${accountId}),
due AS (
  SELECT d.id, ${rank(args.classes)} AS rank, v.published_at, d.status AS was_status, d.next_attempt_at AS was_next_attempt_at,
    d.queued_at AS was_queued_at
  FROM downloads d
  JOIN deviations v ON v.deviationid = d.deviationid
  CROSS JOIN a
  WHERE (d.account_id = a.id OR (d.account_id IS NULL AND (${only} IS NOT NULL OR ${mayTake(sql`ARRAY[${accountId}::int]`, args.leaveTo ?? [])})))
    AND (${only} IS NULL OR d.deviationid = ANY(${only}))
    AND (NOT ${freeOnly}::boolean OR ${spendsNothing()})
    AND NOT (d.id = ANY(${except}))
    AND (
      ${dueNow(now)}
      OR (d.queued_at <= ${queuedBefore} AND d.status IN ('wanted', 'queued', 'deferred_quota', 'degraded'))
    )
  ORDER BY rank, v.published_at DESC NULLS LAST, d.id
  LIMIT ${limit}
  FOR UPDATE OF d SKIP LOCKED
)
UPDATE downloads d
SET status = CASE WHEN d.status IN ('wanted', 'deferred_quota', 'failed') THEN 'queued'::download_status ELSE d.status END,
    queued_at = ${now}, next_attempt_at = NULL, account_id = COALESCE(d.account_id, ${accountId}), updated_at = ${now}
FROM due
WHERE d.id = due.id
RETURNING d.id, d.deviationid, d.kind, d.status, d.account_id, due.rank, due.published_at, due.was_status, due.was_next_attempt_at, due.was_queued_at`.execute(
    kysely(db),
  );
  return rows.map(toClaim).sort(byPriority);
}

/** See DownloadRepository.remainingDownloads: counted by the same "due now" that claimDue claims by. */
export async function remaining(db: Queryable, accountIds: readonly number[], now: Date, leaveTo: readonly number[] = []): Promise<DownloadsLeft> {
  const ids = sql<number[]>`${[...accountIds]}::int[]`;
  // Unattributed rows count for these accounts as claimDue takes them (mayTake); deviations are read only when some are left to others.
  const theirs =
    leaveTo.length === 0
      ? sql<boolean>`TRUE`
      : sql<boolean>`EXISTS (SELECT 1 FROM deviations v WHERE v.deviationid = d.deviationid AND ${mayTake(ids, leaveTo)})`;
  type Left = Record<"due_now" | "queued" | "deferred" | "degraded_waiting" | "retry_later" | "failed_for_good", number> &
    Record<"next_window" | "next_retry", Row<"downloads">["next_attempt_at"]>;
  const { rows } = await sql<Left>`
SELECT
  count(*) FILTER (WHERE ${dueNow(now)})::int AS due_now,
  count(*) FILTER (WHERE d.queued_at IS NOT NULL AND d.status IN ('wanted', 'queued', 'deferred_quota', 'degraded'))::int AS queued,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'deferred_quota' AND d.next_attempt_at > ${now})::int AS deferred,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'degraded' AND d.next_attempt_at > ${now})::int AS degraded_waiting,
  min(d.next_attempt_at) FILTER (WHERE d.queued_at IS NULL AND d.status IN ('deferred_quota', 'degraded') AND d.next_attempt_at > ${now}) AS next_window,
  count(*) FILTER (WHERE d.queued_at IS NULL AND d.status = 'failed' AND d.next_attempt_at > ${now})::int AS retry_later,
  min(d.next_attempt_at) FILTER (WHERE d.queued_at IS NULL AND d.status = 'failed' AND d.next_attempt_at > ${now}) AS next_retry,
  count(*) FILTER (WHERE d.status = 'failed' AND d.next_attempt_at IS NULL)::int AS failed_for_good
FROM downloads d
WHERE d.kind <> 'degraded' AND (d.account_id = ANY(${ids}) OR (d.account_id IS NULL AND ${theirs}))
  -- Every count above is of these statuses: the rows of downloads_due_idx, not the archive's done ones (status's
  -- half second at a million works, bench/archive-scale.ts).
  AND d.status IN ('wanted', 'queued', 'deferred_quota', 'degraded', 'failed')`.execute(kysely(db));
  const r = rows[0];
  return {
    dueNow: r?.due_now ?? 0,
    queued: r?.queued ?? 0,
    deferred: r?.deferred ?? 0,
    degradedWaiting: r?.degraded_waiting ?? 0,
    nextWindow: r?.next_window ?? null,
    retryLater: r?.retry_later ?? 0,
    nextRetry: r?.next_retry ?? null,
    failedForGood: r?.failed_for_good ?? 0,
  };
}

/** See DownloadRepository.listQueuedDownloads. */
export async function listQueued(db: Queryable, args: { classes: readonly string[]; afterId: string; limit: number }): Promise<ClaimedDownload[]> {
  const rows = await kysely(db)
    .selectFrom("downloads as d")
    .innerJoin("deviations as v", "v.deviationid", "d.deviationid")
    .leftJoin("accounts as a", "a.id", "d.account_id")
    .select(["d.id", "d.deviationid", "d.kind", "d.status", "d.account_id", rank(args.classes).as("rank"), "v.published_at"])
    .where("d.queued_at", "is not", null)
    .where("d.id", ">", sql<string>`${args.afterId}::bigint`)
    .orderBy("d.id")
    .limit(args.limit)
    .execute();
  return rows.map(toClaimed);
}
