// One row of the downloads table, end to end: a journal's text as an HTML file, or an original through
// the quota (the signed URL fetched just before the transfer), or — over quota, or when the service
// will not give the original — the best free rendition, marked for what it is. Shared by the downloads
// job and `dvault download --once`; the caller maps the outcome onto its queue.
import { Readable } from "node:stream";
import { isMissing } from "../api/errors.ts";
import type { Deviation, Download } from "../api/types.ts";
import type { DownloadKind, DownloadTarget, HeldBefore, StoredFile as StoredRow } from "../db/download.repository.ts";
import type { StoredFile, WrittenFile } from "../storage/archive.ts";
import { UserError } from "../errors.ts";
import { breakLockOfDeadHolder, leasedHolder } from "../queue/holder.ts";
import { acquireLock, type HeldLock } from "../coord/lock.ts";
import type { AccountApi } from "../services.ts";
import { extensionFor } from "../storage/extension.ts";
import { DiskFullError } from "../storage/free-space.ts";
import { OutsideArchiveError } from "../storage/layout.ts";
import { folderFault } from "../storage/storage-fault.ts";
import type { DownloadDeps } from "./deps.ts";
import { nextWindowOf } from "./quota.ts";
import type { DownloadOutcome, DownloadRequest } from "./outcome.ts";
import { PaidDownloads } from "./paid-downloads.ts";
import { type PlacedOriginal, PlacedOriginals } from "./placed-originals.ts";
import { bestFreeRendition, partialityOf, usableListing } from "./renditions.ts";
import { afterStore, gone } from "./after-store.ts";
import { readRefusal } from "./refusal.ts";
import { storeText } from "./store-text.ts";
import { CDN_PACER_KEY, transferToPartial, type WrittenTransfer } from "./transfer.ts";
import type { GroupStored } from "./group-commit.ts";

const DEFAULT_LOCK_TTL_MS = 15_000;

/** The lock (src/coord/lock.ts) of one file's download; `dvault import` takes it too, so it never fills a row mid-transfer. */
export function downloadLockKey(prefix: string, deviationid: string, kind: DownloadKind): string {
  return `${prefix}:download-lock:${deviationid}:${kind}`;
}

/**
 * Files this process is downloading. The lock alone does not cover them: a lock store that restarted
 * without its data has lost the lock while the transfer runs on, and the rebuilt queue hands the same file out again.
 */
const inThisProcess = new Set<string>();

/** Runs one download under a per-file lock, src/coord/lock.ts (a worker and `dvault download --once` never race). */
export async function downloadFile(deps: DownloadDeps, req: DownloadRequest): Promise<DownloadOutcome> {
  const lockKey = downloadLockKey(deps.services.config.redisPrefix, req.deviationid, req.kind);
  if (inThisProcess.has(lockKey)) return { status: "busy", reason: "this process is already downloading this file" };
  inThisProcess.add(lockKey);
  try {
    return await underLock(deps, req, lockKey);
  } catch (err) {
    // A folder of the archive leads outside it (a planted link): nothing was written there, and the
    // downloads pause with the reason; the row stays wanted (docs/RELIABILITY.md).
    if (err instanceof OutsideArchiveError) throw await deps.guard.pauseForLink(err);
    // The archive refused the file (a folder's permissions, a read-only disk, the bucket): not this file's
    // fault and not one a retry gets past; every retry of an original would spend the allowance again. The
    // downloads pause until a preflight passes; the row stays wanted (docs/RELIABILITY.md#storage-faults).
    const fault = folderFault(err);
    if (fault) throw await deps.guard.pauseForStorage(fault);
    throw err;
  } finally {
    inThisProcess.delete(lockKey);
  }
}

/**
 * The per-file lock names this process; a lock whose holder is proven dead (src/queue/holder.ts) is broken
 * at once rather than waited out (docs/RELIABILITY.md#work-held-by-a-dead-process).
 */
async function acquireFileLock(deps: DownloadDeps, lockKey: string): Promise<HeldLock | undefined> {
  const { coord, config } = deps.services;
  const holder = leasedHolder(config.redisPrefix);
  const take = () => acquireLock(coord, lockKey, deps.tuning.lockTtlMs ?? DEFAULT_LOCK_TTL_MS, holder ? { holder } : {});
  return (await take()) ?? ((await breakLockOfDeadHolder(coord, config.redisPrefix, lockKey)) ? await take() : undefined);
}

