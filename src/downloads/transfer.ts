// One file from the CDN into the archive, streamed end to end: got's stream straight into
// Archive.writeStream (sha256 on the way), resumed with a Range request from the partial file when the server
// allows it, with the signed URL fetched again when it has expired. transferToPartial leaves the whole file in
// its partial file for the caller to make durable and place (the downloads do it for a batch together with the
// rows: group-commit.ts); transferToArchive places it at once (fsync, atomic rename, its folder fsynced).
//
// One retry layer per failure kind: a call makes one attempt and throws a classified error
// (TransferError, TransferBoundError, an ApiError for a missing file, a ThrottleDelayError for a CDN throttle);
// the job's attempts and backoff retry it, and the next attempt resumes the partial file with Range/If-Range
// (got would retry a stream by starting it over). The loop below only follows redirects one hop at a time (each
// target host checked against the CDN family before anything is asked of it), fetches a new signed URL for an
// expired one, and starts over when the server cannot continue the partial file: steps, not retries.
//
// Every transfer is bounded (docs/service-behaviour.md#hostile-answers): no more bytes than the API
// announced (else the rendition cap), no slower than the throughput floor after a grace period, and no
// longer than a total deadline. A tripped bound frees the slot; the row is tried again later.
import type { IncomingHttpHeaders } from "node:http";
import got, { type Request } from "got";
import { DEFAULT_GRACE_MS, DEFAULT_WINDOW_MS, ThroughputWatch } from "../api/body-guard.ts";
import { ApiError, ThrottleDelayError } from "../api/errors.ts";
import { DEFAULT_USER_AGENT } from "../api/http.ts";
import type { Pacer, Permit } from "../api/pacer.ts";
import type { Logger } from "../log.ts";
import type { Archive, StoredFile, WrittenFile } from "../storage/archive.ts";
import { FileTooLargeError } from "../storage/stream-write.ts";
import { RedirectRefusedError, TransferBoundError, TransferError } from "./transfer-errors.ts";

export { RedirectRefusedError, TransferBoundError, TransferError };

export type TransferRetry = {
  /** New signed URLs fetched after the CDN refused one (expired) before giving up. */
  urlRefreshes: number;
};

export const DEFAULT_TRANSFER_RETRY: TransferRetry = { urlRefreshes: 3 };

export type TransferTimeouts = { connectMs: number; responseMs: number; idleMs: number };
export const DEFAULT_TRANSFER_TIMEOUTS: TransferTimeouts = { connectMs: 10_000, responseMs: 30_000, idleMs: 60_000 };

/** What one transfer may cost (DVAULT_RENDITION_MAX_BYTES, DVAULT_MIN_THROUGHPUT, DVAULT_CDN_HOSTS). */
export type TransferLimits = {
  /** The cap of a file whose size nobody announced (free renditions); an announced size is its own cap. */
  maxBytes: number;
  /** Bytes per second below which an attempt is aborted, after the grace, over the window; 0 = off. */
  minBytesPerSecond: number;
  graceMs: number;
  windowMs: number;
  /** Hosts a redirect may lead to besides the URL's own: "*.wixmp.com" is any subdomain of wixmp.com. */
  cdnHosts: readonly string[];
  /** The clock of the throughput floor (tests move it). */
  now?: () => number;
};

export const DEFAULT_TRANSFER_LIMITS: TransferLimits = {
  maxBytes: 512 * 2 ** 20,
  minBytesPerSecond: 20 * 1024,
  graceMs: DEFAULT_GRACE_MS,
  windowMs: DEFAULT_WINDOW_MS,
  cdnHosts: ["*.wixmp.com", "*.deviantart.net", "*.deviantart.com"],
};

/** Redirects followed in one attempt before the chain counts as a refusal. */
const MAX_REDIRECTS = 5;

