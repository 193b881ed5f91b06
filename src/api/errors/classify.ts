// The classification of the service's HTTP answers into ApiError kinds. It reads the status, `error` and the
// operation's `error_code` table, never `error_description` (docs/service-behaviour.md#error-body).
import { operationIfKnown, type ErrorMeaning } from "../catalogue.ts";
import { ApiError, EndpointGoneError, type ApiErrorFields, type ApiErrorKind } from "./api-error.ts";

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

const THROTTLE_ERRORS = new Set(["user_api_threshold", "application_api_threshold"]);

export type HttpFailure = {
  operation: string;
  status: number;
  /** The response body as text (responseType "text"). */
  body?: string | undefined;
  account?: string | undefined;
  attempts?: number | undefined;
};

/** The meaning of a 400 answer of `operation` from its error_code table, if it has one. */
export function meaningOf(operation: string, status: number, body: ErrorBody | undefined): ErrorMeaning | undefined {
  if (status !== 400 || body === undefined) return undefined;
  const op = operationIfKnown(operation);
  if (!op) return undefined;
  if (body.error_code !== undefined) return op.errorCodes?.[body.error_code];
  if (body.error_details === undefined && body.error === "invalid_request") return op.uncodedRefusal;
  return undefined;
}

/**
 * Which kind a non-2xx answer is (docs/service-behaviour.md#error-body). Pure; unit-tested. A 404 whose
 * JSON carries no error_code is the endpoint itself missing (docs/service-behaviour.md#endpoint-removed);
 * with an error_code it is about the object asked for.
 */
export function classifyStatus(status: number, body: ErrorBody | undefined, meaning?: ErrorMeaning): ApiErrorKind {
  if (status === 401) return "invalid_token";
  if (status === 429 || status === 503) return "throttled";
  if (body?.error && THROTTLE_ERRORS.has(body.error)) return "throttled";
  if (status === 403) {
    // No JSON = the CDN (CloudFront "Request blocked"), not the API: a throttle (docs/service-behaviour.md#cdn-block-403).
    if (body === undefined) return "throttled";
    return body.error === "insufficient_scope" ? "insufficient_scope" : "client";
  }
  if (status === 404) return body?.error_code !== undefined ? "not_found" : "gone";
  if (status >= 500) return "server";
  switch (meaning) {
    case "user_suspended":
    case "user_deactivated":
    case "user_not_found":
      return "user_unavailable";
    case "not_found":
      return "not_found";
    default:
      return "client";
  }
}

/** The ApiError (or EndpointGoneError) for a non-2xx answer. Throttles come back as plain ApiError kind "throttled". */
export function errorFromResponse(failure: HttpFailure): ApiError {
  const body = parseErrorBody(failure.body);
  const meaning = meaningOf(failure.operation, failure.status, body);
  const kind = classifyStatus(failure.status, body, meaning);
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
    meaning,
    attempts: failure.attempts,
  };
  if (kind === "gone") return new EndpointGoneError(fields);
  return new ApiError(fields);
}

/** A body that is not JSON, or JSON that does not fit the operation's schema. */
export function malformedError(args: { operation: string; detail: string; status?: number; account?: string | undefined; final?: boolean }): ApiError {
  return new ApiError({ kind: "malformed", operation: args.operation, status: args.status, account: args.account, detail: args.detail, final: args.final });
}

/** No (whole) HTTP answer. `code` is Node's/got's error code (ECONNRESET, ETIMEDOUT); `detail` says more ("timed out after 40 s at 0.1 KiB/s"). */
export function networkError(args: {
  operation: string;
  code?: string | undefined;
  account?: string | undefined;
  attempts?: number;
  detail?: string;
}): ApiError {
  return new ApiError({ kind: "network", operation: args.operation, account: args.account, attempts: args.attempts, error: args.code, detail: args.detail });
}
