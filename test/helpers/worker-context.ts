// What the worker hands a job's handler (jobs/context.ts), for tests that call a handler directly: the first attempt of
// a job that is never stopped, with the services, producer and log given and, unless given, no sync source.
import type { WorkerContext } from "../../jobs/context.ts";

export function workerContext(parts: Pick<WorkerContext, "services" | "producer" | "log"> & Partial<Pick<WorkerContext, "sources">>): WorkerContext {
  return { jobId: "test", attempt: 1, signal: new AbortController().signal, sources: new Map(), everyMs: {}, ...parts };
}
