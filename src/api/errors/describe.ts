// Error messages: what happened and what to do, never a token or a URL carrying one.
import type { ErrorMeaning } from "../catalogue.ts";
import type { ApiErrorFields } from "./api-error.ts";

/** The description of the service's 404 for an endpoint it removed (docs/service-behaviour.md#endpoint-status). */
export const ENDPOINT_GONE_DESCRIPTION = "Api endpoint not found.";

function who(fields: ApiErrorFields): string {
  return fields.account ? `account "${fields.account}"` : "this account";
}

function serviceSaid(fields: ApiErrorFields): string {
  const parts = [fields.status === undefined ? undefined : `HTTP ${fields.status}`, fields.error, fields.errorDescription && `"${fields.errorDescription}"`];
  const said = parts.filter(Boolean).join(" ");
  const detailList = fields.errorDetails
    ? "; " +
      Object.entries(fields.errorDetails)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ")
    : "";
  return said + detailList;
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
