// Every job definition, for the producer (which must not import handlers).
import type { JobName, JobPayloads } from "../src/queue/contract.ts";
import type { DefinitionOf } from "../src/queue/producer.ts";
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

// The catalogue is the job contract's (src/queue/contract.ts), exactly: each definition carries its name's
// payload (DefinitionOf), and no name of the contract lacks a definition nor the other way round.
JOB_DEFINITIONS satisfies readonly DefinitionOf<JobPayloads>[];
type Unmatched = Exclude<JobName, JobDefinitions["name"]> | Exclude<JobDefinitions["name"], JobName>;
const catalogueMatchesContract: [Unmatched] extends [never] ? true : Unmatched = true;
void catalogueMatchesContract;
