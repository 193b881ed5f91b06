// Every job definition, for the producer (which must not import handlers).
import { reconcileSchedulesDefinition } from "./reconcile-schedules/definition.ts";
import { refreshTokensDefinition } from "./refresh-tokens/definition.ts";
import { syncSourceDefinition } from "./sync-source/definition.ts";

export const JOB_DEFINITIONS = [syncSourceDefinition, refreshTokensDefinition, reconcileSchedulesDefinition] as const;
export type JobDefinitions = (typeof JOB_DEFINITIONS)[number];
