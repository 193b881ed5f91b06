// The job catalogue: each definition paired with its handler; checked at worker boot (checkCatalogue).
import { defineJob } from "../src/queue/job-definition.ts";
import type { WorkerContext } from "./context.ts";
import { reconcileSchedulesDefinition } from "./reconcile-schedules/definition.ts";
import { reconcileSchedulesHandler } from "./reconcile-schedules/handler.ts";
import { refreshTokensDefinition } from "./refresh-tokens/definition.ts";
import { refreshTokensHandler } from "./refresh-tokens/handler.ts";
import { syncSourceDefinition } from "./sync-source/definition.ts";
import { syncSourceHandler } from "./sync-source/handler.ts";

export const JOBS = [
  defineJob<"sync.source", ReturnType<typeof syncSourceDefinition.payload.parse>, WorkerContext>(syncSourceDefinition, syncSourceHandler),
  defineJob<"tokens.refresh", ReturnType<typeof refreshTokensDefinition.payload.parse>, WorkerContext>(refreshTokensDefinition, refreshTokensHandler),
  defineJob<"schedules.reconcile", ReturnType<typeof reconcileSchedulesDefinition.payload.parse>, WorkerContext>(
    reconcileSchedulesDefinition,
    reconcileSchedulesHandler,
  ),
];
export { JOB_DEFINITIONS } from "./definitions.ts";
