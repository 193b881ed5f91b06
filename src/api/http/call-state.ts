// One API call's state across its attempts (carried in got's `context`): the pacer permit it holds, its
// retry counters, the token it sent, and how its failures are named.
import { setTimeout as wait } from "node:timers/promises";
import type { Options, Response } from "got";
import { UserError } from "../../errors.ts";
import { ApiError, ThrottleDelayError, errorFromResponse, type ApiErrorKind } from "../errors.ts";
import { TokenRefreshDeferredError } from "../token-errors.ts";
import type { PacerOutcome, Permit } from "../pacer.ts";
import { pacerKey, type TokenProvider } from "../token-provider.ts";
import type { ApiRequest } from "../transport.ts";

/** Per-call state, carried in got's `context` across retries of that call (one per page when paging). */
export type CallState = {
  operation: string;
  method: string;
  account: string | undefined;
  key: string;
  maxWaitMs: number;
  signal: AbortSignal | undefined;
  /** ApiRequest.once: no retry but the 401 refresh. */
  once: boolean;
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

export async function release(state: CallState, outcome: PacerOutcome): Promise<void> {
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
export function releaseOnAbort(state: CallState): void {
  const signal = state.signal;
  if (!signal) return;
  const onAbort = () => void release(state, "error").catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  state.detachAbort = () => signal.removeEventListener("abort", onAbort);
}

export function newCallState(req: ApiRequest, tokens: TokenProvider, defaultMaxWaitMs: number): CallState {
  const identity = tokens.identity();
  return {
    operation: req.operation,
    method: req.method,
    account: identity.account,
    key: pacerKey(identity),
    maxWaitMs: req.maxWaitMs ?? defaultMaxWaitMs,
    signal: req.signal,
    once: req.once === true,
    startedAt: 0,
    attempts: 0,
    serverRetries: 0,
    networkRetries: 0,
    throttleRetries: 0,
    refreshed: false,
  };
}

/** The call's state, from got's options of any attempt. */
export const stateOf = (opts: Pick<Options, "context"> | undefined): CallState | undefined => opts?.context.state as CallState | undefined;

export function toApiError(state: CallState, response: Response): ApiError {
  return errorFromResponse({
    operation: state.operation,
    status: response.statusCode,
    body: String(response.body ?? ""),
    account: state.account,
    attempts: state.attempts,
  });
}

/** Errors from the pacer or the token provider, named for the call. */
export function describeFatal(state: CallState, err: unknown): Error {
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
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * A refresh after a 401 that failed: the token layer's verdicts as they are (describeFatal), and any other failure
 * (Redis or PostgreSQL gone mid-refresh) a deferred refresh, tried again later: no sign the grant is dead, so no
 * "log in again".
 */
export function refreshFailed(state: CallState, err: unknown): Error {
  if (err instanceof UserError || state.signal?.aborted) return describeFatal(state, err);
  const cause = err instanceof Error ? err : new Error(String(err));
  return new TokenRefreshDeferredError(state.account ?? "(this token)", `${state.operation}: ${cause.message}`, false, cause);
}

/**
 * No answer to classify: a timeout or a connection error (the answer, if one started, never arrived
 * whole), or a failure while handling an answer that was not an error (a hook of ours, e.g. Redis gone
 * while releasing the pacer permit). Either is transient; neither is the service refusing anything.
 */
export function cutShort(error: { name: string; code: string; response?: { statusCode: number } | undefined }): boolean {
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

export function outcomeOf(kind: ApiErrorKind | "ok"): PacerOutcome {
  if (kind === "ok") return "success";
  return kind === "throttled" ? "throttled" : "error";
}

/** Waits `ms`, or less when `signal` aborts (then throws its reason). */
export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  await wait(ms, undefined, signal ? { signal } : undefined);
}

export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}
