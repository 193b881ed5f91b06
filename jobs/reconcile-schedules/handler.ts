import type { JobResult } from "../../src/queue/job-definition.ts";
import { reconcileSchedules } from "../../src/sync/schedules.ts";
import type { WorkerContext } from "../context.ts";
import type { ReconcilePayload } from "./definition.ts";

export async function reconcileSchedulesHandler(_payload: ReconcilePayload, ctx: WorkerContext): Promise<JobResult> {
  const summary = await reconcileSchedules({ services: ctx.services, producer: ctx.producer, sources: ctx.sources, everyMs: ctx.everyMs });
  return { status: "done", ...summary };
}
