// Why /deviation/download refused an original, read from codes and data (docs/service-behaviour.md#quota-weekly).
import { isApiError, isMissing, type ApiError } from "../api/errors.ts";
import type { Deviation } from "../api/types.ts";
import type { AccountApi } from "../services.ts";

/** `deviation`: the service's answer it was read from, so a free rendition needs no second lookup. */
export type Refusal = { kind: "quota" | "not_offered"; reason: string; deviation: Deviation } | { kind: "gone" } | { kind: "other" };

/**
 * Why /deviation/download refused, read from codes and data, never from its wording: the one error_code
 * means "not offered" or "the week's allowance is spent" alike (docs/service-behaviour.md#quota-weekly),
 * and the allowance once ran out as a bare HTTP 500 (docs/service-behaviour.md#quota-as-500). The
 * deviation itself, asked for free, tells them apart: still offered for download means the quota.
 */
export async function readRefusal(api: AccountApi, deviationid: string, err: unknown): Promise<Refusal> {
  if (!isApiError(err)) return { kind: "other" };
  if (isMissing(err)) return { kind: "gone" };
  const refused = err.kind === "client";
  if (!refused && err.kind !== "server") return { kind: "other" };
  let d: Deviation;
  try {
    d = await api.client.deviation(deviationid);
  } catch (lookup) {
    if (isMissing(lookup)) return { kind: "gone" };
    // The service fails for every call, not only this one: an outage, retried as such.
    if (err.kind === "server") return { kind: "other" };
    throw lookup;
  }
  if (d.is_deleted === true) return { kind: "gone" };
  const locked = d.tier_access === "locked" || d.premium_folder_data?.has_access === false;
  if (d.is_downloadable === false || locked) {
    const why = locked ? "the original is for subscribers or watchers only" : "the artist no longer offers the original for download";
    return { kind: "not_offered", reason: `${why} (the service refused: ${serviceAnswer(err)})`, deviation: d };
  }
  if (err.kind === "server") {
    return {
      kind: "quota",
      reason: `the service answered ${serviceAnswer(err)} to /deviation/download while other calls succeeded: probably the weekly download quota; originals wait for next week`,
      deviation: d,
    };
  }
  return { kind: "quota", reason: `the service refused an original it still offers (${serviceAnswer(err)}): the weekly download quota is spent`, deviation: d };
}

function serviceAnswer(err: ApiError): string {
  return [err.status !== undefined ? `HTTP ${err.status}` : undefined, err.error, err.errorCode !== undefined ? `error_code ${err.errorCode}` : undefined]
    .filter(Boolean)
    .join(" ");
}
