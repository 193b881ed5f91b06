// The downloads table: sync says which files it wants (markDownloadsWanted); the download worker
// (src/downloads) owns every later status through the methods below, one statement each (a batch of stored
// files too).
import { markLost, markStored, type StoredFile, storedFilesPage, text } from "./download-files.ts";
import { type Claim, type ClaimArgs, claimDue, type ClaimedDownload, type DownloadsLeft, listQueued, remaining } from "./download-claims.ts";
import { kysely, sql } from "./kysely.ts";
import type { DeviationType, DownloadKind, DownloadStatus, Row } from "./schema.ts";
import { recordset } from "./upsert-page.ts";
import type { Queryable } from "./with-transaction.ts";

export { type ClaimedDownload, type DownloadsLeft, doneForNow } from "./download-claims.ts";
export type { DownloadKind, DownloadStatus, StoredFile };
/** What a downloads row held before a file was stored for it. */
export type HeldBefore = { oldPath: string | null; oldStatus: DownloadStatus; oldRendition: string | null };
/** What replaced what, in download_history. */
export type DownloadChange = "stored" | "upgraded" | "replaced" | "missing" | "corrupt" | "requeued";

/** One row with what the download needs to know about its deviation. */
export type DownloadTarget = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  accountId: number | null;
  rendition: string | null;
  path: string | null;
  sha256: string | null;
  size: number | null;
  sourceEtag: string | null;
  attempts: number;
  nextAttemptAt: Date | null;
  degradedReason: string | null;
  deviation: {
    type: DeviationType | null;
    title: string | null;
    isDeleted: boolean;
    isDownloadable: boolean | null;
    downloadFilesize: number | null;
    publishedAt: Date | null;
    tierAccess: string | null;
    premium: unknown;
    isMature: boolean | null;
    raw: Record<string, unknown>;
  };
  text: { html: string | null; css: string | null; excerpt: string | null } | null;
};

export type StoredRow = Pick<Row<"downloads">, "id" | "deviationid" | "kind" | "status" | "rendition" | "sha256"> & {
  path: string;
  size: number | null;
  deviationDeleted: boolean;
};

export type StatusCount = { kind: DownloadKind; status: DownloadStatus; count: number; bytes: number; partial: number; nextAttemptAt: Date | null };

export type WantedDownload = {
  deviationid: string;
  kind: DownloadKind;
  /** Higher first; default 0. */
  priority?: number;
  /** Why it is wanted, e.g. "own gallery", "favourite". */
  reason?: string | null;
};

export class DownloadRepository {
  constructor(private readonly db: Queryable) {}

