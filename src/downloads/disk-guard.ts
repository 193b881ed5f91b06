// The guard of the downloads: below the free-space threshold, or when a folder dvault writes into leads
// outside the archive through a link, they pause, with one log line (whichever process notices first
// says it) and a flag in Redis that `dvault status`, the alerts and every worker can read; they resume
// when space returns or the link is gone. A pause never fails a row: it stays wanted.
import fs from "node:fs/promises";
import path from "node:path";
import type { Redis } from "ioredis";
import type { Logger } from "../log.ts";
import { DiskFullError, OutsideArchiveError, type Archive } from "../storage/archive.ts";

export type PauseState = {
  since: string;
  freeBytes: number;
  minFreeBytes: number;
  reason: string;
  /** Why: the disk is almost full (the default of flags written before causes existed), or a link leads out. */
  cause?: "disk" | "archive_link";
  /** With cause archive_link: the link, relative to the archive. */
  link?: string;
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

  constructor(private readonly args: { archive: Archive; redis: Redis; prefix: string; minFreeBytes: number; log: Logger; now: () => number }) {
    this.key = `${args.prefix}:downloads:paused`;
  }

  /** Before a transfer: throws DownloadsPausedError (pausing first) when free space is below the threshold. */
  async check(neededBytes = 0): Promise<void> {
    try {
      await this.args.archive.assertSpace(neededBytes);
    } catch (err) {
      if (err instanceof DiskFullError) throw await this.pause(err);
      throw err;
    }
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
    const first = await this.args.redis.set(this.key, JSON.stringify(state), "NX");
    if (first === "OK")
      this.args.log.error(
        { cause: state.cause, freeBytes: state.freeBytes, minFreeBytes: this.args.minFreeBytes, archive: this.args.archive.root },
        state.reason,
      );
    const current = first === "OK" ? state : ((await this.pausedState()) ?? state);
    return new DownloadsPausedError(current);
  }

  async pausedState(): Promise<PauseState | undefined> {
    const raw = await this.args.redis.get(this.key);
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
    if (state.cause === "archive_link") {
      try {
        this.args.archive.checkLayout();
        if (state.link) this.args.archive.assertInside(path.join(this.args.archive.root, state.link));
      } catch (err) {
        if (err instanceof OutsideArchiveError) return false;
        throw err;
      }
      if ((await this.args.redis.del(this.key)) === 1)
        this.args.log.info({ link: state.link }, "downloads resumed: the archive's folders lead nowhere outside it any more");
      return true;
    }
    const free = await this.args.archive.freeBytes();
    if (free < this.args.minFreeBytes) return false;
    if ((await this.args.redis.del(this.key)) === 1) this.args.log.info({ freeBytes: free }, "downloads resumed: disk space is back above the threshold");
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
