// Bounds on what an answer may cost while it streams in (docs/service-behaviour.md#hostile-answers): a
// byte cap checked before anything is parsed, and a throughput floor (after a grace period, a window whose
// bytes fall below the floor aborts the transfer). A got handler installs the watch on every request of
// an instance; when a bound trips, the request is cancelled and the cause is left for the caller to throw.
import type { HandlerFunction, Options } from "got";
import { formatBytes } from "../text/bytes.ts";

export type BodyLimits = {
  /** The largest body read, in bytes. */
  maxBytes: number;
  /** Bytes per second below which a transfer is too slow; 0 turns the floor off. */
  minBytesPerSecond: number;
  /** No floor before this much time has passed. */
  graceMs?: number;
  /** The window over which throughput is measured. */
  windowMs?: number;
  now?: () => number;
};

export const DEFAULT_GRACE_MS = 10_000;
export const DEFAULT_WINDOW_MS = 30_000;

/** Why a bound tripped: the caller turns it into its own error. */
export type BoundTripped =
  | { kind: "too_large"; bytes: number; maxBytes: number }
  | { kind: "too_slow"; seconds: number; bytesPerSecond: number; minBytesPerSecond: number };

/** Where the handler leaves what tripped: on the request's context object. */
const TRIPPED = Symbol("dvault.bodyGuard.tripped");
/** And how far the body got: bytes of the current attempt, and when the request started. */
const PROGRESS = Symbol("dvault.bodyGuard.progress");
type Tripped = { [TRIPPED]?: BoundTripped; [PROGRESS]?: { bytes: number; startedAt: number } };

/** What tripped for the request these options belong to (a CancelError's `options`), if anything. */
export function trippedBound(options: Pick<Options, "context"> | undefined): BoundTripped | undefined {
  return (options?.context as Tripped | undefined)?.[TRIPPED];
}

/**
 * "timed out after 31 s at 0.1 KiB/s": what a request these options belong to had received when a timeout
 * (got's total deadline, or a stalled socket) ended it; undefined when the guard never saw the request.
 */
export function timeoutDetail(options: Pick<Options, "context"> | undefined, now: () => number = Date.now): string | undefined {
  const progress = (options?.context as Tripped | undefined)?.[PROGRESS];
  if (!progress) return undefined;
  const ms = Math.max(1, now() - progress.startedAt);
  return `timed out after ${Math.round(ms / 1000)} s at ${(progress.bytes / 1024 / (ms / 1000)).toFixed(1)} KiB/s`;
}

/**
 * Watches one transfer's progress: true (and `trip` called once) when it passes the byte cap, or when,
 * after the grace, the bytes of the last window are below the floor. Pure apart from the clock; shared by
 * API answers and file downloads.
 */
export class ThroughputWatch {
  private started: number;
  private readonly samples: Array<{ at: number; bytes: number }> = [];
  private tripped: BoundTripped | undefined;

  constructor(
    private readonly limits: BodyLimits,
    private readonly trip: (why: BoundTripped) => void,
  ) {
    this.started = this.now();
    this.samples.push({ at: this.started, bytes: 0 });
  }

  private now(): number {
    return (this.limits.now ?? Date.now)();
  }

  /** Total bytes received so far; checks the cap at once, the floor on each call. */
  progress(bytes: number): BoundTripped | undefined {
    if (this.tripped) return this.tripped;
    if (bytes > this.limits.maxBytes) return this.fire({ kind: "too_large", bytes, maxBytes: this.limits.maxBytes });
    const at = this.now();
    // Fewer bytes than before: a retry started over; its window starts now.
    if (bytes < (this.samples[this.samples.length - 1]?.bytes ?? 0)) {
      this.samples.length = 0;
      this.started = at;
    }
    this.samples.push({ at, bytes });
    return this.checkFloor(at, bytes);
  }

  /** The floor checked without new bytes (a timer calls it: a stalled transfer sends no progress). */
  tick(): BoundTripped | undefined {
    if (this.tripped) return this.tripped;
    const last = this.samples[this.samples.length - 1]?.bytes ?? 0;
    return this.checkFloor(this.now(), last);
  }

  private checkFloor(at: number, bytes: number): BoundTripped | undefined {
    const floor = this.limits.minBytesPerSecond;
    const grace = this.limits.graceMs ?? DEFAULT_GRACE_MS;
    const windowMs = this.limits.windowMs ?? DEFAULT_WINDOW_MS;
    if (floor <= 0 || at - this.started < grace + windowMs) return undefined;
    // Drop samples older than the window, keeping the one the window starts from.
    while (this.samples.length > 1 && (this.samples[1]?.at ?? at) <= at - windowMs) this.samples.shift();
    const from = this.samples[0] ?? { at: this.started, bytes: 0 };
    const span = Math.max(1, at - from.at) / 1000;
    const rate = (bytes - from.bytes) / span;
    if (rate >= floor) return undefined;
    return this.fire({
      kind: "too_slow",
      seconds: Math.round((at - this.started) / 1000),
      bytesPerSecond: Math.round(bytes / Math.max(1, (at - this.started) / 1000)),
      minBytesPerSecond: floor,
    });
  }

  private fire(why: BoundTripped): BoundTripped {
    this.tripped = why;
    this.trip(why);
    return why;
  }
}

/**
 * A got handler that cancels a non-stream request past the byte cap or under the floor, recording why.
 * got runs no hook for a cancelled request: `onTrip` is where its owner lets go of what the request held
 * (a pacer permit).
 */
export function bodyGuardHandler(limits: BodyLimits, onTrip?: (options: Options) => void): HandlerFunction {
  return (options, next) => {
    const result = next(options);
    if (options.isStream) return result;
    const promise = result as unknown as {
      on(event: string, fn: (p: { transferred: number }) => void): unknown;
      cancel(): void;
      finally(fn: () => void): unknown;
    };
    const context = options.context as Tripped;
    const progress = { bytes: 0, startedAt: (limits.now ?? Date.now)() };
    context[PROGRESS] = progress;
    const watch = new ThroughputWatch(limits, (why) => {
      context[TRIPPED] = why;
      promise.cancel();
      onTrip?.(options);
    });
    const timer = setInterval(() => watch.tick(), 1000);
    timer.unref();
    promise.on("downloadProgress", (p) => {
      progress.bytes = p.transferred;
      watch.progress(p.transferred);
    });
    // The watch ends with the request, however it ends.
    void Promise.resolve(promise.finally(() => clearInterval(timer))).catch(() => undefined);
    return result;
  };
}

/** "timed out after 41 s at 0.5 KiB/s" / "response too large (more than 32 MiB)". */
export function describeBound(why: BoundTripped): string {
  if (why.kind === "too_large") return `response too large (more than ${formatBytes(why.maxBytes)})`;
  return `timed out after ${why.seconds} s at ${(why.bytesPerSecond / 1024).toFixed(1)} KiB/s (the floor is ${(why.minBytesPerSecond / 1024).toFixed(0)} KiB/s)`;
}