  /**
   * Inserts a 'wanted' row per (deviation, kind) not already known; existing rows, whatever their status,
   * are left alone. The deviations must exist. Returns how many rows were new.
   */
  async markDownloadsWanted(rows: readonly WantedDownload[], at: Date = new Date()): Promise<number> {
    // One row per (deviation, kind): the highest priority asked for, the first reason given.
    const merged = new Map<string, { deviationid: string; kind: DownloadKind; priority: number; reason: string | null }>();
    for (const r of rows) {
      const key = `${r.deviationid}:${r.kind}`;
      const known = merged.get(key);
      merged.set(key, {
        deviationid: r.deviationid,
        kind: r.kind,
        priority: Math.max(known?.priority ?? -Infinity, r.priority ?? 0),
        reason: known?.reason ?? r.reason ?? null,
      });
    }
    const input = [...merged.values()];
    if (input.length === 0) return 0;
    // A page of rows, as the mirror's upserts take theirs (src/db/upsert-page.ts).
    const result = await sql`
INSERT INTO downloads (deviationid, kind, status, priority, reason, created_at, updated_at)
SELECT deviationid, kind, 'wanted', priority, reason, ${at}::timestamptz, ${at}::timestamptz
FROM ${recordset(input, sql`deviationid text, kind download_kind, priority integer, reason text`)}
ORDER BY deviationid, kind
ON CONFLICT (deviationid, kind) DO NOTHING`.execute(kysely(this.db));
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * Claims due rows for an account in priority order (its classes in `classes` order, then newest first)
   * and marks them queued: wanted rows, deferred or degraded rows whose next window has come, and failed
   * rows whose retry is due (a permanent failure has no next attempt and is never due). Rows
   * already queued are claimed again only when queued at or before `queuedBefore` (`download --once` taking over what a
   * queue held when it started — a killed run's, a stopped worker's — but never its own claims; a per-file lock
   * keeps two processes from one file). Rows of
   * another account are left alone, and so are unattributed rows one of `leaveTo` wants as its own (its gallery,
   * collections or tracked users: its allowance pays for them); other unattributed rows become this account's.
   */
  async claimDueDownloads(args: ClaimArgs): Promise<Claim[]> {
    return claimDue(this.db, args);
  }

  /**
   * What is left of these accounts' downloads at `now` (see DownloadsLeft); unattributed rows count for them, but for
   * those that one of `leaveTo` (the install's other accounts that can download) wants as its own, as claims take them.
   */
  async remainingDownloads(accountIds: readonly number[], now: Date, leaveTo: readonly number[] = []): Promise<DownloadsLeft> {
    return remaining(this.db, accountIds, now, leaveTo);
  }

  /** Rows handed to the queue and not finished (queued_at set), by id from `afterId`: to rebuild a lost queue. */
  async listQueuedDownloads(args: { classes: readonly string[]; afterId: string; limit: number }): Promise<ClaimedDownload[]> {
    return listQueued(this.db, args);
  }

  async findDownloadTarget(deviationid: string, kind: DownloadKind): Promise<DownloadTarget | undefined> {
    const r = await kysely(this.db)
      .selectFrom("downloads as d")
      .innerJoin("deviations as v", "v.deviationid", "d.deviationid")
      .leftJoin("deviation_texts as t", "t.deviationid", "d.deviationid")
      .select(["d.id", "d.deviationid", "d.kind", "d.status", "d.account_id", "d.rendition", "d.path", "d.sha256", "d.size", "d.source_etag"])
      .select(["d.attempts", "d.next_attempt_at", "d.degraded_reason"])
      .select([
        "v.type",
        "v.title",
        "v.is_deleted",
        "v.is_downloadable",
        "v.download_filesize",
        "v.published_at",
        "v.tier_access",
        "v.premium",
        "v.is_mature",
        "v.raw",
      ])
      .select([sql<boolean>`t.deviationid IS NOT NULL`.as("has_text"), "t.html", "t.css", "t.excerpt"])
      .where("d.deviationid", "=", deviationid)
      .where("d.kind", "=", kind)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      id: r.id,
      deviationid: r.deviationid,
      kind: r.kind,
      status: r.status,
      accountId: r.account_id,
      rendition: r.rendition,
      path: r.path,
      sha256: r.sha256,
      size: r.size === null ? null : Number(r.size),
      sourceEtag: r.source_etag,
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
      degradedReason: r.degraded_reason,
      deviation: {
        type: r.type,
        title: r.title,
        isDeleted: r.is_deleted,
        isDownloadable: r.is_downloadable,
        downloadFilesize: r.download_filesize === null ? null : Number(r.download_filesize),
        publishedAt: r.published_at,
        tierAccess: r.tier_access,
        premium: r.premium,
        isMature: r.is_mature,
        raw: (r.raw ?? {}) as Record<string, unknown>,
      },
      text: r.has_text ? { html: r.html, css: r.css, excerpt: r.excerpt } : null,
    };
  }

  /** An attempt begins: counted, and the row belongs to `accountId` from now on (whose quota it spends). */
  async recordDownloadAttempt(id: string, accountId: number | null, at: Date): Promise<void> {
    await kysely(this.db)
      .updateTable("downloads")
      .set((eb) => ({ attempts: sql`attempts + 1`, last_attempt_at: at, updated_at: at, account_id: eb.fn.coalesce(eb.val(accountId), "account_id") }))
      .where("id", "=", id)
      .execute();
  }

  /**
   * Records the file now stored for a row (done, degraded, or a free rendition of something not
   * downloadable) and, when it replaces another file, the change in download_history — one statement.
   * Returns what the row held before, so a replaced file nobody else references can be removed.
   */
  async markDownloadStored(f: StoredFile): Promise<HeldBefore> {
    const [held] = await this.markDownloadsStored([f]);
    if (held instanceof Error || !held) throw held ?? new Error(`download row ${f.id} was not written`);
    return held;
  }

  /**
   * markDownloadStored for a batch of files already durable in the archive (src/downloads/group-commit.ts): one
   * statement, so one commit for them all. Per file, what its row held before, or an Error for a row that vanished
   * meanwhile (the others are stored all the same).
   */
  async markDownloadsStored(files: readonly StoredFile[]): Promise<(HeldBefore | Error)[]> {
    const held = await markStored(this.db, files);
    return files.map((f) => {
      const r = held.get(f.id);
      return r
        ? { oldPath: r.old_path, oldStatus: r.old_status, oldRendition: r.old_rendition }
        : new Error(`download row ${f.id} vanished while its file was stored`);
    });
  }

