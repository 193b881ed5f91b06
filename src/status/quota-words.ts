// The words `dvault status` and the dashboard's overview share for a week's quota the service cut short: it
// refused before the configured allowance was used (docs/service-behaviour.md#quota-weekly), so the allowance
// shown is what it really gave, and the line says how to make the configuration match (docs/status.md).
import type { StatusReport } from "./schema.ts";

type QuotaView = StatusReport["downloads"]["quota"][number];

/** null while the configured allowance holds; otherwise what the service allowed, against what is configured. */
export function quotaServedLine(q: Pick<QuotaView, "account" | "limit" | "limitFrom" | "configuredLimit">): string | null {
  if (q.limitFrom !== "service") return null;
  return `the service refused after ${q.limit} this week, not the ${q.configuredLimit} configured: set this account's allowance with dvault account set ${q.account} --download-quota N (10 free, 150 or 300 for paid tiers)`;
}