export type TransferArgs = {
  archive: Archive;
  /** Names the partial file: stable per deviation and rendition, so a later attempt (or process) resumes it. */
  key: string;
  /** The signed URL to start with. */
  url: string;
  /** A fresh signed URL after the CDN refused the current one (401/403); undefined when none can be had. */
  refreshUrl?: () => Promise<string | undefined>;
  /** Extension of the stored file, when known before the response (from the API's filename). */
  ext: (contentType: string | undefined, url: string) => string;
  /** The size the API announced; checked against the CDN's Content-Length. */
  announcedSize?: number | undefined;
  signal?: AbortSignal | undefined;
  log: Logger;
  retry?: Partial<TransferRetry>;
  timeouts?: Partial<TransferTimeouts>;
  limits?: Partial<TransferLimits>;
  /** Bytes as they arrive (progress of the CLI). */
  onBytes?: (n: number) => void;
  /**
   * The pacer CDN requests wait their turn at, under a key of their own: a 429 or CloudFront's HTML 403 blocks
   * the key and ends the transfer with a ThrottleDelayError (the job waits, no attempt spent) instead of a
   * sleep here (docs/service-behaviour.md#cdn-block-403). Without one, such an answer is retried like a 5xx.
   */
  pacing?: { pacer: Pacer; key: string; maxWaitMs?: number };
};

/** The pacer key of CDN transfers: the CDN's velocity filter watches the address, whatever the account. */
export const CDN_PACER_KEY = "cdn";

/** What a transfer learnt besides the bytes. */
type TransferFacts = {
  mime: string | undefined;
  etag: string | undefined;
  /** Bytes received over the network by this call, all attempts. */
  bytesReceived: number;
  /** Attempts that resumed a partial file with a Range request and got 206. */
  resumed: number;
};

export type TransferResult = StoredFile & TransferFacts;

/** A transfer whose bytes are whole in the partial file, not yet durable or placed (Archive.placeWritten). */
export type WrittenTransfer = TransferFacts & { written: WrittenFile };

/** The file fetched and placed at once: fsynced, renamed to its content address, its folder fsynced. */
export async function transferToArchive(args: TransferArgs): Promise<TransferResult> {
  const { written, ...facts } = await transferToPartial(args);
  const [placed] = await args.archive.placeWritten([written]);
  if (placed?.status !== "fulfilled") throw placed?.reason;
  return { ...placed.value, ...facts };
}

type Opened = { stream: Request; status: number; headers: IncomingHttpHeaders };