  /**
   * Over quota with no free rendition to store (or a degraded file waiting for its upgrade): waits for
   * `nextAttemptAt`. A degraded row stays degraded; anything else becomes deferred_quota.
   */
  async markDownloadDeferred(args: { id: string; reason: string; nextAttemptAt: Date; bytes?: number; at: Date }): Promise<void> {
    await kysely(this.db)
      .updateTable("downloads")
      .set({
        status: sql`CASE WHEN status = 'degraded' THEN 'degraded'::download_status ELSE 'deferred_quota'::download_status END`,
        degraded_reason: text(args.reason),
        next_attempt_at: args.nextAttemptAt,
        bytes_transferred: sql`bytes_transferred + ${args.bytes ?? 0}`,
        queued_at: null,
        updated_at: args.at,
      })
      .where("id", "=", args.id)
      .execute();
  }

  /** The service will not give the file ("not downloadable", "only subscribers", deleted): never retried. */
  async markDownloadNotDownloadable(args: { id: string; reason: string; bytes?: number; at: Date }): Promise<void> {
    const reason = text(args.reason);
    await kysely(this.db)
      .updateTable("downloads")
      .set({
        status: "not_downloadable",
        degraded_reason: reason,
        last_error: reason,
        next_attempt_at: null,
        bytes_transferred: sql`bytes_transferred + ${args.bytes ?? 0}`,
        queued_at: null,
        updated_at: args.at,
      })
      .where("id", "=", args.id)
      .execute();
  }

  /**
   * A failed attempt: the error is kept. With `final` the row leaves the queue and counts one more
   * failure in a row: a transient one leaves it failed until `retryDelaysMs[failures - 1]` from `at`
   * (the last delay for every later failure), a `permanent` one leaves it failed with no next attempt.
   * A degraded row keeps its file and its status, and tries again after the delay (the last one when
   * the failure was permanent). Returns the row's state afterwards (undefined when there is no row).
   */
  async recordDownloadFailure(args: {
    deviationid: string;
    kind: DownloadKind;
    error: string;
    final: boolean;
    permanent?: boolean;
    /** Delays in ms after the 1st, 2nd, ... failure in a row (src/downloads/retry.ts). */
    retryDelaysMs: readonly number[];
    bytes?: number;
    at: Date;
  }): Promise<{ status: DownloadStatus; failures: number; nextAttemptAt: Date | null } | undefined> {
    if (args.retryDelaysMs.length === 0) throw new Error("recordDownloadFailure: retryDelaysMs is empty");
    const final = sql`${args.final}::boolean`;
    const permanent = sql`${args.permanent === true}::boolean`;
    const delays = sql`${args.retryDelaysMs.map((ms) => Math.max(0, Math.round(ms)))}::bigint[]`;
    // On the right of SET, failures is the old count.
    const r = await kysely(this.db)
      .updateTable("downloads")
      .set({
        last_error: text(args.error)?.slice(0, 2000) ?? null,
        bytes_transferred: sql`bytes_transferred + ${args.bytes ?? 0}`,
        updated_at: args.at,
        status: sql`CASE WHEN ${final} AND status <> 'degraded' THEN 'failed'::download_status ELSE status END`,
        failures: sql`CASE WHEN ${final} THEN failures + 1 ELSE failures END`,
        next_attempt_at: sql`CASE
          WHEN NOT ${final} THEN next_attempt_at
          WHEN ${permanent} AND status <> 'degraded' THEN NULL
          ELSE ${args.at}::timestamptz + ((${delays})[CASE WHEN ${permanent} THEN cardinality(${delays}) ELSE LEAST(failures + 1, cardinality(${delays})) END])::double precision * interval '1 millisecond'
        END`,
        queued_at: sql`CASE WHEN ${final} THEN NULL ELSE queued_at END`,
      })
      .where("deviationid", "=", args.deviationid)
      .where("kind", "=", args.kind)
      .returning(["status", "failures", "next_attempt_at"])
      .executeTakeFirst();
    return r ? { status: r.status, failures: r.failures, nextAttemptAt: r.next_attempt_at } : undefined;
  }

  /**
   * Makes a failed (or degraded) row that is not queued due at `at` with no failures in a row; false when there is none.
   * A person asked to try it now (dvault jobs retry, the dashboard): its next failures back off from the first
   * delay again (src/downloads/retry.ts).
   */
  async retryDownloadNow(args: { deviationid: string; kind: DownloadKind; at: Date }): Promise<boolean> {
    const rows = await kysely(this.db)
      .updateTable("downloads")
      .set({ failures: 0, next_attempt_at: args.at, updated_at: args.at })
      .where("deviationid", "=", args.deviationid)
      .where("kind", "=", args.kind)
      .where("queued_at", "is", null)
      .where("status", "in", ["failed", "degraded"])
      .returning("id")
      .execute();
    return rows.length > 0;
  }

