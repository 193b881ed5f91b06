// The HTTP transport's settings and counters: the headers the service expects, the retry policy, the
// options createHttpTransport takes, and how request parameters are encoded.
import type { Logger } from "../../log.ts";
import { VERSION } from "../../version.ts";
import type { Pacer } from "../pacer.ts";
import type { TokenProvider } from "../token-provider.ts";
import type { ApiTransport, Params, UnreadableSink } from "../transport.ts";

/**
 * gallery-dl (the most exercised client of this API) pins 20210526, and the response shapes
 * (docs/service-behaviour.md#object-shapes) were taken from clients on that version or compatible ones.
 * Without the header the service answers with its latest minor version, which can add or change fields
 * without notice (docs/service-behaviour.md#minor-version).
 */
export const DEFAULT_MINOR_VERSION = "20210526";
export const API_PATH = "/api/v1/oauth2";

/** The CDN answers requests without a User-Agent with 403 "Request blocked" (docs/service-behaviour.md#user-agent-required). */
export const DEFAULT_USER_AGENT = `dvault/${VERSION} (+https://github.com/dvault/dvault)`;

export type RetryPolicy = {
  /** Retries after 500/502/5xx (DA's guidance: up to 3). GET only: a failed POST may have half-happened. */
  serverRetries: number;
  /** Retries after a connection error or timeout. GET only. */
  networkRetries: number;
  /** Retries after a throttle signal, each after the pacer's wait; then ThrottleDelayError. */
  throttleRetries: number;
  /** First retry delay for server/network errors, doubled per retry (plus ≤ 20 % jitter). */
  baseDelayMs: number;
};

export const DEFAULT_RETRY: RetryPolicy = { serverRetries: 3, networkRetries: 3, throttleRetries: 5, baseDelayMs: 1000 };

export type HttpTransportOptions = {
  /** e.g. https://www.deviantart.com; the API root is apiBase + "/api/v1/oauth2". */
  apiBase: string;
  tokens: TokenProvider;
  pacer: Pacer;
  log: Logger;
  minorVersion?: string;
  userAgent?: string;
  /** Per attempt. Keep it below the pacer's lockTtlMs. */
  timeoutMs?: number;
  /** Default for ApiRequest.maxWaitMs. */
  maxWaitMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Process-wide totals that every transport also counts into (services owns one, /metrics reads it). */
  totals?: TransportStats;
  /** Where answers that could not be read are kept (docs/service-behaviour.md#tolerant-reading). */
  unreadable?: UnreadableSink;
  /** The largest answer read, enforced while it streams (DVAULT_API_MAX_BODY; default 32 MiB). */
  maxBodyBytes?: number;
  /** Answers slower than this (bytes per second, after a 10 s grace, over 30 s) are aborted; 0 = off. */
  minBytesPerSecond?: number;
};

/** In-memory counters for metrics and `dvault status`. */
export type TransportStats = {
  /** operation → HTTP status (or "network") → responses seen, retries included. */
  calls: Record<string, Record<string, number>>;
  /**
   * Paced: requests that waited for dvault's own pacer before being sent (its pace, a hold, earlier requests
   * ahead), and the total wait. Not a throttle: the service refused nothing.
   */
  paced: { count: number; totalMs: number };
  /** Throttled: answers in which the service or its CDN refused the request as too many (src/api/errors/classify.ts: 429, 503, an *_api_threshold error, a CDN block). */
  throttled: number;
  retries: number;
  refreshes: number;
  /** Answers that could not be read and were skipped: whole responses, and single items of readable pages. */
  unreadable: { responses: number; items: number };
};

export function newTransportStats(): TransportStats {
  return { calls: {}, paced: { count: 0, totalMs: 0 }, throttled: 0, retries: 0, refreshes: 0, unreadable: { responses: 0, items: 0 } };
}

export type HttpTransport = ApiTransport & {
  readonly stats: TransportStats;
};

/** `deviationids: ["a","b"]` → `deviationids[]=a&deviationids[]=b`; booleans as "true"/"false"; null/undefined omitted. */
export function encodeParams(params: Params | undefined): URLSearchParams {
  const out = new URLSearchParams();
  if (!params) return out;
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      const name = key.endsWith("[]") ? key : `${key}[]`;
      for (const item of value) out.append(name, String(item));
    } else {
      out.append(key, String(value));
    }
  }
  return out;
}