async function underLock(deps: DownloadDeps, req: DownloadRequest, lockKey: string): Promise<DownloadOutcome> {
  const lock = await acquireFileLock(deps, lockKey);
  if (!lock) return { status: "busy", reason: "another process is downloading this file" };
  try {
    const target = await deps.repo.findDownloadTarget(req.deviationid, req.kind);
    if (!target) return { status: "skipped", reason: "no downloads row for it" };
    const now = new Date(deps.services.now());
    if (target.status === "done" || target.status === "not_downloadable" || target.status === "failed") {
      return { status: "skipped", reason: `already ${target.status.replace("_", " ")}` };
    }
    if ((target.status === "deferred_quota" || target.status === "degraded") && target.nextAttemptAt && target.nextAttemptAt > now) {
      return { status: "deferred", reason: target.degradedReason ?? "waiting for the next quota window", nextWindow: target.nextAttemptAt, bytes: 0 };
    }
    if (target.kind === "text") return await storeText(deps, target);
    return (await recordPlaced(deps, target, req)) ?? (await fetchOriginal(deps, target, req));
  } finally {
    await lock.release();
  }
}

// ---- originals ----------------------------------------------------------------------------------------

async function fetchOriginal(deps: DownloadDeps, t: DownloadTarget, req: DownloadRequest): Promise<DownloadOutcome> {
  const { repo, quota, services } = deps;
  const at = () => new Date(services.now());
  const turn = req.reservationTurn;
  if (t.deviation.isDeleted) {
    turn?.pass();
    return gone(deps, t);
  }
  // Proven before anything of the allowance is spent: the archive takes files (the preflight, once per process
  // and after every storage fault) and has room for the size the service announced.
  await deps.guard.check(t.deviation.downloadFilesize ?? 0);
  const accountId = t.accountId ?? (await defaultAccountId(deps));
  const api = await deps.apiFor(accountId);
  // The grant before the attempt is counted: an account that must log in again throws
  // ReauthRequiredError here, and the caller leaves the row wanted (src/downloads/retry.ts#isMissingGrant).
  await api.tokens.getAccessToken();
  await repo.recordDownloadAttempt(t.id, accountId, at());

  if (t.deviation.isDownloadable === false) {
    turn?.pass();
    return storeFree(deps, t, req, api, {
      status: "not_downloadable",
      reason: "the artist does not offer the original for download (is_downloadable is false)",
    });
  }
  // An earlier attempt (this process's, or one that died mid-file) already paid for this one: its answer is used.
  const paid = new PaidDownloads(services.coord, services.config.redisPrefix);
  const leftOver = await paid.recall(t.deviationid);
  if (leftOver) {
    turn?.pass();
    req.log.info({ deviationid: t.deviationid, paidAt: leftOver.at }, "resuming a download an earlier attempt paid for: no second /deviation/download");
  }
  let info: Download | undefined = leftOver?.info;
  if (!info) {
    await turn?.wait();
    let reservation: Awaited<ReturnType<typeof quota.tryReserve>>;
    try {
      reservation = await quota.tryReserve(accountId);
    } finally {
      turn?.pass();
    }
    if (!reservation) {
      const st = await quota.state(accountId);
      const reason = st.exhausted ? `${st.exhaustedReason}` : `the weekly allowance of ${st.allowance} original downloads is spent (${st.used} used this week)`;
      return storeFree(deps, t, req, api, { status: "degraded", reason, nextWindow: st.nextWindow });
    }
    try {
      info = await api.client.deviationDownload(t.deviationid);
    } catch (err) {
      await quota.release(reservation);
      const refusal = await readRefusal(api, t.deviationid, err);
      switch (refusal.kind) {
        case "quota":
          await quota.markExhausted(reservation, refusal.reason);
          return storeFree(deps, t, req, api, { status: "degraded", reason: refusal.reason, nextWindow: nextWindowOf(reservation) }, refusal.deviation);
        case "not_offered":
          return storeFree(deps, t, req, api, { status: "not_downloadable", reason: refusal.reason }, refusal.deviation);
        case "gone":
          return gone(deps, t);
        case "other":
          throw err;
      }
    }
    await paid.remember(t.deviationid, accountId, info, at());
  }
  // An expired signed URL is replaced by a new one; the new call counts against the allowance too.
  const refreshUrl = async (): Promise<string | undefined> => {
    const again = await quota.tryReserve(accountId);
    if (!again) return undefined;
    try {
      const fresh = await api.client.deviationDownload(t.deviationid);
      await paid.remember(t.deviationid, accountId, fresh, at());
      return fresh.src;
    } catch (err) {
      await quota.release(again);
      const refusal = await readRefusal(api, t.deviationid, err);
      if (refusal.kind === "quota") await quota.markExhausted(again, refusal.reason);
      if (refusal.kind === "other") throw err;
      return undefined;
    }
  };
  const filename = info.filename ?? undefined;
  const key = `${t.deviationid}-original`;
  // A stored file forgets the paid answer. A failed attempt keeps it (5 minutes, paid-downloads.ts): the job's next
  // attempt, or the process taking over from a dead one, resumes with the URL it paid for instead of paying again.
  const result =
    (await storeCompletePartial(deps, key, info)) ??
    (await transfer(deps, req, {
      key,
      url: info.src,
      refreshUrl,
      ext: (mime, url) => extensionFor({ ...(filename ? { filename } : {}), ...(mime ? { mime } : {}), url }),
      announcedSize: info.filesize ?? undefined,
    }));
  return storeOriginal(deps, t, req, { info, result, accountId });
}

