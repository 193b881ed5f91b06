// The downloads table: sync says which files it wants (markDownloadsWanted); the download worker
// (src/downloads) owns every later status through the methods below, one statement each.
import {
  byPriority,
  CLAIM_DUE,
  FIND_TARGET,
  LIST_QUEUED,
  LIST_STORED,
  MARK_DEFERRED,
  MARK_FILE_LOST,
  MARK_NOT_DOWNLOADABLE,
  MARK_STORED,
  markWanted,
  RECORD_ATTEMPT,
  RECORD_FAILURE,
  RELEASE,
  REMAINING,
  RETRY_NOW,
  STATUS_COUNTS,
  text,
  toClaimed,
  toTarget,
  type ClaimedRow,
  type RemainingRow,
  type StoredRowRaw,
  type TargetRow,
} from "./download-statements.ts";
import { kysely } from "./kysely.ts";
import type { DeviationType } from "./mirror-rows.ts";
import type { Queryable } from "./with-transaction.ts";

export type DownloadKind = "original" | "degraded" | "text";
export type DownloadStatus = "wanted" | "queued" | "deferred_quota" | "done" | "degraded" | "not_downloadable" | "failed";
/** What replaced what, in download_history. */
export type DownloadChange = "stored" | "upgraded" | "replaced" | "missing" | "corrupt" | "requeued";

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

/** A file now in the archive for a row. */
export type StoredFile = {
  id: string;
  status: "done" | "degraded" | "not_downloadable";
  /** "original", "content", "preview", "thumb", "video:<quality>", "html". */
  rendition: string;
  path: string;
  size: number;
  sha256: string;
  mime: string | null;
  width?: number | null;
  height?: number | null;
  etag?: string | null;
  sourceFilename?: string | null;
  sourceSize?: number | null;
  /** Why the original is not what is stored (degraded, not downloadable). */
  degradedReason?: string | null;
  /** When to try for the original again (a degraded row's next quota window). */
  nextAttemptAt?: Date | null;
  isPartial?: boolean;
  partialReason?: string | null;
  /** Bytes received over the network for it, retries included. */
  bytes: number;
  at: Date;
  note?: string | null;
};

