// The HTTP layer: one got instance that owns the API root, headers, timeouts, pacing (via the shared Redis
// pacer), bearer auth with one refresh after a 401, retry policy and the mapping of failures to ApiError.
// It implements ApiTransport; the typed client never sees got, tokens or the pacer.
import { performance } from "node:perf_hooks";
import { setTimeout as wait } from "node:timers/promises";
import got, { type Options, type Response } from "got";
import { bodyGuardHandler, describeBound, timeoutDetail, trippedBound, type BoundTripped } from "./body-guard.ts";
import { z } from "zod";
import type { Logger } from "../log.ts";
import { VERSION } from "../version.ts";
import {
  ApiError,
  ThrottleDelayError,
  errorFromResponse,
  malformedError,
  networkError,
  type ApiErrorKind,
} from "./errors.ts";
import type { Pacer, PacerOutcome, Permit } from "./pacer.ts";
import { issueText, paginateCursor, paginateOffset, subjectOf, TOO_LARGE_READINGS, type PageIO } from "./paginate.ts";
import { UserError } from "../errors.ts";
import { pacerKey, type TokenProvider } from "./token-provider.ts";
import type { ApiRequest, ApiTransport, Params, UnreadableSink } from "./transport.ts";

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
  /** Requests that had to wait for the pacer before being sent, and the total wait. */
  throttleWaits: { count: number; totalMs: number };
  retries: number;
  refreshes: number;
  /** Answers that could not be read and were skipped: whole responses, and single items of readable pages. */
  unreadable: { responses: number; items: number };
};

export function newTransportStats(): TransportStats {
  return { calls: {}, throttleWaits: { count: 0, totalMs: 0 }, retries: 0, refreshes: 0, unreadable: { responses: 0, items: 0 } };
}

export type HttpTransport = ApiTransport & {
  readonly stats: TransportStats;
};

