// sync.source jobs run now, in this process: the worker's handler through WorkerHost on a private queue
// (jobs/run-here.ts), for `dvault sync --once` and the demo alike. The downloads a run wants go to the
// worker's queue, as they do from the worker. One attempt each, but a failure that passes is run again, from
// what its pages saved, while the run's patience lasts (src/sync/run-patiently.ts); what still fails then is
// left to the source's schedule.
import type { JobEntry } from "../../src/queue/job-definition.ts";
import type { Logger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { type ProgressSink, safeSink } from "../../src/queue/progress.ts";
import { RunPatience, type RunPatienceSettings } from "../../src/queue/run-patience.ts";
import type { Services } from "../../src/services.ts";
import type { RunSourceResult } from "../../src/sync/run-source.ts";
import { failureInRun } from "../../src/sync/run-patiently.ts";
import type { SourceName } from "../../src/sync/source.ts";
import type { WorkerContext } from "../context.ts";
import { JOB_DEFINITIONS } from "../definitions.ts";
import { runHere } from "../run-here.ts";
import type { SyncSourcePayload } from "./definition.ts";

/** What a sync.source job returns (handler.ts). */
export type SyncJobValue = {
  status: "done" | "skipped";
  result?: RunSourceResult["status"];
  reason?: string;
  new?: number;
  changed?: number;
  removed?: number;
  apiCalls?: number;
  /** Requests that waited for dvault's own pacer. */
  paced?: number;
  /** Answers in which the service refused a request as too many. */
  throttled?: number;
  durationMs?: number;
  full?: boolean;
};

export type SyncHereRun = { accountId: number; source: SourceName; key: string };

/** Each run's job value, or why it did not complete (`interrupted`: stopped by the caller's signal first); in the order of `runs`. */
export type SyncHereOutcome = { value: SyncJobValue } | { error: string; interrupted?: boolean };

export async function runSyncHere(args: {
  services: Services;
  log: Logger;
  runs: readonly SyncHereRun[];
  full: boolean;
  signal?: AbortSignal;
  /** Default the config's DVAULT_RUN_* settings; real time, as the queue's delays are. */
  patience?: RunPatienceSettings;
  progress?: ProgressSink;
  /** The downloads the runs want are run by this process (WorkerContext.downloadsHere). */
  downloadsHere?: boolean;
}): Promise<SyncHereOutcome[]> {
  const { services, log, runs, full } = args;
  const patience = new RunPatience(args.patience ?? services.config.runPatience);
  // The worker's sync.source handler, with this run's patience around it.
  const around = (entry: JobEntry<WorkerContext>): JobEntry<WorkerContext> => {
    if (entry.definition.name !== "sync.source") return entry;
    return {
      ...entry,
      handler: async (payload: SyncSourcePayload, ctx: WorkerContext) => {
        const key = `${payload.accountId}:${payload.source}:${payload.key}`;
        try {
          const value = await entry.handler(payload, ctx);
          patience.succeeded(key);
          return value;
        } catch (err) {
          throw failureInRun(patience, key, err);
        }
      },
    };
  };
  const tellProgress = safeSink(args.progress);
  // A saved page is progress: the run's patience starts again (a source may run longer than it).
  const progress: ProgressSink = (event) => {
    if (event.type === "source") patience.progressed(event.id);
    tellProgress(event);
  };
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  try {
    const outcomes = await runHere(
      {
        services,
        log,
        producer,
        queue: "sync",
        around,
        progress,
        // One attempt: a failure that passes comes back as a delay while the run's patience lasts (above).
        retry: { in: "here", attempts: 1 },
        ...(args.signal ? { signal: args.signal } : {}),
        ...(args.downloadsHere ? { downloadsHere: true } : {}),
      },
      runs.map((run) => ({
        name: "sync.source",
        payload: { accountId: run.accountId, source: run.source, key: run.key, ...(full ? { full: true } : {}) },
      })),
    );
    return outcomes.map((o) => {
      if (o.state === "completed") return { value: (o.value ?? { status: "skipped" }) as SyncJobValue };
      return o.state === "interrupted" ? { error: o.reason, interrupted: true } : { error: o.reason };
    });
  } finally {
    await producer.close();
  }
}