/** The original transferred, stored and its row written; the paid answer forgotten then, the placed file kept when the row is not. */
async function storeOriginal(
  deps: DownloadDeps,
  t: DownloadTarget,
  req: DownloadRequest,
  { info, result, accountId }: { info: Download; result: WrittenTransfer; accountId: number },
): Promise<DownloadOutcome> {
  const { coord, config } = deps.services;
  const partial = partialityOf(t.deviation.raw as Deviation, "original");
  // What is kept of the placed file until its row is written (placed-originals.ts): in the batch's journal from before
  // its placing (a process killed before the commit), and beyond it when the row is refused.
  const placedOf = ({ id: _id, at, ...row }: StoredRow): PlacedOriginal => ({
    deviationid: t.deviationid,
    accountId,
    placedAt: at.toISOString(),
    row: { ...row, status: "done", rendition: "original" },
  });
  const rowOf = (stored: StoredFile): StoredRow => ({
    id: t.id,
    status: "done",
    rendition: "original",
    path: stored.relPath,
    size: stored.size,
    sha256: stored.sha256,
    mime: result.mime ?? null,
    width: info.width ?? null,
    height: info.height ?? null,
    etag: result.etag ?? null,
    sourceFilename: info.filename ?? null,
    sourceSize: info.filesize ?? null,
    isPartial: partial.partial,
    partialReason: partial.reason,
    bytes: result.bytesReceived,
    at: new Date(deps.services.now()),
    note: t.status === "degraded" ? `original replaces the degraded ${t.rendition ?? "rendition"}` : null,
  });
  // Set once the file is placed: its row is what a note keeps when the commit fails.
  let placedRow: StoredRow | undefined;
  const { stored, held: old } = await storeDurably(
    deps,
    result.written,
    (stored) => (placedRow = rowOf(stored)),
    (stored) => placedOf(rowOf(stored)),
  ).catch(async (err: unknown) => {
    // Placed, its row not written (the database refusing writes, or away): kept until it is, beyond the paid answer's
    // 5 minutes, so that no later attempt pays for this file again (placed-originals.ts).
    if (placedRow) {
      await new PlacedOriginals(coord, config.redisPrefix, deps.archive).keep(placedOf(placedRow));
      req.log.warn(
        { deviationid: t.deviationid, path: placedRow.path },
        "original placed but its row not written: kept, so that no later attempt pays for it again",
      );
    }
    throw err;
  });
  const upgraded = await originalRecorded(deps, t.deviationid, old, stored.relPath);
  req.log.info(
    { deviationid: t.deviationid, size: stored.size, resumed: result.resumed, upgraded, deduplicated: stored.deduplicated },
    upgraded ? "original stored: degraded rendition upgraded" : "original stored",
  );
  return {
    status: "done",
    rendition: "original",
    size: stored.size,
    bytes: result.bytesReceived,
    upgraded,
    deduplicated: stored.deduplicated,
    partial: partial.partial,
  };
}

/**
 * An original's row written, however its file came (transferred now, or placed by an earlier attempt): its paid answer
 * is forgotten and the file it replaced handled (after-store.ts). Whether it replaced a degraded rendition.
 */
