// The API error model: one ApiError class whose `kind` tells callers (and the queue) what to do with a
// failure, the predicates callers branch on, and its messages: what happened and what to do, never a token
// or a URL carrying one.
import { scrubString } from "../../redact.ts";
import type { ErrorMeaning } from "../catalogue.ts";

export type ApiErrorKind =
  /** 401: the token was rejected even after one refresh, or the grant is gone. */
  | "invalid_token"
  /** 403 JSON insufficient_scope: the account must re-authorize with a wider scope. */
  | "insufficient_scope"
  /** 404 "Api endpoint not found.": the service removed the endpoint; callers degrade. */
  | "gone"
  /** 429 user/application threshold, 403 with an HTML body (CDN block), 503: slow down. */
  | "throttled"
  /** 500/502 (and other 5xx): retried a few times, then left to the job's attempts. */
  | "server"
  /** The thing asked for does not exist (a 400 whose error_code says so, or a 404 with an error_code). */
  | "not_found"
  /**
   * The user a user-scoped request names is suspended, deactivated or not found (error_code 0/1/2,
   * docs/service-behaviour.md#user-error-codes); `userState` says which. Their archived works stay.
   */
  | "user_unavailable"
  /** Any other 4xx: permanent for that request. */
  | "client"
  /** A body that is not JSON or does not match the operation's schema. */
  | "malformed"
  /** No answer: connection refused/reset, DNS, timeout. */
  | "network";

export type ApiErrorFields = {
  kind: ApiErrorKind;
  operation: string;
  status?: number | undefined;
  /** The service's `error` field (stable, machine-readable). */
  error?: string | undefined;
  /** The service's `error_description` (human text; not parsed except for a few known phrases). */
  errorDescription?: string | undefined;
  errorCode?: number | undefined;
  errorDetails?: Record<string, string> | undefined;
  /** dvault's local account name, if the request was made as an account. */
  account?: string | undefined;
  /** For insufficient_scope: the scope the service asked for. */
  requiredScope?: string | undefined;
  /** What the operation's `error_code` (or a bare refusal of the profile lookup) means. */
  meaning?: ErrorMeaning | undefined;
  /** How many requests were sent before giving up (retries included). */
  attempts?: number | undefined;
  /** What exactly was wrong, for "malformed": "not JSON: ..." or the first schema issue. */
  detail?: string | undefined;
  /**
   * For "malformed": sending the request again will not help — the same readable answer came twice (and
   * is kept in the unreadable responses), or it answered a write that may have happened.
   */
  final?: boolean | undefined;
};

export class ApiError extends Error {
  readonly kind: ApiErrorKind;
  readonly operation: string;
  readonly status: number | undefined;
  readonly error: string | undefined;
  readonly errorDescription: string | undefined;
  readonly errorCode: number | undefined;
  readonly errorDetails: Record<string, string> | undefined;
  readonly account: string | undefined;
  readonly requiredScope: string | undefined;
  readonly meaning: ErrorMeaning | undefined;
  readonly attempts: number | undefined;
  readonly detail: string | undefined;
  readonly final: boolean;

  /** Read by the worker (src/queue/job-definition.ts#JobOutcomeFields): the service's failure, never a store outage. */
  get remoteService(): true {
    return true;
  }

  /** What the worker does with a job that failed with this (src/queue/job-definition.ts#JobOutcomeFields). */
  get jobOutcome(): "stop" | "delay" | "retry" {
    return isPermanent(this) ? "stop" : "retry";
  }

  /** `message` defaults to a sentence built from the fields that says what to do. */
  constructor(fields: ApiErrorFields, message?: string) {
    super(scrubString(message ?? describe(fields)));
    this.name = "ApiError";
    this.kind = fields.kind;
    this.operation = fields.operation;
    this.status = fields.status;
    this.error = fields.error;
    this.errorDescription = fields.errorDescription === undefined ? undefined : scrubString(fields.errorDescription);
    this.errorCode = fields.errorCode;
    this.errorDetails = fields.errorDetails;
    this.account = fields.account;
    this.requiredScope = fields.requiredScope;
    this.meaning = fields.meaning;
    this.attempts = fields.attempts;
    this.detail = fields.detail === undefined ? undefined : scrubString(fields.detail);
    this.final = fields.final === true;
  }

  /** The fields, for building a related error (e.g. a ThrottleDelayError from a final 429). */
  fields(): ApiErrorFields {
    return {
      kind: this.kind,
      operation: this.operation,
      status: this.status,
      error: this.error,
      errorDescription: this.errorDescription,
      errorCode: this.errorCode,
      errorDetails: this.errorDetails,
      account: this.account,
      requiredScope: this.requiredScope,
      meaning: this.meaning,
      attempts: this.attempts,
      detail: this.detail,
      final: this.final,
    };
  }
}

