// The free-disk guard of the downloads: below the threshold they pause, with one log line (whichever
// process notices first says it) and a flag in Redis that `dvault status` and every worker can read;
// they resume when space returns.
import type { Redis } from "ioredis";
import type { Logger } from "../log.ts";
import { DiskFullError, type Archive } from "../storage/archive.ts";

export type PauseState = { since: string; freeBytes: number; minFreeBytes: number; reason: string };

/** Downloads are paused for lack of disk space: nothing is transferred until space returns. */
export class DownloadsPausedError extends Error {
  constructor(readonly state: PauseState) {
    super(state.reason);
    this.name = "DownloadsPausedError";
  }
}

export class DiskGuard {
  private readonly key: string;

  constructor(
    private readonly args: { archive: Archive; redis: Redis; prefix: string; minFreeBytes: number; log: Logger; now: () => number },
  ) {
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
    const state: PauseState = {
      since: new Date(this.args.now()).toISOString(),
      freeBytes: err.freeBytes,
      minFreeBytes: this.args.minFreeBytes,
      reason: `downloads paused: ${err.message}`,
    };
    const first = await this.args.redis.set(this.key, JSON.stringify(state), "NX");
    if (first === "OK") this.args.log.error({ freeBytes: err.freeBytes, minFreeBytes: this.args.minFreeBytes, archive: this.args.archive.root }, state.reason);
    return new DownloadsPausedError(state);
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

  /** When paused and space is back: clears the flag (one log line) and returns true. */
  async tryResume(): Promise<boolean> {
    if (!(await this.args.redis.exists(this.key))) return false;
    const free = await this.args.archive.freeBytes();
    if (free < this.args.minFreeBytes) return false;
    if ((await this.args.redis.del(this.key)) === 1) this.args.log.info({ freeBytes: free }, "downloads resumed: disk space is back above the threshold");
    return true;
  }
}