async function originalRecorded(deps: DownloadDeps, deviationid: string, old: HeldBefore, relPath: string): Promise<boolean> {
  const { coord, config } = deps.services;
  await new PaidDownloads(coord, config.redisPrefix).forget(deviationid);
  await afterStore(deps, old.oldPath, relPath);
  return old.oldStatus === "degraded";
}

/**
 * An original an earlier attempt paid for and placed, whose row was not written (placed-originals.ts): the row is
 * written from that file, however long ago, with no /deviation/download and no transfer. Undefined when there is
 * none; a row that cannot be written yet keeps it for the next attempt.
 */
async function recordPlaced(deps: DownloadDeps, t: DownloadTarget, req: DownloadRequest): Promise<DownloadOutcome | undefined> {
  const { coord, config } = deps.services;
  const placed = new PlacedOriginals(coord, config.redisPrefix, deps.archive);
  const wasPlaced = await placed.recall(t.deviationid);
  if (!wasPlaced) return undefined;
  req.reservationTurn?.pass();
  const { row } = wasPlaced;
  const old = await deps.repo.markDownloadStored({ ...row, id: t.id, at: new Date(deps.services.now()) });
  await placed.forget(t.deviationid);
  const upgraded = await originalRecorded(deps, t.deviationid, old, row.path);
  req.log.info(
    { deviationid: t.deviationid, size: row.size, placedAt: wasPlaced.placedAt, upgraded },
    "original stored from the file an earlier attempt placed: no second /deviation/download",
  );
  return { status: "done", rendition: "original", size: row.size, bytes: 0, upgraded, deduplicated: false, partial: row.isPartial ?? false };
}

/**
 * A transfer that had every byte when its process died, before the file was stored: stored now from
 * the partial file, without the network (its size is the one the API announced, as a transfer checks).
 */
async function storeCompletePartial(deps: DownloadDeps, key: string, info: Download): Promise<WrittenTransfer | undefined> {
  const size = info.filesize ?? 0;
  const partial = size > 0 ? await deps.archive.partialState(key) : undefined;
  if (!partial || partial.size !== size) return undefined;
  const filename = info.filename ?? undefined;
  const written = await deps.archive.writeStream({
    key,
    body: Readable.from([]),
    ext: extensionFor({ ...(filename ? { filename } : {}), url: info.src }),
    expectedSize: size,
    resumeFrom: size,
    ...(partial.etag ? { etag: partial.etag } : {}),
  });
  return { written, mime: undefined, etag: partial.etag, bytesReceived: 0, resumed: 0 };
}

type FreeTarget = { status: "degraded"; reason: string; nextWindow: Date } | { status: "not_downloadable"; reason: string };

/**
 * Stores the best free rendition instead of the original (or, with none, records why and when to retry).
 * `known`: the deviation as the service just showed it (a refusal was read from it).
 */
