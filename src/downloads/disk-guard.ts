// The guard of the downloads: below the free-space threshold, when a folder dvault writes into leads
// outside the archive through a link, or when the archive cannot take files at all (a folder refusing writes,
// a read-only disk, a bucket missing or refusing the credentials: src/storage/storage-fault.ts), they pause,
// with one log line (whichever process notices first says it) and a flag in the coordination store that `dvault status`, the
// alerts and every worker can read; they resume when space returns, the link is gone or a preflight proves the
// archive takes files again. A pause never fails a row: it stays wanted. Before this process spends anything
// single-use on a file (an original download of the weekly allowance), the preflight has proven the archive
// writable, and it must prove it again after any storage fault (docs/RELIABILITY.md#storage-faults).
import fs from "node:fs/promises";
import path from "node:path";
import type { Coordinator } from "../coord/coordinator.ts";
import { clearDownloadsPause, downloadsPausedKey, readDownloadsPause } from "../coord/downloads-pause.ts";
import type { Logger } from "../log.ts";
import type { Archive } from "../storage/archive.ts";
import { DiskFullError } from "../storage/free-space.ts";
import { OutsideArchiveError } from "../storage/layout.ts";
import { folderFault, type StorageFaultError } from "../storage/storage-fault.ts";

export type PauseState = {
  since: string;
  freeBytes: number;
  minFreeBytes: number;
  reason: string;
  /**
   * Why: the disk is almost full (the default of flags written before causes existed), a link leads out, or the
   * store refuses files (a folder's permissions, a read-only disk, the bucket).
   */
  cause?: "disk" | "archive_link" | "storage";
  /** With cause archive_link: the link, relative to the archive. */
  link?: string;
  /** With cause storage: the folder or bucket that refused, and its code (EPERM, EROFS, NoSuchBucket...). */
  where?: string;
  code?: string;
};

/** Downloads are paused for lack of disk space: nothing is transferred until space returns. */
export class DownloadsPausedError extends Error {
  constructor(readonly state: PauseState) {
    super(state.reason);
    this.name = "DownloadsPausedError";
  }
}

export class DiskGuard {
  private readonly key: string;
  /** The preflight passed in this process and no storage fault came since: the archive takes files. */
  private proven = false;

  constructor(private readonly args: { archive: Archive; coord: Coordinator; prefix: string; minFreeBytes: number; log: Logger; now: () => number }) {
    this.key = downloadsPausedKey(args.prefix);
  }

  /**
   * Before a transfer: throws DownloadsPausedError (pausing first) when free space less `neededBytes` (the size
   * the service announced) is below the threshold, or when the archive has not been proven to take files in this
   * process since its last storage fault and the preflight fails.
   */
  async check(neededBytes = 0): Promise<void> {
    try {
      await this.args.archive.assertSpace(neededBytes);
      if (!this.proven) await this.prove();
    } catch (err) {
      if (err instanceof DiskFullError) throw await this.pause(err);
      const fault = folderFault(err);
      if (fault) throw await this.pauseForStorage(fault);
      throw err;
    }
  }

  /** The preflight (src/storage/archive.ts#proveWritable); remembered until the next storage fault. */
  private async prove(): Promise<void> {
    await this.args.archive.proveWritable();
    this.proven = true;
  }

  /**
   * The store refused a file (storage-fault.ts): the downloads pause for every account until a preflight proves
   * it takes files again, so nothing more of the allowance is spent on files that cannot be kept.
   */
  async pauseForStorage(err: StorageFaultError): Promise<DownloadsPausedError> {
    this.proven = false;
    return this.record({
      since: new Date(this.args.now()).toISOString(),
      freeBytes: 0,
      minFreeBytes: this.args.minFreeBytes,
      reason: `downloads paused: ${err.message}; they resume on their own once it takes files`,
      cause: "storage",
      where: err.where,
      code: err.code,
    });
  }

  /** Records the pause (the first to set the flag logs the one line) and returns the error to throw. */
  async pause(err: DiskFullError): Promise<DownloadsPausedError> {
    return this.record({
      since: new Date(this.args.now()).toISOString(),
      freeBytes: err.freeBytes,
      minFreeBytes: this.args.minFreeBytes,
      reason: `downloads paused: ${err.message}`,
      cause: "disk",
    });
  }

