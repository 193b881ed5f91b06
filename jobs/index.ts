// The job catalogue: each definition paired with its handler; checked at worker boot (checkCatalogue).
import { defineJob } from "../src/queue/job-definition.ts";
import type { WorkerContext } from "./context.ts";
import { downloadFileDefinition } from "./download/definition.ts";
import { downloadFileHandler } from "./download/handler.ts";
import { enqueueDownloadsDefinition } from "./enqueue-downloads/definition.ts";
import { enqueueDownloadsHandler } from "./enqueue-downloads/handler.ts";
import { reconcileSchedulesDefinition } from "./reconcile-schedules/definition.ts";
import { reconcileSchedulesHandler } from "./reconcile-schedules/handler.ts";
import { refreshTokensDefinition } from "./refresh-tokens/definition.ts";
import { refreshTokensHandler } from "./refresh-tokens/handler.ts";
import { syncSourceDefinition } from "./sync-source/definition.ts";
import { syncSourceHandler } from "./sync-source/handler.ts";
import { alertsDefinition } from "./alerts/definition.ts";
import { alertsHandler } from "./alerts/handler.ts";
import { digestDefinition } from "./digest/definition.ts";
import { digestHandler } from "./digest/handler.ts";
import { thumbnailsDefinition } from "./thumbnails/definition.ts";
import { thumbnailsHandler } from "./thumbnails/handler.ts";

export const JOBS = [
  defineJob<"sync.source", ReturnType<typeof syncSourceDefinition.payload.parse>, WorkerContext>(syncSourceDefinition, syncSourceHandler),
  defineJob<"tokens.refresh", ReturnType<typeof refreshTokensDefinition.payload.parse>, WorkerContext>(refreshTokensDefinition, refreshTokensHandler),
  defineJob<"schedules.reconcile", ReturnType<typeof reconcileSchedulesDefinition.payload.parse>, WorkerContext>(
    reconcileSchedulesDefinition,
    reconcileSchedulesHandler,
  ),
  defineJob<"download.file", ReturnType<typeof downloadFileDefinition.payload.parse>, WorkerContext>(downloadFileDefinition, downloadFileHandler),
  defineJob<"downloads.enqueue", ReturnType<typeof enqueueDownloadsDefinition.payload.parse>, WorkerContext>(
    enqueueDownloadsDefinition,
    enqueueDownloadsHandler,
  ),
  defineJob<"digest.send", ReturnType<typeof digestDefinition.payload.parse>, WorkerContext>(digestDefinition, digestHandler),
  defineJob<"alerts.evaluate", ReturnType<typeof alertsDefinition.payload.parse>, WorkerContext>(alertsDefinition, alertsHandler),
  defineJob<"thumbnails.backfill", ReturnType<typeof thumbnailsDefinition.payload.parse>, WorkerContext>(thumbnailsDefinition, thumbnailsHandler),
];
export { JOB_DEFINITIONS } from "./definitions.ts";
