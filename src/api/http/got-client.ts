// The one got instance of an HTTP transport: API root and headers, the byte and throughput bounds, pacing
// through the shared Redis pacer, bearer auth with one refresh after a 401, the retry decisions, and the
// mapping of every failure to an ApiError.
import { performance } from "node:perf_hooks";
import got, { type Got } from "got";
import { bodyGuardHandler, timeoutDetail } from "../body-guard.ts";
import { type ApiError, networkError, ThrottleDelayError } from "../errors.ts";
import type { Pacer } from "../pacer.ts";
import { abortReason, cutShort, describeFatal, outcomeOf, refreshFailed, release, releaseOnAbort, stateOf, toApiError, type CallState } from "./call-state.ts";
import { API_PATH, DEFAULT_MINOR_VERSION, DEFAULT_USER_AGENT, type HttpTransportOptions, type RetryPolicy, type TransportStats } from "./options.ts";

export type ApiGotOptions = {
  options: HttpTransportOptions;
  retry: RetryPolicy;
  maxBodyBytes: number;
  /** This transport's counters and the shared totals. */
  sinks: readonly TransportStats[];
  count: (operation: string, status: string) => void;
  backoff: (n: number) => number;
};

export function createApiGot({ options, retry, maxBodyBytes, sinks, count, backoff }: ApiGotOptions): Got {
  const { tokens, pacer, log } = options;
  return got.extend({
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
        if (!state || state.fatal || state.signal?.aborted || state.once) return 0;
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
              sink.paced.count++;
              sink.paced.totalMs += state.permit.waitedMs;
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
          if (state.lastError?.kind === "throttled") {
            state.lastThrottle = state.lastError;
            // Only the service's own refusals count as throttled; waiting for the pacer is counted as paced.
            for (const sink of sinks) sink.throttled++;
          }
          // Only "invalid_token" (expired/revoked) is worth a refresh; other 401s are final.
          if (status === 401 && !state.refreshed && state.lastError?.error === "invalid_token") {
            state.refreshed = true;
            for (const sink of sinks) sink.refreshes++;
            try {
              state.freshToken = await tokens.refreshAfterUnauthorized(state.token ?? "");
            } catch (err) {
              state.fatal = refreshFailed(state, err);
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
          log.debug({ operation: state.operation, attempt: state.attempts, reason: error.response?.statusCode ?? error.code }, "api call retried");
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
            return throttleDelay(pacer, state, apiError);
          }
          const detail =
            error.name === "TimeoutError"
              ? timeoutDetail(error.options)
              : error.response
                ? `the answer (HTTP ${error.response.statusCode}) could not be handled: ${error.message.slice(0, 200)}`
                : undefined;
          return networkError({
            operation: state.operation,
            code: error.code,
            account: state.account,
            attempts: state.attempts,
            ...(detail ? { detail } : {}),
          });
        },
      ],
    },
  });
}

/** A final throttle answer: tell the caller how long the pacer will hold the key. */
async function throttleDelay(pacer: Pacer, state: CallState, apiError: ApiError): Promise<ThrottleDelayError> {
  const status = await pacer.status(state.key).catch(() => undefined);
  const waitMs = Math.max(status?.waitMs ?? 0, 1);
  return new ThrottleDelayError({ ...apiError.fields(), waitMs, pacerKey: state.key, retryAt: pacer.clock.now() + waitMs });
}
