// schedules.reconcile: rebuilds the job schedulers from Postgres (accounts, tracked users), so losing
// Redis's contents loses nothing and `dvault track add` takes effect without a restart.
import { z } from "zod";
import type { JobDefinition } from "../../src/queue/job-definition.ts";

export const ReconcilePayload = z.object({});
export type ReconcilePayload = z.infer<typeof ReconcilePayload>;

export const reconcileSchedulesDefinition = {
  name: "schedules.reconcile",
  queue: "maintenance",
  payload: ReconcilePayload,
  attempts: 1,
  backoffMs: 60_000,
  every: 5 * 60_000,
} satisfies JobDefinition<"schedules.reconcile", ReconcilePayload>;

declare module "../../src/queue/contract.ts" {
  interface JobPayloads {
    "schedules.reconcile": ReconcilePayload;
  }
}