export type StoredRow = {
  id: string;
  deviationid: string;
  kind: DownloadKind;
  status: DownloadStatus;
  rendition: string | null;
  path: string;
  sha256: string | null;
  size: number | null;
  deviationDeleted: boolean;
};

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
    const result = await markWanted(input, at).execute(kysely(this.db));
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * Claims due rows for an account in priority order (its classes in `classes` order, then newest first)
   * and marks them queued: wanted rows, deferred or degraded rows whose next window has come, and failed
   * rows whose retry is due (a permanent failure has no next attempt and is never due). Rows
   * already queued are claimed again only when queued at or before `queuedBefore` (`download --once` taking over what a
   * queue held when it started — a killed run's, a stopped worker's — but never its own claims; a per-file lock
   * keeps two processes from one file). Rows of
   * another account are left alone; unattributed rows become this account's.
   */
  async claimDueDownloads(args: {
    accountId: number;
    now: Date;
    classes: readonly string[];
    limit: number;
    queuedBefore?: Date;
    /** Only these deviations' rows (`dvault add`); all when absent. */
    deviationids?: readonly string[] | undefined;
  }): Promise<ClaimedDownload[]> {
    const only = args.deviationids ? [...args.deviationids] : null;
    const { rows } = await this.db.query<ClaimedRow>(CLAIM_DUE, [args.accountId, args.now, [...args.classes], args.limit, args.queuedBefore ?? null, only]);
    return rows.map(toClaimed).sort(byPriority);
  }

  /** What is left of these accounts' downloads at `now` (see DownloadsLeft); unattributed rows count for them. */
  async remainingDownloads(accountIds: readonly number[], now: Date): Promise<DownloadsLeft> {
    const { rows } = await this.db.query<RemainingRow>(REMAINING, [[...accountIds], now]);
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

  /** Rows handed to the queue and not finished (queued_at set), by id from `afterId`: to rebuild a lost queue. */
  async listQueuedDownloads(args: { classes: readonly string[]; afterId: string; limit: number }): Promise<ClaimedDownload[]> {
    const { rows } = await this.db.query<ClaimedRow>(LIST_QUEUED, [[...args.classes], args.afterId, args.limit]);
    return rows.map(toClaimed);
  }

  async findDownloadTarget(deviationid: string, kind: DownloadKind): Promise<DownloadTarget | undefined> {
    const { rows } = await this.db.query<TargetRow>(FIND_TARGET, [deviationid, kind]);
    const r = rows[0];
    return r ? toTarget(r) : undefined;
  }

  /** An attempt begins: counted, and the row belongs to `accountId` from now on (whose quota it spends). */
  async recordDownloadAttempt(id: string, accountId: number | null, at: Date): Promise<void> {
    await this.db.query(RECORD_ATTEMPT, [id, accountId, at]);
  }

  /**
   * Records the file now stored for a row (done, degraded, or a free rendition of something not
   * downloadable) and, when it replaces another file, the change in download_history — one statement.
   * Returns what the row held before, so a replaced file nobody else references can be removed.
   */
  async markDownloadStored(f: StoredFile): Promise<{ oldPath: string | null; oldStatus: DownloadStatus; oldRendition: string | null }> {
    const { rows } = await this.db.query<{ old_path: string | null; old_status: DownloadStatus; old_rendition: string | null }>(MARK_STORED, [
      f.id,
      f.status,
      f.rendition,
      f.path,
      f.size,
      f.sha256,
      text(f.mime),
      f.width ?? null,
      f.height ?? null,
      f.etag ?? null,
      text(f.sourceFilename),
      f.sourceSize ?? null,
      text(f.degradedReason),
      f.nextAttemptAt ?? null,
      f.isPartial ?? false,
      text(f.partialReason),
      f.bytes,
      f.at,
      text(f.note),
    ]);
    const r = rows[0];
    if (!r) throw new Error(`download row ${f.id} vanished while its file was stored`);
    return { oldPath: r.old_path, oldStatus: r.old_status, oldRendition: r.old_rendition };
  }

  /**
   * Over quota with no free rendition to store (or a degraded file waiting for its upgrade): waits for
   * `nextAttemptAt`. A degraded row stays degraded; anything else becomes deferred_quota.
   */
  async markDownloadDeferred(args: { id: string; reason: string; nextAttemptAt: Date; bytes?: number; at: Date }): Promise<void> {
    await this.db.query(MARK_DEFERRED, [args.id, text(args.reason), args.nextAttemptAt, args.bytes ?? 0, args.at]);
  }

  /** The service will not give the file ("not downloadable", "only subscribers", deleted): never retried. */
  async markDownloadNotDownloadable(args: { id: string; reason: string; bytes?: number; at: Date }): Promise<void> {
    await this.db.query(MARK_NOT_DOWNLOADABLE, [args.id, text(args.reason), args.bytes ?? 0, args.at]);
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
    const { rows } = await this.db.query<{ status: DownloadStatus; failures: number; next_attempt_at: Date | null }>(RECORD_FAILURE, [
      args.deviationid,
      args.kind,
      text(args.error)?.slice(0, 2000),
      args.final,
      args.bytes ?? 0,
      args.permanent === true,
      args.at,
      args.retryDelaysMs.map((ms) => Math.max(0, Math.round(ms))),
    ]);
    const r = rows[0];
    return r ? { status: r.status, failures: r.failures, nextAttemptAt: r.next_attempt_at } : undefined;
  }

  /** Makes a failed (or degraded) row that is not queued due at `at` with no failures in a row; false when there is none. */
  async retryDownloadNow(args: { deviationid: string; kind: DownloadKind; at: Date }): Promise<boolean> {
    const { rows } = await this.db.query(RETRY_NOW, [args.deviationid, args.kind, args.at]);
    return rows.length > 0;
  }

  /** Leaves the queue without a change (another process had it, or it was not due after all). */
  async releaseDownload(id: string, at: Date): Promise<void> {
    await this.db.query(RELEASE, [id, at]);
  }

  /**
   * How many rows store their file at `path` (identical bytes are stored once and shared); a file an import
   * brought (imported_files) counts too, so replacing a row's file never removes one kept beside it.
   */
  async countPathReferences(path: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      `SELECT ((SELECT count(*) FROM downloads WHERE path = $1) + (SELECT count(*) FROM imported_files WHERE path = $1))::int AS n`,
      [path],
    );
    return rows[0]?.n ?? 0;
  }

  /** Rows with a stored file, by id from `afterId`: what `dvault verify` re-hashes. */
  async listStoredDownloads(args: { afterId: string; limit: number }): Promise<StoredRow[]> {
    const { rows } = await this.db.query<StoredRowRaw>(LIST_STORED, [args.afterId, args.limit]);
    return rows.map((r) => ({
      id: String(r.id),
      deviationid: r.deviationid,
      kind: r.kind,
      status: r.status,
      rendition: r.rendition,
      path: r.path,
      sha256: r.sha256,
      size: r.size === null ? null : Number(r.size),
      deviationDeleted: r.is_deleted,
    }));
  }

  /** `dvault verify` found these files intact. */
  async markDownloadsVerified(ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(`UPDATE downloads SET verified_at = $2 WHERE id = ANY($1::bigint[])`, [[...ids], at]);
  }

  /**
   * A stored file is missing or corrupt: the rows that share it forget it and are wanted again (unless
   * the deviation is gone from the service), with the change recorded. Returns the rows re-queued.
   */
  async markFileLost(args: { path: string; change: "missing" | "corrupt"; note: string; at: Date }): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(MARK_FILE_LOST, [args.path, args.change, text(args.note), args.at]);
    return rows[0]?.n ?? 0;
  }

  /** Counts (and bytes) per kind and status, and the earliest next window of waiting rows: the summary. */
  async downloadStatusCounts(): Promise<StatusCount[]> {
    const { rows } = await this.db.query<{
      kind: DownloadKind;
      status: DownloadStatus;
      n: number;
      bytes: string | null;
      partial: number;
      next_attempt_at: Date | null;
    }>(STATUS_COUNTS);
    return rows.map((r) => ({ kind: r.kind, status: r.status, count: r.n, bytes: Number(r.bytes ?? 0), partial: r.partial, nextAttemptAt: r.next_attempt_at }));
  }
}