async function storeFree(
  deps: DownloadDeps,
  t: DownloadTarget,
  req: DownloadRequest,
  api: AccountApi,
  goal: FreeTarget,
  known?: Deviation,
): Promise<DownloadOutcome> {
  const at = () => new Date(deps.services.now());
  const nextWindow = goal.status === "degraded" ? goal.nextWindow : null;
  // A degraded file is already here: keep it and wait for the next window.
  if (goal.status === "degraded" && t.status === "degraded" && t.path) {
    await deps.repo.markDownloadDeferred({ id: t.id, reason: goal.reason, nextAttemptAt: goal.nextWindow, at: at() });
    return { status: "deferred", reason: goal.reason, nextWindow: goal.nextWindow, bytes: 0 };
  }
  // Rendition URLs are signed and expire: the listing's copy in the mirror serves while its signature holds
  // (docs/service-behaviour.md#signed-url-expiry); otherwise the deviation as the service shows it now.
  let fresh = known ?? usableListing(t.deviation.raw as Deviation, deps.services.now());
  if (!fresh) {
    try {
      fresh = await api.client.deviation(t.deviationid);
    } catch (err) {
      if (isMissing(err)) return gone(deps, t);
      throw err;
    }
  }
  const rendition = bestFreeRendition(fresh);
  if (!rendition) {
    if (goal.status === "degraded") {
      await deps.repo.markDownloadDeferred({ id: t.id, reason: goal.reason, nextAttemptAt: goal.nextWindow, at: at() });
      return { status: "deferred", reason: goal.reason, nextWindow: goal.nextWindow, bytes: 0 };
    }
    await deps.repo.markDownloadNotDownloadable({ id: t.id, reason: goal.reason, at: at() });
    return { status: "not_downloadable", reason: goal.reason, rendition: null, bytes: 0, partial: false };
  }
  const refreshUrl = async () => {
    const again = bestFreeRendition(await api.client.deviation(t.deviationid));
    return again?.name === rendition.name ? again.src : undefined;
  };
  const result = await transfer(deps, req, {
    key: `${t.deviationid}-${rendition.name.replace(/[^A-Za-z0-9]+/g, "-")}`,
    url: rendition.src,
    refreshUrl,
    ext: (mime, url) => extensionFor({ ...(mime ? { mime } : {}), url, fallback: rendition.name.startsWith("video") ? "mp4" : "jpg" }),
    announcedSize: undefined,
  });
  const partial = partialityOf(fresh, rendition);
  const { stored, held: old } = await storeDurably(deps, result.written, (stored) => ({
    id: t.id,
    status: goal.status,
    rendition: rendition.name,
    path: stored.relPath,
    size: stored.size,
    sha256: stored.sha256,
    mime: result.mime ?? null,
    width: rendition.width ?? null,
    height: rendition.height ?? null,
    etag: result.etag ?? null,
    sourceSize: rendition.filesize ?? null,
    degradedReason: goal.reason,
    nextAttemptAt: nextWindow,
    isPartial: partial.partial,
    partialReason: partial.reason,
    bytes: result.bytesReceived,
    at: at(),
  }));
  await afterStore(deps, old.oldPath, stored.relPath);
  req.log.info(
    { deviationid: t.deviationid, rendition: rendition.name, reason: goal.reason, partial: partial.partial },
    `free rendition stored (${goal.status.replace("_", " ")})`,
  );
  return goal.status === "degraded"
    ? { status: "degraded", rendition: rendition.name, reason: goal.reason, nextWindow: goal.nextWindow, bytes: result.bytesReceived, partial: partial.partial }
    : { status: "not_downloadable", reason: goal.reason, rendition: rendition.name, bytes: result.bytesReceived, partial: partial.partial };
}

async function transfer(
  deps: DownloadDeps,
  req: DownloadRequest,
  args: {
    key: string;
    url: string;
    refreshUrl: () => Promise<string | undefined>;
    ext: (mime: string | undefined, url: string) => string;
    announcedSize: number | undefined;
  },
): Promise<WrittenTransfer> {
  try {
    return await transferToPartial({
      archive: deps.archive,
      ...args,
      signal: req.signal,
      log: req.log,
      ...(deps.tuning.retry ? { retry: deps.tuning.retry } : {}),
      ...(deps.tuning.timeouts ? { timeouts: deps.tuning.timeouts } : {}),
      limits: {
        maxBytes: deps.services.config.renditionMaxBytes,
        minBytesPerSecond: deps.services.config.minThroughput,
        cdnHosts: deps.services.config.cdnHosts,
        ...deps.tuning.limits,
      },
      ...(req.onBytes ? { onBytes: req.onBytes } : {}),
      pacing: { pacer: deps.services.pacer, key: CDN_PACER_KEY },
    });
  } catch (err) {
    throw await pauseWhenFull(deps, err, args.key);
  }
}

/** A written file made durable and placed, then its row committed, with the batch it lands in (group-commit.ts). */
async function storeDurably(
  deps: DownloadDeps,
  written: WrittenFile,
  row: (stored: StoredFile) => StoredRow,
  placed?: (stored: StoredFile) => PlacedOriginal,
): Promise<GroupStored> {
  try {
    return await deps.commits.store(written, row, placed);
  } catch (err) {
    throw await pauseWhenFull(deps, err, written.key);
  }
}

/** Out of space mid-file: nothing half-written stays behind, and the downloads pause. Returns what to throw. */
async function pauseWhenFull(deps: DownloadDeps, err: unknown, key: string): Promise<unknown> {
  if (!(err instanceof DiskFullError)) return err;
  await deps.archive.discardPartial(key);
  return deps.guard.pause(err);
}

async function defaultAccountId(deps: DownloadDeps): Promise<number> {
  const account = (await deps.services.accounts.list()).find((a) => a.kind === "user");
  if (!account) throw new UserError("no user account to download with: log in first with dvault auth login");
  return account.id;
}
