// What `dvault download --once` reports (run-once.ts): the summary it counts as the files' answers come in, and
// the progress line it logs every few seconds meanwhile.
import type { DownloadsLeft } from "../db/download.repository.ts";
import type { Logger } from "../log.ts";
import type { PauseState } from "./disk-guard.ts";
import type { DownloadOutcome } from "./outcome.ts";
import type { LinksResult } from "./readable-links.ts";

export type DownloadSummary = {
  done: number;
  /** Of `done`: degraded renditions replaced by their original. */
  upgraded: number;
  degraded: number;
  deferred: number;
  notDownloadable: number;
  failed: number;
  skipped: number;
  /** Held by another process until the end of the run. */
  busy: number;
  /** Files stored that are only part of the work (first image, blurred). */
  partial: number;
  /** Bytes received over the network. */
  bytes: number;
  /** When the allowance refills for what was deferred or degraded. */
  nextWindow: Date | null;
  paused: PauseState | undefined;
  links: LinksResult | undefined;
  /** The readable tree's write stopped at a link something else stands in the way of (LinkBlockedError's words). */
  linksBlocked?: string;
  /** Failed in this run; `nextAttemptAt` null when the failure is permanent (never retried on its own). */
  failures: { deviationid: string; kind: string; error: string; nextAttemptAt: Date | null }[];
  /** Accounts that must log in again (before or during the run): their rows were left wanted, untried. */
  needsLogin: { account: string; message: string }[];
  /** Stopped before the end (SIGINT, SIGTERM): what is left is in `left`. */
  interrupted: boolean;
  /** What is left of the selected accounts' downloads when the run ended, by the table's one definition of "due now". */
  left: DownloadsLeft;
  durationMs: number;
};

const NOTHING_LEFT: DownloadsLeft = {
  dueNow: 0,
  queued: 0,
  deferred: 0,
  degradedWaiting: 0,
  nextWindow: null,
  retryLater: 0,
  nextRetry: null,
  failedForGood: 0,
};

export function emptySummary(): DownloadSummary {
  return {
    done: 0,
    upgraded: 0,
    degraded: 0,
    deferred: 0,
    notDownloadable: 0,
    failed: 0,
    skipped: 0,
    busy: 0,
    partial: 0,
    bytes: 0,
    nextWindow: null,
    paused: undefined,
    links: undefined,
    failures: [],
    needsLogin: [],
    interrupted: false,
    left: NOTHING_LEFT,
    durationMs: 0,
  };
}

/** Counts one answer of download-file.ts (never "busy": that one counts only once it is given up); true when a file was stored. */
export function countOutcome(s: DownloadSummary, o: DownloadOutcome): boolean {
  switch (o.status) {
    case "done":
      s.done++;
      if (o.upgraded) s.upgraded++;
      if (o.partial) s.partial++;
      return true;
    case "degraded":
      s.degraded++;
      if (o.partial) s.partial++;
      s.nextWindow = earliest(s.nextWindow, o.nextWindow);
      return true;
    case "deferred":
      s.deferred++;
      s.nextWindow = earliest(s.nextWindow, o.nextWindow);
      return false;
    case "not_downloadable":
      s.notDownloadable++;
      if (o.partial) s.partial++;
      return o.rendition !== null && o.rendition !== "";
    case "skipped":
      s.skipped++;
      return false;
    case "busy":
      return false;
  }
}

/** Logs the counts and the rate every `everyMs` until the returned function is called. */
export function startProgressLine(s: DownloadSummary, log: Logger, everyMs: number): () => void {
  let lastBytes = 0;
  let lastAt = Date.now();
  const timer = setInterval(() => {
    const now = Date.now();
    const rate = ((s.bytes - lastBytes) / Math.max(1, now - lastAt)) * 1000;
    lastBytes = s.bytes;
    lastAt = now;
    const { done, degraded, deferred, notDownloadable, failed, bytes } = s;
    log.info({ done, degraded, deferred, notDownloadable, failed, bytes, mbPerS: +(rate / 1e6).toFixed(1) }, "downloading");
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

function earliest(a: Date | null, b: Date): Date {
  return a === null || b < a ? b : a;
}