  /**
   * Leaves the queue without a change (another process had it, or it was not due after all). A released deferred
   * or degraded row is due again at once (its claim had cleared next_attempt_at).
   */
  async releaseDownload(id: string, at: Date): Promise<void> {
    await kysely(this.db)
      .updateTable("downloads")
      .set({
        queued_at: null,
        status: sql`CASE WHEN status = 'queued' THEN 'wanted'::download_status ELSE status END`,
        next_attempt_at: sql`CASE WHEN status IN ('deferred_quota', 'degraded') THEN COALESCE(next_attempt_at, ${at}::timestamptz) ELSE next_attempt_at END`,
        updated_at: at,
      })
      .where("id", "=", id)
      .execute();
  }

  /**
   * Of these rows, those no queue holds now (queued_at null), locked until the caller's transaction ends: a queue's job
   * for one of them has nothing left to do, and a claim (SKIP LOCKED) passes them by while that job goes, so none is
   * queued again in between and then left without its job. Rows another transaction holds are left out.
   */
  async holdNotQueued(ids: readonly string[]): Promise<Array<{ deviationid: string; kind: DownloadKind }>> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ deviationid: string; kind: DownloadKind }>`
      SELECT deviationid, kind FROM downloads
      WHERE id = ANY(${[...ids]}::bigint[]) AND queued_at IS NULL
      FOR UPDATE SKIP LOCKED`.execute(kysely(this.db));
    return rows;
  }

  /**
   * Undoes a claim: the row as it was before it (its status and next attempt), held by no queue. A row failed with a
   * retry time that has come stays failed, as the run that failed it said, rather than turned back into wanted.
   */
  async undoClaim(id: string, before: { status: DownloadStatus; nextAttemptAt: Date | null }, at: Date): Promise<void> {
    await kysely(this.db)
      .updateTable("downloads")
      .set({ queued_at: null, status: before.status, next_attempt_at: before.nextAttemptAt, updated_at: at })
      .where("id", "=", id)
      .execute();
  }

  /**
   * How many rows store their file at `path` (identical bytes are stored once and shared); a file an import
   * brought (imported_files) counts too, so replacing a row's file never removes one kept beside it.
   */
  async countPathReferences(path: string): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      SELECT ((SELECT count(*) FROM downloads WHERE path = ${path}) + (SELECT count(*) FROM imported_files WHERE path = ${path}))::int AS n`.execute(
      kysely(this.db),
    );
    return rows[0]?.n ?? 0;
  }

  /** Rows with a stored file, by id from `afterId`: what `dvault verify` re-hashes. */
  async listStoredDownloads(args: { afterId: string; limit: number }): Promise<StoredRow[]> {
    const rows = await storedFilesPage(this.db, args)
      .innerJoin("deviations as v", "v.deviationid", "d.deviationid")
      .select(["d.id", "d.deviationid", "d.kind", "d.status", "d.rendition", "d.path", "d.sha256", "d.size", "v.is_deleted"])
      .$narrowType<{ path: string }>()
      .execute();
    return rows.map(({ size, is_deleted, ...r }) => ({ ...r, size: size === null ? null : Number(size), deviationDeleted: is_deleted }));
  }

  /** `dvault verify` found these files intact. */
  async markDownloadsVerified(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await kysely(this.db)
      .updateTable("downloads")
      .set({ verified_at: at })
      .where("id", "=", sql<string>`ANY(${[...ids]}::bigint[])`)
      .execute();
  }

  /**
   * A stored file is missing or corrupt: the rows that share it forget it and are wanted again (unless
   * the deviation is gone from the service), with the change recorded. Returns the rows re-queued.
   */
  async markFileLost(args: { path: string; change: "missing" | "corrupt"; note: string; at: Date }): Promise<number> {
    return markLost(this.db, args);
  }

  /** Counts (and bytes) per kind and status, and the earliest next window of waiting rows: the summary. */
  async downloadStatusCounts(): Promise<StatusCount[]> {
    const rows = await kysely(this.db)
      .selectFrom("downloads")
      .select((eb) => [
        "kind",
        "status",
        sql<number>`count(*)::int`.as("n"),
        sql<Row<"downloads">["size"]>`sum(size)::bigint`.as("bytes"),
        sql<number>`count(*) FILTER (WHERE is_partial)::int`.as("partial"),
        eb.fn.min("next_attempt_at").as("next_attempt_at"),
      ])
      .groupBy(["kind", "status"])
      .orderBy("kind")
      .orderBy("status")
      .execute();
    return rows.map((r) => ({ kind: r.kind, status: r.status, count: r.n, bytes: Number(r.bytes ?? 0), partial: r.partial, nextAttemptAt: r.next_attempt_at }));
  }
}