export async function transferToPartial(args: TransferArgs): Promise<WrittenTransfer> {
  const retry = { ...DEFAULT_TRANSFER_RETRY, ...args.retry };
  const timeouts = { ...DEFAULT_TRANSFER_TIMEOUTS, ...args.timeouts };
  const limits = { ...DEFAULT_TRANSFER_LIMITS, ...args.limits };
  const announced = args.announcedSize !== undefined && args.announcedSize > 0 ? args.announcedSize : undefined;
  const { archive, key, signal, log } = args;
  let url = args.url;
  let redirects = 0;
  let refreshes = 0;
  let bytesReceived = 0;
  let resumed = 0;
  // One attempt at the bytes (a failure throws, and the job's attempts retry it, resuming by Range); the loop
  // only follows redirects, fetches a fresh signed URL after an expired one, and starts over after a partial
  // answer that does not continue the partial file.
  for (;;) {
    signal?.throwIfAborted();
    const partial = await archive.partialState(key);
    const canResume = partial.size > 0 && isStrong(partial.etag);
    const before = partial.size;
    let opened: Opened | undefined;
    let permit: Permit | undefined;
    const startedAt = Date.now();
    try {
      const { pacing } = args;
      permit = pacing
        ? await pacing.pacer.acquire(pacing.key, { operation: "cdn.file", maxWaitMs: pacing.maxWaitMs ?? 10_000, ...(signal ? { signal } : {}) })
        : undefined;
      opened = await open(
        url,
        canResume ? { range: `bytes=${partial.size}-`, "if-range": partial.etag as string } : {},
        signal,
        timeouts,
        deadlineMs(announced ?? limits.maxBytes, limits),
      );
      const { status, headers, stream } = opened;
      const throttled = status === 429 || (status === 403 && /^text\/html/i.test(headerOf(headers, "content-type") ?? ""));
      await permit?.release(throttled ? "throttled" : "success");
      if (throttled && pacing) {
        stream.destroy();
        const { waitMs } = await pacing.pacer.status(pacing.key);
        const now = pacing.pacer.clock.now();
        throw new ThrottleDelayError(
          { operation: "cdn.file", status, waitMs, pacerKey: pacing.key, retryAt: now + waitMs },
          `the CDN ${status === 429 ? "throttled the transfer (HTTP 429)" : "blocked the transfer (an HTML 403: a throttle)"}; transfers wait ${Math.ceil(waitMs / 1000)} s`,
        );
      }
      if (throttled) {
        stream.destroy();
        throw new TransferError(`the CDN throttled the transfer (HTTP ${status})`, status, true);
      }
      if (status >= 300 && status < 400 && status !== 304) {
        stream.destroy();
        url = nextHop(url, headerOf(headers, "location"), limits.cdnHosts, ++redirects);
        continue;
      }
      if (status === 401 || status === 403) {
        stream.destroy();
        const fresh = refreshes < retry.urlRefreshes && args.refreshUrl ? await args.refreshUrl() : undefined;
        if (!fresh) throw new TransferError(`the CDN refused the signed URL (HTTP ${status}) and no fresh one could be had`, status, true);
        refreshes++;
        url = fresh;
        log.info({ status, refreshes }, "signed URL refused by the CDN (expired): fetched a new one");
        continue;
      }
      if (status === 416) {
        stream.destroy();
        await archive.discardPartial(key);
        throw new TransferError("the CDN refused the resume range (HTTP 416): starting over", status, true);
      }
      if (status === 404 || status === 410) {
        stream.destroy();
        throw new ApiError(
          { kind: "not_found", operation: "cdn.file", status },
          `the CDN has no such file (HTTP ${status}); the deviation may have been removed`,
        );
      }
      if (status !== 200 && status !== 206) {
        stream.destroy();
        throw new TransferError(`the CDN answered HTTP ${status}`, status, status >= 500 || status === 429 || status === 408);
      }
      let etag = headerOf(headers, "etag");
      let resumeFrom = 0;
      let total = contentLength(headers);
      if (status === 206) {
        const range = contentRange(headers);
        // A 206 of another version or offset cannot be appended: start over. One without an ETag is the one If-Range named.
        if (!range || range.start !== partial.size || (etag !== undefined && etag !== partial.etag)) {
          stream.destroy();
          await archive.discardPartial(key);
          log.info({ expectedStart: partial.size, got: range?.start }, "the CDN's partial answer does not continue the partial file: starting over");
          continue;
        }
        ({ start: resumeFrom, total } = range);
        etag ??= partial.etag;
        resumed++;
        log.info({ from: resumeFrom, total }, "resuming a partial file with a Range request");
      }
      if (total !== undefined && args.announcedSize !== undefined && args.announcedSize > 0 && total !== args.announcedSize) {
        stream.destroy();
        throw new TransferError(`the CDN's size (${total} bytes) disagrees with the API's filesize (${args.announcedSize} bytes)`, status, true);
      }
      const expectedSize = total ?? announced;
      // The API's size is the cap; without one, the configured cap, whatever the CDN claims.
      const maxBytes = announced ?? limits.maxBytes;
      if (expectedSize !== undefined && expectedSize > maxBytes) {
        stream.destroy();
        throw new TransferBoundError({ kind: "too_large", bytes: expectedSize, maxBytes });
      }
      guard(stream, limits);
      if (args.onBytes) {
        let last = 0;
        stream.on("downloadProgress", (p: { transferred: number }) => {
          args.onBytes?.(p.transferred - last);
          last = p.transferred;
        });
      }
      const contentType = headerOf(headers, "content-type");
      const written = await archive.writeStream({
        key,
        body: stream,
        ext: args.ext(contentType, url),
        ...(expectedSize !== undefined ? { expectedSize } : {}),
        maxBytes,
        resumeFrom,
        ...(etag !== undefined ? { etag } : {}),
        ...(signal ? { signal } : {}),
      });
      bytesReceived += written.size - resumeFrom;
      return { written, mime: contentType?.split(";")[0]?.trim(), etag, bytesReceived, resumed };
    } catch (caught) {
      await permit?.release("error");
      opened?.stream.destroy();
      const after = (await archive.partialState(key).catch(() => ({ size: 0 }))).size;
      bytesReceived += Math.max(0, after - before);
      throw asBoundError(caught, after - before, startedAt);
    }
  }
}

function open(url: string, headers: Record<string, string>, signal: AbortSignal | undefined, t: TransferTimeouts, totalMs: number): Promise<Opened> {
  const stream = got.stream(url, {
    headers: { "user-agent": DEFAULT_USER_AGENT, "accept-encoding": "identity", ...headers },
    decompress: false,
    throwHttpErrors: false,
    followRedirect: false,
    retry: { limit: 0 },
    timeout: { connect: t.connectMs, response: t.responseMs, socket: t.idleMs, request: totalMs },
    ...(signal ? { signal } : {}),
  });
  // Later errors reach the archive through the stream's iterator; this listener only keeps an error
  // raised before iteration starts from becoming an uncaught exception.
  stream.on("error", () => undefined);
  return new Promise<Opened>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    stream.once("error", onError);
    stream.once("response", (res: { statusCode: number; headers: IncomingHttpHeaders }) => {
      stream.off("error", onError);
      resolve({ stream, status: res.statusCode, headers: res.headers });
    });
  });
}