/** Per-call state, carried in got's `context` across retries of that call (one per page when paging). */
type CallState = {
  operation: string;
  method: string;
  account: string | undefined;
  key: string;
  maxWaitMs: number;
  signal: AbortSignal | undefined;
  permit?: Permit | undefined;
  startedAt: number;
  attempts: number;
  serverRetries: number;
  networkRetries: number;
  throttleRetries: number;
  refreshed: boolean;
  /** The token sent on the last attempt; handed back to the provider after a 401. */
  token?: string | undefined;
  /** The refreshed token returned by the provider; wins over getAccessToken() for the retry. */
  freshToken?: string | undefined;
  /** The classified error answer of the last attempt (undefined after a 2xx/3xx). */
  lastError?: ApiError | undefined;
  /** The last throttle answer, to describe a ThrottleDelayError raised by the pacer on the retry. */
  lastThrottle?: ApiError | undefined;
  /** An error raised by dvault's own hooks (pacer, token provider): never retried, surfaced as is. */
  fatal?: Error | undefined;
  /** Removes the abort listener that releases the permit. */
  detachAbort?: (() => void) | undefined;
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

/**
 * No answer to classify: a timeout or a connection error (the answer, if one started, never arrived
 * whole), or a failure while handling an answer that was not an error (a hook of ours, e.g. Redis gone
 * while releasing the pacer permit). Either is transient; neither is the service refusing anything.
 */
function cutShort(error: { name: string; code: string; response?: { statusCode: number } | undefined }): boolean {
  if (error.name === "TimeoutError" || error.name === "ReadError" || NETWORK_CODES.has(error.code)) return true;
  return error.response !== undefined && error.response.statusCode < 400;
}

const NETWORK_CODES = new Set([
  "ETIMEDOUT",
  "ECONNRESET",
  "EADDRINUSE",
  "ECONNREFUSED",
  "EPIPE",
  "ENOTFOUND",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

function outcomeOf(kind: ApiErrorKind | "ok"): PacerOutcome {
  if (kind === "ok") return "success";
  return kind === "throttled" ? "throttled" : "error";
}

export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const { tokens, pacer, log } = options;
  const retry: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const defaultMaxWaitMs = options.maxWaitMs ?? 5000;
  const stats: TransportStats = newTransportStats();
  // This transport's own counters (per-run bookkeeping reads deltas of them) and the shared totals.
  const sinks = options.totals ? [stats, options.totals] : [stats];

  const count = (operation: string, status: string) => {
    for (const sink of sinks) {
      const byStatus = (sink.calls[operation] ??= {});
      byStatus[status] = (byStatus[status] ?? 0) + 1;
    }
  };
  const stateOf = (opts: Pick<Options, "context"> | undefined): CallState | undefined => opts?.context.state as CallState | undefined;
  const backoff = (n: number) => retry.baseDelayMs * 2 ** (n - 1) * (1 + 0.2 * Math.random());

  async function release(state: CallState, outcome: PacerOutcome): Promise<void> {
    const permit = state.permit;
    state.permit = undefined;
    state.detachAbort?.();
    state.detachAbort = undefined;
    if (permit) await permit.release(outcome);
  }

  /**
   * got does not run beforeError for an aborted request, so without this an abort mid-flight would keep
   * the key's permit until its lock expired and stall every other caller of that key.
   */
  function releaseOnAbort(state: CallState): void {
    const signal = state.signal;
    if (!signal) return;
    const onAbort = () => void release(state, "error").catch(() => undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    state.detachAbort = () => signal.removeEventListener("abort", onAbort);
  }

  function newState(req: ApiRequest): CallState {
    const identity = tokens.identity();
    return {
      operation: req.operation,
      method: req.method,
      account: identity.account,
      key: pacerKey(identity),
      maxWaitMs: req.maxWaitMs ?? defaultMaxWaitMs,
      signal: req.signal,
      startedAt: 0,
      attempts: 0,
      serverRetries: 0,
      networkRetries: 0,
      throttleRetries: 0,
      refreshed: false,
    };
  }

  const maxBodyBytes = options.maxBodyBytes ?? 32 * 2 ** 20;
  const client = got.extend({
    handlers: [
      bodyGuardHandler({ maxBytes: maxBodyBytes, minBytesPerSecond: options.minBytesPerSecond ?? 20 * 1024 }, (opts) => {
        // A cancelled request runs no beforeError: its permit would otherwise stall the key until it expires.
        const state = stateOf(opts);
        if (state?.permit) void release(state, "error").catch(() => undefined);
      }),
    ],
    prefixUrl: options.apiBase.replace(/\/+$/, "") + API_PATH,
    headers: {
      "user-agent": options.userAgent ?? DEFAULT_USER_AGENT,
      "dA-minor-version": options.minorVersion ?? DEFAULT_MINOR_VERSION,
      "accept-encoding": "gzip",
      accept: "application/json",
    },
    decompress: true,
    // Parsed by parseBody below, so a broken body becomes an ApiError naming the operation.
    responseType: "text",
    timeout: { request: options.timeoutMs ?? 30_000 },
    retry: {
      limit: Number.POSITIVE_INFINITY,
      methods: ["GET", "POST"],
      // Every retry decision is made here from the call's own counters; got only schedules it.
      calculateDelay: ({ error }) => {
        if (error.name === "RetryError") return 1; // the 401 refresh retry (retryWithMergedOptions)
        const state = stateOf(error.options);
        if (!state || state.fatal || state.signal?.aborted) return 0;
        // A timeout or reset after the headers came: no whole answer, whatever the status line said.
        if (error.response && !cutShort(error)) {
          const kind = state.lastError?.kind;
          if (kind === "throttled") {
            // The wait itself happens in beforeRequest: pacer.acquire blocks until the key is free again.
            return state.throttleRetries++ < retry.throttleRetries ? 1 : 0;
          }
          if (kind === "server" && state.method === "GET" && state.serverRetries < retry.serverRetries) {
            return backoff(++state.serverRetries);
          }
          return 0;
        }
        if (cutShort(error) && state.method === "GET" && state.networkRetries < retry.networkRetries) {
          return backoff(++state.networkRetries);
        }
        return 0;
      },
    },
    hooks: {
      beforeRequest: [
        async (opts) => {
          const state = stateOf(opts);
          if (!state) return;
          try {
            // The token first: a refresh inside getAccessToken must not hold the key's permit.
            const token = state.freshToken ?? (await tokens.getAccessToken());
            state.token = token;
            // Never `access_token` in the query: OAuth 2.1 apps are refused it, and URLs end up in logs.
            opts.headers.authorization = `Bearer ${token}`;
            state.permit = await pacer.acquire(state.key, {
              maxWaitMs: state.maxWaitMs,
              signal: state.signal,
              operation: state.operation,
              account: state.account,
            });
            releaseOnAbort(state);
          } catch (err) {
            state.fatal = describeFatal(state, err);
            throw state.fatal;
          }
          if (state.permit.waitedMs > 0) {
            for (const sink of sinks) {
              sink.throttleWaits.count++;
              sink.throttleWaits.totalMs += state.permit.waitedMs;
            }
          }
          state.attempts++;
          state.startedAt = performance.now();
        },
      ],
      afterResponse: [
        async (response, retryWithMergedOptions) => {
          const state = stateOf(response.request.options);
          if (!state) return response;
          const status = response.statusCode;
          // Classified once here; the retry decision and the final error read it from the state.
          state.lastError = status < 400 ? undefined : toApiError(state, response);
          await release(state, outcomeOf(state.lastError?.kind ?? "ok"));
          count(state.operation, String(status));
          log.debug(
            { operation: state.operation, method: state.method, status, durationMs: Math.round(performance.now() - state.startedAt), attempt: state.attempts },
            "api call",
          );
          if (state.lastError?.kind === "throttled") state.lastThrottle = state.lastError;
          // Only "invalid_token" (expired/revoked) is worth a refresh; other 401s are final.
          if (status === 401 && !state.refreshed && state.lastError?.error === "invalid_token") {
            state.refreshed = true;
            for (const sink of sinks) sink.refreshes++;
            try {
              state.freshToken = await tokens.refreshAfterUnauthorized(state.token ?? "");
            } catch (err) {
              state.fatal = describeFatal(state, err);
              throw state.fatal;
            }
            // preserveHooks: keep this hook for the retry, so its permit is released and a second 401 is seen.
            return retryWithMergedOptions({ preserveHooks: true });
          }
          return response;
        },
      ],
      beforeRetry: [
        async (error) => {
          const state = stateOf(error.options);
          if (!state) return;
          for (const sink of sinks) sink.retries++;
          if (!error.response && error.name !== "RetryError") {
            await release(state, "error");
            count(state.operation, "network");
          }
          log.debug(
            { operation: state.operation, attempt: state.attempts, reason: error.response?.statusCode ?? error.code },
            "api call retried",
          );
        },
      ],
      beforeError: [
        async (error) => {
          const state = stateOf(error.options);
          if (!state) return error;
          if (state.permit) {
            await release(state, "error").catch(() => undefined);
            if (!error.response) count(state.operation, "network");
          }
          if (state.signal?.aborted) return abortReason(state.signal);
          if (state.fatal) return state.fatal;
          if (error.response && !cutShort(error)) {
            const apiError = state.lastError ?? toApiError(state, error.response);
            if (apiError.kind !== "throttled") return apiError;
            return throttleDelay(state, apiError);
          }
          const detail =
            error.name === "TimeoutError"
              ? timeoutDetail(error.options)
              : error.response
                ? `the answer (HTTP ${error.response.statusCode}) could not be handled: ${error.message.slice(0, 200)}`
                : undefined;
          return networkError({ operation: state.operation, code: error.code, account: state.account, attempts: state.attempts, ...(detail ? { detail } : {}) });
        },
      ],
    },
  });

  function toApiError(state: CallState, response: Response): ApiError {
    return errorFromResponse({
      operation: state.operation,
      status: response.statusCode,
      body: String(response.body ?? ""),
      account: state.account,
      attempts: state.attempts,
    });
  }

  /** A final throttle answer: tell the caller how long the pacer will hold the key. */
  async function throttleDelay(state: CallState, apiError: ApiError): Promise<ThrottleDelayError> {
    const status = await pacer.status(state.key).catch(() => undefined);
    const waitMs = Math.max(status?.waitMs ?? 0, 1);
    return new ThrottleDelayError({ ...apiError.fields(), waitMs, pacerKey: state.key, retryAt: pacer.clock.now() + waitMs });
  }

  /** Errors from the pacer or the token provider, named for the call. */
  function describeFatal(state: CallState, err: unknown): Error {
    if (err instanceof ThrottleDelayError && state.lastThrottle) {
      // The pacer refused to wait after a throttle answer: describe that answer.
      return new ThrottleDelayError({
        ...state.lastThrottle.fields(),
        attempts: state.attempts,
        waitMs: err.waitMs,
        pacerKey: err.pacerKey,
        retryAt: err.retryAt,
      });
    }
    if (err instanceof ApiError) return err;
    // The token layer's own verdicts (re-authorization required, refresh deferred) carry the command to
    // run and decide the job's outcome: pass them through unwrapped.
    if (err instanceof UserError) return err;
    if (state.signal?.aborted) return abortReason(state.signal);
    const cause = err instanceof Error ? err : new Error(String(err));
    if (state.refreshed) {
      const failed = new ApiError({ kind: "invalid_token", operation: state.operation, status: 401, account: state.account },
        `${state.operation}: the access token expired and could not be refreshed (${cause.message}). Re-authorize with: dvault auth login`);
      failed.cause = cause;
      return failed;
    }
    return cause;
  }

  /** The body as JSON. A body that is not JSON (cut short, a proxy's page) is a transient failure. */
  function readJson(response: Response, req: ApiRequest): unknown {
    const text = String(response.body ?? "");
    try {
      return JSON.parse(text);
    } catch {
      const snippet = text.replace(/\s+/g, " ").trim().slice(0, 60);
      throw malformedError({ operation: req.operation, status: response.statusCode, account: tokens.identity().account, detail: `not JSON: "${snippet}"` });
    }
  }

  async function report(req: ApiRequest, subject: string, detail: string, raw: unknown): Promise<void> {
    const account = tokens.identity().account;
    for (const sink of sinks) sink.unreadable[subject ? "items" : "responses"]++;
    log.warn({ operation: req.operation, subject: subject || "(response)", detail, account }, "unreadable answer from the service: kept and skipped");
    await options.unreadable?.record({
      operation: req.operation,
      request: { method: req.method, path: req.path, params: { ...req.query, ...req.form } },
      subject,
      detail,
      raw,
      account,
    });
  }

  /**
   * One call whose body holds a list under `key`: each item read on its own, the unreadable ones recorded
   * and left out (docs/service-behaviour.md#tolerant-reading). The envelope is read like request()'s body.
   */
  async function requestItems<S extends z.ZodType>(req: ApiRequest, key: string, itemSchema: S): Promise<{ body: Record<string, unknown>; items: z.infer<S>[] }> {
    const envelope = z.looseObject({ [key]: z.array(z.unknown()) });
    const body = (await request(req, envelope)) as Record<string, unknown>;
    const items: z.infer<S>[] = [];
    for (const [index, item] of (body[key] as unknown[]).entries()) {
      const parsed = itemSchema.safeParse(item);
      if (parsed.success) items.push(parsed.data);
      else await report(req, subjectOf(item, index), issueText(parsed.error), item);
    }
    return { body, items };
  }

  /**
   * One call whose body must fit `schema`. A readable JSON answer of the wrong shape is read again once
   * (GET only); a second misfit is recorded and final for that request. A write is never sent twice: its
   * unreadable answer is recorded and final at once (it may have happened).
   */
  async function request<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>> {
    let tooLarge = 0;
    for (let reading = 1; ; reading++) {
      let response: Response;
      try {
        response = await client(relativePath(req), gotOptions(req));
      } catch (err) {
        const mapped = mapCancel(err, req);
        // Past the byte cap: asked for again a few times with backoff (GET only), then recorded and final.
        const received = io.tooLarge(err);
        if (mapped instanceof ApiError && received !== undefined) {
          tooLarge++;
          if (req.method === "GET" && tooLarge < TOO_LARGE_READINGS) {
            await sleep(backoff(tooLarge), req.signal);
            continue;
          }
          await report(req, "", mapped.detail ?? "response too large", { dvault_unread: "the body passed the byte cap", maxBytes: maxBodyBytes, received });
          throw malformedError({ operation: req.operation, account: tokens.identity().account, detail: mapped.detail ?? "response too large", final: true });
        }
        throw mapped;
      }
      const json = readJson(response, req);
      const parsed = schema.safeParse(json);
      if (parsed.success) return parsed.data;
      const detail = issueText(parsed.error);
      if (reading === 1 && req.method === "GET") continue;
      await report(req, "", detail, json);
      throw malformedError({ operation: req.operation, status: response.statusCode, account: tokens.identity().account, detail, final: true });
    }
  }

  function gotOptions(req: ApiRequest) {
    const form = req.method === "POST" ? encodeParams(req.form).toString() : undefined;
    return {
      method: req.method,
      searchParams: encodeParams(req.query),
      ...(form === undefined ? {} : { body: form, headers: { "content-type": "application/x-www-form-urlencoded" } }),
      context: { state: newState(req) },
      ...(req.signal ? { signal: req.signal } : {}),
    } as const;
  }

  const relativePath = (req: ApiRequest) => req.path.replace(/^\/+/, "");

  /**
   * A request the body guard cancelled becomes the error of what tripped: past the byte cap, an answer
   * dvault cannot read ("response too large"); under the throughput floor, a transient timeout. Anything
   * else is returned as it is.
   */
  function mapCancel(err: unknown, req: ApiRequest): Error {
    const why: BoundTripped | undefined = trippedBound((err as { options?: Options }).options);
    if (!why) return err instanceof Error ? err : new Error(String(err));
    const account = tokens.identity().account;
    if (why.kind === "too_large") return malformedError({ operation: req.operation, account, detail: describeBound(why) });
    return networkError({ operation: req.operation, code: "ETIMEDOUT", account, detail: describeBound(why) });
  }

  const io: PageIO = {
    client,
    relativePath,
    gotOptions,
    freshContext: (req) => ({ state: newState(req) }),
    readJson,
    report,
    mapError: mapCancel,
    tooLarge: (err) => {
      const why = trippedBound((err as { options?: Options }).options);
      return why?.kind === "too_large" ? why.bytes : undefined;
    },
    backoff,
    maxBodyBytes,
  };

  return {
    stats,
    request,
    requestItems,
    paginateOffset: (req, itemSchema, pagingOptions) => paginateOffset(io, req, itemSchema, pagingOptions),
    paginateCursor: (req, itemSchema, pagingOptions) => paginateCursor(io, req, itemSchema, pagingOptions),
  };
}

/** Waits `ms`, or less when `signal` aborts (then throws its reason). */
async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await wait(ms, undefined, signal ? { signal } : undefined);
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}

