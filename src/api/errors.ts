// The API error model: one ApiError class whose `kind` tells callers (and the queue) what to do with a
// failure, plus the classification of the service's HTTP answers into those kinds (api-notes §3).
import { scrubString } from "../redact.ts";

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
  /** 404 or "User not found.": the thing asked for does not exist. */
  | "not_found"
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
  /** How many requests were sent before giving up (retries included). */
  attempts?: number | undefined;
  /** What exactly was wrong, for "malformed": "not JSON: ..." or the first schema issue. */
  detail?: string | undefined;
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
  readonly attempts: number | undefined;
  readonly detail: string | undefined;

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
    this.attempts = fields.attempts;
    this.detail = fields.detail === undefined ? undefined : scrubString(fields.detail);
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
      attempts: this.attempts,
      detail: this.detail,
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
}

/** Failures that will fail the same way on retry: the job should stop (BullMQ UnrecoverableError). */
const PERMANENT: ReadonlySet<ApiErrorKind> = new Set(["invalid_token", "insufficient_scope", "gone", "not_found", "client"]);

/**
 * True when retrying cannot help. "malformed" is not permanent: a truncated body or a proxy's error page
 * is transient, and a real schema change still fails loudly once the job's attempts run out.
 */
export function isPermanent(err: unknown): boolean {
  return err instanceof ApiError && PERMANENT.has(err.kind);
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

// ---------------------------------------------------------------------------------------------------------
// Classification of HTTP answers

export type ErrorBody = {
  error?: string;
  error_description?: string;
  error_code?: number;
  error_details?: Record<string, string>;
  /** insufficient_scope echoes the scope the resource needs. */
  scope?: string;
};

/** The service's error JSON, or undefined for a body that is not a JSON object (an HTML CDN page, say). */
export function parseErrorBody(text: string | undefined): ErrorBody | undefined {
  if (!text) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return undefined;
  const raw = parsed as Record<string, unknown>;
  const out: ErrorBody = {};
  if (typeof raw.error === "string") out.error = raw.error;
  if (typeof raw.error_description === "string") out.error_description = raw.error_description;
  const code = typeof raw.error_code === "string" && /^-?\d+$/.test(raw.error_code) ? Number(raw.error_code) : raw.error_code;
  if (typeof code === "number" && Number.isFinite(code)) out.error_code = code;
  if (raw.error_details && typeof raw.error_details === "object" && !Array.isArray(raw.error_details)) {
    out.error_details = Object.fromEntries(
      Object.entries(raw.error_details as Record<string, unknown>).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
    );
  }
  if (typeof raw.scope === "string") out.scope = raw.scope;
  return out;
}

export const ENDPOINT_GONE_DESCRIPTION = "Api endpoint not found.";
const THROTTLE_ERRORS = new Set(["user_api_threshold", "application_api_threshold"]);

export type HttpFailure = {
  operation: string;
  status: number;
  /** The response body as text (responseType "text"). */
  body?: string | undefined;
  account?: string | undefined;
  attempts?: number | undefined;
};

/** Which kind a non-2xx answer is (api-notes §3.2, §4). Pure; unit-tested. */
export function classifyStatus(status: number, body: ErrorBody | undefined): ApiErrorKind {
  if (status === 401) return "invalid_token";
  if (status === 429 || status === 503) return "throttled";
  if (body?.error && THROTTLE_ERRORS.has(body.error)) return "throttled";
  if (status === 403) {
    // No JSON = the CDN (CloudFront "Request blocked"), not the API: a throttle (api-notes §0.7).
    if (body === undefined) return "throttled";
    return body.error === "insufficient_scope" ? "insufficient_scope" : "client";
  }
  if (status === 404) return body?.error_description === ENDPOINT_GONE_DESCRIPTION ? "gone" : "not_found";
  if (status >= 500) return "server";
  if (status === 400 && body?.error_description === "User not found.") return "not_found";
  return "client";
}

/** The ApiError (or EndpointGoneError) for a non-2xx answer. Throttles come back as plain ApiError kind "throttled". */
export function errorFromResponse(failure: HttpFailure): ApiError {
  const body = parseErrorBody(failure.body);
  const kind = classifyStatus(failure.status, body);
  const fields: ApiErrorFields = {
    kind,
    operation: failure.operation,
    status: failure.status,
    error: body?.error ?? (body === undefined && failure.status === 403 ? "cdn_block" : undefined),
    errorDescription: body?.error_description,
    errorCode: body?.error_code,
    errorDetails: body?.error_details,
    account: failure.account,
    requiredScope: kind === "insufficient_scope" ? body?.scope : undefined,
    attempts: failure.attempts,
  };
  if (kind === "gone") return new EndpointGoneError(fields);
  return new ApiError(fields);
}

/** A body that is not JSON, or JSON that does not fit the operation's schema. */
export function malformedError(args: { operation: string; detail: string; status?: number; account?: string | undefined }): ApiError {
  return new ApiError({ kind: "malformed", operation: args.operation, status: args.status, account: args.account, detail: args.detail });
}

/** No HTTP answer at all. `code` is Node's/got's error code (ECONNRESET, ETIMEDOUT). */
export function networkError(args: { operation: string; code?: string | undefined; account?: string | undefined; attempts?: number }): ApiError {
  return new ApiError({ kind: "network", operation: args.operation, account: args.account, attempts: args.attempts, error: args.code });
}

// ---------------------------------------------------------------------------------------------------------
// Messages: what happened and what to do, never a token or a URL carrying one.

function who(fields: ApiErrorFields): string {
  return fields.account ? `account "${fields.account}"` : "this account";
}

function serviceSaid(fields: ApiErrorFields): string {
  const parts = [fields.status === undefined ? undefined : `HTTP ${fields.status}`, fields.error, fields.errorDescription && `"${fields.errorDescription}"`];
  const said = parts.filter(Boolean).join(" ");
  const detailList = fields.errorDetails
    ? "; " + Object.entries(fields.errorDetails).map(([k, v]) => `${k}: ${v}`).join(", ")
    : "";
  return said + detailList;
}

function throttleCause(fields: Omit<ApiErrorFields, "kind">): string {
  if (fields.error === "user_api_threshold") return "the service's per-user request limit was reached (429 user_api_threshold)";
  if (fields.error === "application_api_threshold") return "the service's per-client request limit was reached (429 application_api_threshold)";
  if (fields.status === 403) return "the CDN blocked the request (403 HTML page: a throttle, not a permission problem)";
  if (fields.status === 503) return "the service is overloaded or in maintenance (HTTP 503)";
  if (fields.status === undefined) return "the pacer is holding requests for this account (an earlier throttle is in force, or other requests are ahead)";
  return `the service is throttling requests (${serviceSaid(fields as ApiErrorFields)})`;
}

function describe(fields: ApiErrorFields): string {
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
        `Re-authorize with the scope added: dvault auth login --scopes ${scope} (list the scopes you already use too)`
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
    case "client":
      return `${op}: the service refused the request (${serviceSaid(fields)}). Retrying will not help; this is a bug in dvault or bad input.`;
    case "malformed":
      return (
        `${op}: the service sent a response dvault cannot read${detail ? ` (${detail})` : ""}. ` +
        "A retry may succeed if it was a glitch; if it persists the API changed: report it with the operation name."
      );
    case "network":
      return `${op}: could not reach the service${fields.error ? ` (${fields.error})` : ""}${tries}. Check the network connection; the job will be retried.`;
  }
}

function formatMs(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}