  /**
   * A write was refused because a path led outside the archive (a planted link): nothing is written and
   * the downloads pause until the link is gone, instead of failing one row after another.
   */
  async pauseForLink(err: OutsideArchiveError): Promise<DownloadsPausedError> {
    const rel = path.isAbsolute(err.relPath) ? path.relative(this.args.archive.root, err.relPath) : err.relPath;
    const link = (await outsideLink(this.args.archive, rel)) ?? rel;
    return this.record({
      since: new Date(this.args.now()).toISOString(),
      freeBytes: 0,
      minFreeBytes: this.args.minFreeBytes,
      reason: `downloads paused: the archive contains a link that points outside it: ${path.join(this.args.archive.root, link)}. Remove or replace it with a folder; downloads resume on their own`,
      cause: "archive_link",
      link,
    });
  }

  private async record(state: PauseState): Promise<DownloadsPausedError> {
    const first = await this.args.coord.putIfAbsent(this.key, JSON.stringify(state));
    if (first)
      this.args.log.error(
        { cause: state.cause, freeBytes: state.freeBytes, minFreeBytes: this.args.minFreeBytes, archive: this.args.archive.root },
        state.reason,
      );
    const current = first ? state : ((await this.pausedState()) ?? state);
    return new DownloadsPausedError(current);
  }

  async pausedState(): Promise<PauseState | undefined> {
    const raw = await readDownloadsPause(this.args.coord, this.args.prefix);
    if (!raw) return undefined;
    try {
      return JSON.parse(raw) as PauseState;
    } catch {
      return { since: "", freeBytes: 0, minFreeBytes: this.args.minFreeBytes, reason: "downloads paused" };
    }
  }

  /** When paused and the cause is gone (space is back, the link removed): clears the flag (one log line) and returns true. */
  async tryResume(): Promise<boolean> {
    const state = await this.pausedState();
    if (!state) return false;
    if (state.cause === "storage") {
      try {
        await this.prove();
      } catch (err) {
        if (folderFault(err)) return false;
        throw err;
      }
      if ((await clearDownloadsPause(this.args.coord, this.args.prefix)) > 0)
        this.args.log.info({ where: state.where }, "downloads resumed: the archive takes files again (the preflight passed)");
      return true;
    }
    if (state.cause === "archive_link") {
      try {
        this.args.archive.checkLayout();
        if (state.link) this.args.archive.assertInside(path.join(this.args.archive.root, state.link));
      } catch (err) {
        if (err instanceof OutsideArchiveError) return false;
        throw err;
      }
      if ((await clearDownloadsPause(this.args.coord, this.args.prefix)) > 0)
        this.args.log.info({ link: state.link }, "downloads resumed: the archive's folders lead nowhere outside it any more");
      return true;
    }
    const free = await this.args.archive.freeBytes();
    if (free < this.args.minFreeBytes) return false;
    if ((await clearDownloadsPause(this.args.coord, this.args.prefix)) > 0)
      this.args.log.info({ freeBytes: free }, "downloads resumed: disk space is back above the threshold");
    return true;
  }
}

/** The first component of `relPath` (relative to the root) that is a link resolving outside the archive. */
async function outsideLink(archive: Archive, relPath: string): Promise<string | undefined> {
  const parts = relPath.split(/[\\/]+/).filter(Boolean);
  const realRoot = await fs.realpath(archive.root).catch(() => archive.root);
  for (let i = 1; i <= parts.length; i++) {
    const rel = parts.slice(0, i).join("/");
    const abs = path.join(archive.root, rel);
    const st = await fs.lstat(abs).catch(() => undefined);
    if (!st) return undefined;
    if (!st.isSymbolicLink()) continue;
    const real = await fs.realpath(abs).catch(() => undefined);
    const inside = real !== undefined && (real === realRoot || real.startsWith(realRoot + path.sep));
    if (!inside) return rel;
  }
  return undefined;
}