/** The service removed the endpoint ("Api endpoint not found."): skip the listing, don't crash the run. */
export class EndpointGoneError extends ApiError {
  constructor(fields: Omit<ApiErrorFields, "kind">, message?: string) {
    super({ ...fields, kind: "gone" }, message);
    this.name = "EndpointGoneError";
  }
}

/**
 * The pacer wants this request to wait longer than the caller allowed (or the service kept throttling past
 * the retry bound). A BullMQ job should move itself to delayed until `retryAt` (or throw DelayedError)
 * instead of holding a worker slot; the pacer keeps every other request on the same key waiting too.
 */
export class ThrottleDelayError extends ApiError {
  /** How long to wait before trying again, in ms. */
  readonly waitMs: number;
  /** Epoch ms (pacer clock) before which a retry is pointless. */
  readonly retryAt: number;
  /** The pacer key (client id + user) that is blocked; never the token. */
  readonly pacerKey: string;

  constructor(fields: Omit<ApiErrorFields, "kind"> & { waitMs: number; pacerKey: string; retryAt: number }, message?: string) {
    const { waitMs, pacerKey, retryAt, ...rest } = fields;
    super(
      { ...rest, kind: "throttled" },
      message ??
        `${rest.operation}: ${throttleCause(rest)}; requests as ${pacerKey} are paused for ${formatMs(waitMs)}. ` +
          "dvault backs off on its own: delay the job until then rather than retrying now.",
    );
    this.name = "ThrottleDelayError";
    this.waitMs = waitMs;
    this.pacerKey = pacerKey;
    this.retryAt = retryAt;
  }

  /** The job waits for the pacer without spending an attempt (src/queue/job-definition.ts#JobOutcomeFields). */
  override get jobOutcome(): "delay" {
    return "delay";
  }

  get retryAfterMs(): number {
    return this.waitMs;
  }

  get delayKey(): string {
    return this.pacerKey;
  }

  /**
   * "throttled" when an answer of the service or its CDN refused the request (it carries the status), "paced" when
   * dvault's own pacer holds the request back longer than the caller waits and nothing was refused.
   */
  get delayReason(): "throttled" | "paced" {
    return this.status === undefined ? "paced" : "throttled";
  }
}

/** Failures that will fail the same way on retry: the job should stop (BullMQ UnrecoverableError). */
const PERMANENT: ReadonlySet<ApiErrorKind> = new Set(["invalid_token", "insufficient_scope", "gone", "not_found", "client", "user_unavailable"]);

/**
 * True when retrying cannot help. "malformed" is permanent only when `final` (the same readable answer
 * twice, or the answer to a write): a truncated body or a proxy's error page is transient.
 */
