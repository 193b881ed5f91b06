// What every dvault job handler receives: the queue's context plus the services and the source registry.
import type { JobContext } from "../src/queue/job-definition.ts";
import type { Producer } from "../src/queue/producer.ts";
import type { ProgressSink } from "../src/queue/progress.ts";
import type { Schedules } from "../src/config/schedules.ts";
import type { Services } from "../src/services.ts";
import type { SourceDefinition, SourceName } from "../src/sync/source.ts";

export type WorkerContext = JobContext & {
  services: Services;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  producer: Producer;
  everyMs: Partial<Record<SourceName, number>>;
  /** The running worker's heartbeat id (`<host>:<pid>`); absent where no worker runs (`--once`, `digest --alerts`). */
  workerId?: string;
  /** The sources' schedules as the worker last read the settings (SIGHUP re-reads them); default the config's. */
  schedules?: () => Schedules;
  /** Only where a person watches the run in this process (`sync --once`, the demo): src/queue/progress.ts. */
  progress?: ProgressSink;
  /**
   * The downloads a sync wants are run by this process (`dvault archive --once`'s download step, beside the sync):
   * they stay wanted for it, not handed to the worker's queue (sync-source/handler.ts).
   */
  downloadsHere?: boolean;
};
