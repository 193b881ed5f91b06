// Every job definition, for the producer (which must not import handlers).
import { downloadFileDefinition } from "./download/definition.ts";
import { enqueueDownloadsDefinition } from "./enqueue-downloads/definition.ts";
import { reconcileSchedulesDefinition } from "./reconcile-schedules/definition.ts";
import { refreshTokensDefinition } from "./refresh-tokens/definition.ts";
import { syncSourceDefinition } from "./sync-source/definition.ts";
import { alertsDefinition } from "./alerts/definition.ts";
import { digestDefinition } from "./digest/definition.ts";
import { thumbnailsDefinition } from "./thumbnails/definition.ts";

export const JOB_DEFINITIONS = [
  syncSourceDefinition,
  refreshTokensDefinition,
  reconcileSchedulesDefinition,
  downloadFileDefinition,
  enqueueDownloadsDefinition,
  digestDefinition,
  alertsDefinition,
  thumbnailsDefinition,
] as const;
export type JobDefinitions = (typeof JOB_DEFINITIONS)[number];
/** Every job's name: a union, so a misspelt name does not compile (Producer.enqueue and Producer.schedule take these). */
export type JobName = JobDefinitions["name"];
