// alerts.evaluate: every minute, the current conditions become incidents; each incident is notified once
// through the digest channels, reminded at most daily, and resolved when its condition is gone.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const AlertsPayload = z.object({});
export type AlertsPayload = z.infer<typeof AlertsPayload>;

export const ALERTS_JOB = "alerts.evaluate";

export const alertsDefinition = {
  name: ALERTS_JOB,
  queue: "maintenance",
  payload: AlertsPayload,
  attempts: 1,
  backoffMs: 60_000,
  every: 60_000,
} satisfies JobDefinition<typeof ALERTS_JOB, AlertsPayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "alerts.evaluate": AlertsPayload;
  }
}