/**
 * The total deadline of one attempt: the time the whole file takes at the floor, plus ten minutes; with
 * the floor off, six hours.
 */
function deadlineMs(bytes: number, limits: TransferLimits): number {
  if (limits.minBytesPerSecond <= 0) return 6 * 3600_000;
  return 10 * 60_000 + Math.ceil((bytes / limits.minBytesPerSecond) * 1000);
}

/**
 * Watches the body as it streams: past the floor the stream is destroyed with a TransferBoundError, which
 * reaches the archive's reader (the partial file stays for a resume). The size cap is the archive's.
 */
function guard(stream: Request, limits: TransferLimits): void {
  const watch = new ThroughputWatch(
    {
      maxBytes: Number.POSITIVE_INFINITY,
      minBytesPerSecond: limits.minBytesPerSecond,
      graceMs: limits.graceMs,
      windowMs: limits.windowMs,
      ...(limits.now ? { now: limits.now } : {}),
    },
    (why) => stream.destroy(new TransferBoundError(why)),
  );
  const timer = setInterval(() => watch.tick(), Math.min(1000, Math.max(50, limits.windowMs / 10)));
  timer.unref();
  stream.on("downloadProgress", (p: { transferred: number }) => void watch.progress(p.transferred));
  stream.once("close", () => clearInterval(timer));
}

/** A timeout of got, or the archive's size cap, as the bound it is; anything else as it came. */
function asBoundError(err: unknown, bytes: number, startedAt: number): unknown {
  if (err instanceof FileTooLargeError) return new TransferBoundError({ kind: "too_large", bytes: err.actual, maxBytes: err.maxBytes });
  if (err instanceof Error && err.name === "TimeoutError") {
    const ms = Math.max(1, Date.now() - startedAt);
    return new TransferBoundError({ kind: "deadline", seconds: Math.round(ms / 1000), bytesPerSecond: Math.max(0, bytes) / (ms / 1000) });
  }
  return err;
}

/** The next URL of a redirect, when its host is the URL's own or one of the CDN family. */
function nextHop(from: string, location: string | undefined, cdnHosts: readonly string[], hops: number): string {
  if (!location) throw new TransferError("the CDN answered a redirect without a Location", undefined, true);
  const to = new URL(location, from);
  const source = new URL(from);
  if (to.protocol !== source.protocol && to.protocol !== "https:") throw new RedirectRefusedError(source.host, to.host);
  if (to.host !== source.host && !hostMatches(to.hostname, cdnHosts)) throw new RedirectRefusedError(source.host, to.host);
  if (hops > MAX_REDIRECTS) throw new TransferError(`the CDN redirected more than ${MAX_REDIRECTS} times`, undefined, true);
  return to.toString();
}

/** "*.wixmp.com" matches wixmp.com and any name under it; other patterns match exactly. */
export function hostMatches(hostname: string, patterns: readonly string[]): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  return patterns.some((p) => {
    const pattern = p.toLowerCase().trim();
    if (pattern.startsWith("*.")) return host === pattern.slice(2) || host.endsWith(pattern.slice(1));
    return host === pattern;
  });
}

/**
 * Whether `etag` may name the bytes a resume continues: a strong one. A weak one (W/"…") may stay the same while the
 * bytes change (a re-encoding), so RFC 9110 forbids it in If-Range; a server that compares it anyway would answer a
 * 206 of other bytes, spliced onto the partial file (test/medium/downloads-faults.test.ts).
 */
function isStrong(etag: string | undefined): etag is string {
  return etag !== undefined && !etag.startsWith("W/");
}

function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function contentLength(headers: IncomingHttpHeaders): number | undefined {
  const v = headerOf(headers, "content-length");
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

function contentRange(headers: IncomingHttpHeaders): { start: number; end: number; total: number | undefined } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(headerOf(headers, "content-range") ?? "");
  if (!m) return undefined;
  return { start: Number(m[1]), end: Number(m[2]), total: m[3] === "*" ? undefined : Number(m[3]) };
}