export function isPermanent(err: unknown): boolean {
  return err instanceof ApiError && (PERMANENT.has(err.kind) || (err.kind === "malformed" && err.final));
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

export function isEndpointGone(err: unknown): err is EndpointGoneError {
  return err instanceof EndpointGoneError;
}

export function isThrottleDelay(err: unknown): err is ThrottleDelayError {
  return err instanceof ThrottleDelayError;
}

export type UserState = "suspended" | "deactivated" | "not_found";

/** The state of the user a failed user-scoped request named, when the service said it is gone. */
export function userStateOf(err: unknown): UserState | undefined {
  if (!(err instanceof ApiError) || err.kind !== "user_unavailable") return undefined;
  switch (err.meaning) {
    case "user_suspended":
      return "suspended";
    case "user_deactivated":
      return "deactivated";
    default:
      return "not_found";
  }
}

/**
 * The one answer to "is the thing asked for not there?": a not-found answer, or /deviation/content's "not a
 * text" code. With `refusalMeansMissing`, also a bare refusal (400 without a known error code), which is how
 * the service answers an id it handed out earlier and no longer knows (a message stack, a folder).
 */
export function isMissing(err: unknown, { refusalMeansMissing = false }: { refusalMeansMissing?: boolean } = {}): boolean {
  if (!(err instanceof ApiError)) return false;
  return err.kind === "not_found" || err.meaning === "unsupported_type" || (refusalMeansMissing && err.kind === "client");
}

// ---- messages ----------------------------------------------------------------------------------------

/** The description of the service's 404 for an endpoint it removed (docs/service-behaviour.md#endpoint-status). */
export const ENDPOINT_GONE_DESCRIPTION = "Api endpoint not found.";

function who(fields: ApiErrorFields): string {
  return fields.account ? `account "${fields.account}"` : "this account";
}

function serviceSaid(fields: ApiErrorFields): string {
  // The error_code too: what dvault branches on (docs/service-behaviour.md#error-body).
  const parts = [
    fields.status === undefined ? undefined : `HTTP ${fields.status}`,
    fields.error,
    fields.errorCode === undefined ? undefined : `error_code ${fields.errorCode}`,
    fields.errorDescription && `"${fields.errorDescription}"`,
  ];
  const said = parts.filter(Boolean).join(" ");
  const detailList = fields.errorDetails
    ? "; " +
      Object.entries(fields.errorDetails)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ")
    : "";
  return said + detailList;
}

/** "HTTP 429 user_api_threshold", "HTTP 400 invalid_request error_code 7", "no answer (ECONNRESET)": a failure in a few words. */
export function failureWords(err: ApiError): string {
  if (err.kind === "network") return `no answer${err.error ? ` (${err.error})` : ""}`;
  if (err.kind === "malformed") return "an answer that could not be read";
  const code = err.errorCode === undefined ? "" : ` error_code ${err.errorCode}`;
  return `HTTP ${err.status ?? "?"}${err.error ? ` ${err.error}` : ""}${code}`;
}

export function throttleCause(fields: Omit<ApiErrorFields, "kind">): string {
  if (fields.error === "user_api_threshold") return "the service's per-user request limit was reached (429 user_api_threshold)";
  if (fields.error === "application_api_threshold") return "the service's per-client request limit was reached (429 application_api_threshold)";
  if (fields.status === 403) return "the CDN blocked the request (403 HTML page: a throttle, not a permission problem)";
  if (fields.status === 503) return "the service is overloaded or in maintenance (HTTP 503)";
  if (fields.status === undefined) return "the pacer is holding requests for this account (an earlier throttle is in force, or other requests are ahead)";
  return `the service is throttling requests (${serviceSaid(fields as ApiErrorFields)})`;
}

export function describe(fields: ApiErrorFields): string {
  const detail = fields.detail;
  const op = fields.operation;
  const tries = fields.attempts && fields.attempts > 1 ? ` after ${fields.attempts} attempts` : "";
  switch (fields.kind) {
    case "invalid_token":
      return (
        `${op}: the service rejected the access token for ${who(fields)} (${serviceSaid(fields) || "HTTP 401"})` +
        `${fields.attempts && fields.attempts > 1 ? " even after a refresh" : ""}. Re-authorize it with: dvault auth login`
      );
    case "insufficient_scope": {
      const scope = fields.requiredScope ?? "<scope>";
      return (
        `${op}: ${who(fields)} has not granted the "${scope}" scope this call needs. ` +
        `Re-authorize with the scope added: dvault auth login --scopes ${scope} (the read scopes are always asked for; add any other scope you use)`
      );
    }
    case "gone":
      return `${op}: the service no longer offers this endpoint (404 "${ENDPOINT_GONE_DESCRIPTION}"). dvault skips it; nothing to do unless every run reports it.`;
    case "throttled":
      return `${op}: ${throttleCause(fields)}${tries}. dvault backs off automatically; if this keeps happening, sync less often or with fewer sources.`;
    case "server":
      return `${op}: the service failed (${serviceSaid(fields)})${tries}. It usually recovers; the job will be retried later.`;
    case "not_found":
      return `${op}: not found (${serviceSaid(fields)}). Check the username, folder or id; the item may have been deleted.`;
    case "user_unavailable":
      return `${op}: the user is ${userStateWords(fields.meaning)} on the service (${serviceSaid(fields)}). dvault keeps their archived works and checks again daily.`;
    case "client":
      return `${op}: the service refused the request (${serviceSaid(fields)}). Sending the same request again will not help; check the name or id it was given.`;
    case "malformed":
      if (fields.final) {
        return (
          `${op}: the service sent an answer dvault cannot read${detail ? ` (${detail})` : ""}. It is kept with the unreadable ` +
          "responses (dvault status) and not asked for again; if every run reports it, the API changed: report it with the operation name."
        );
      }
      return (
        `${op}: the service sent a response dvault cannot read${detail ? ` (${detail})` : ""}. ` +
        "A retry may succeed if it was a glitch; if it persists the API changed: report it with the operation name."
      );
    case "network":
      if (detail) return `${op}: ${detail}${tries}. The service or the network is slow; dvault tries again later.`;
      return `${op}: could not reach the service${fields.error ? ` (${fields.error})` : ""}${tries}. Check the network connection; the job will be retried.`;
  }
}

function userStateWords(meaning: ErrorMeaning | undefined): string {
  if (meaning === "user_suspended") return "suspended";
  if (meaning === "user_deactivated") return "deactivated";
  return "not found (deactivated, renamed or deleted)";
}

export function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
