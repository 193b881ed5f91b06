// The single place that decides queue options (job id, dedupe, priority, attempts, retention) per job name,
// and the only entrance that adds a job or installs a job scheduler (scripts/checks/jobs-through-producer.ts).
import { isDeepStrictEqual } from "node:util";
import { sameSchedule, type Schedule } from "../config/schedules.ts";
import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import type { JobDefinition } from "./job-definition.ts";
import { QUEUE_NAMES, RETENTION, type QueueName } from "./queues.ts";

// biome-ignore lint/suspicious/noExplicitAny: heterogeneous catalogue; typed through PayloadOf
type AnyDefinition = JobDefinition<string, any>;
type PayloadOf<D extends AnyDefinition, N extends string> = D extends JobDefinition<N, infer P> ? P : never;

/** `attempts`: fewer than the definition's where a person waits for the outcome (src/queue/run-now.ts). */
export type EnqueueOptions = { delayMs?: number; jobId?: string; priority?: number; attempts?: number };

export type ScheduleOptions = { everyMs?: number; schedulerId?: string };

/** The id prefix of the sources' job schedulers (src/sync/schedules.ts installs them; `dvault status` reads their next run). */
export const SOURCE_SCHEDULER_PREFIX = "sched";

/** Deterministic job and scheduler ids; BullMQ refuses ':' in custom ids. */
export function syncJobId(p: { accountId: number; source: string; key?: string }, prefix = "sync"): string {
  return `${prefix}-${p.accountId}-${p.source}-${encodeURIComponent(p.key ?? "").replace(/%/g, "_")}`;
}

/** The scheduler id of a job run on a schedule, e.g. `maint-tokens-refresh`. */
export function schedulerIdOf(name: string): string {
  return `maint-${name.replaceAll(".", "-")}`;
}

export class Producer<D extends AnyDefinition> {
  private readonly queues = new Map<QueueName, Queue>();
  private readonly definitions = new Map<string, D>();

  constructor(
    definitions: readonly D[],
    private readonly connection: Redis,
    private readonly prefix: string,
    /** Connection errors of the queues (Redis down, reconnecting); without a listener BullMQ prints them to stderr. */
    private readonly onError: (err: Error, queue: QueueName) => void = () => undefined,
  ) {
    for (const d of definitions) this.definitions.set(d.name, d);
  }

  queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = new Queue(name, { connection: this.connection, prefix: this.prefix });
      queue.on("error", (err) => this.onError(err, name));
      this.queues.set(name, queue);
    }
    return queue;
  }

  optionsFor<N extends D["name"]>(name: N, payload: PayloadOf<D, N>, extra: EnqueueOptions = {}): JobsOptions {
    const definition = this.definition(name);
    const options: JobsOptions = {
      ...RETENTION,
      attempts: extra.attempts ?? definition.attempts,
      backoff: { type: "exponential", delay: definition.backoffMs, jitter: definition.jitter ?? 0.5 },
    };
    const jobId = extra.jobId ?? definition.jobId?.(payload);
    if (jobId) options.jobId = jobId;
    const dedupeKey = jobId ? undefined : definition.dedupeKey?.(payload);
    if (dedupeKey) options.deduplication = { id: dedupeKey, keepLastIfActive: true };
    if (definition.removeOnComplete) options.removeOnComplete = true;
    const priority = extra.priority ?? definition.priority?.(payload);
    if (priority !== undefined) options.priority = priority;
    if (extra.delayMs) options.delay = extra.delayMs;
    return options;
  }

  async enqueue<N extends D["name"]>(name: N, payload: PayloadOf<D, N>, extra: EnqueueOptions = {}) {
    const definition = this.definition(name);
    const data = definition.payload.parse(payload);
    return this.queue(definition.queue).add(name, data, this.optionsFor(name, payload, extra));
  }

  /** Installs or updates the job's scheduler: one job every `everyMs` (default the definition's `every`), with the definition's options. */
  async schedule<N extends D["name"]>(name: N, payload: PayloadOf<D, N>, opts: ScheduleOptions = {}): Promise<void> {
    const definition = this.definition(name);
    const every = opts.everyMs ?? definition.every;
    if (!every) throw new Error(`job "${name}" has no interval: give its definition one (every) or pass everyMs`);
    await this.upsertScheduler(opts.schedulerId ?? schedulerIdOf(name), { every }, name, payload);
  }

  /**
   * Makes the job's schedulers whose ids start with `<idPrefix>-` exactly `wanted` (id → schedule and payload):
   * installs each that is missing or changed, removes the others, and leaves an unchanged one as it is, so its
   * next run stays where it was (a changed DVAULT_SCHEDULE_* moves only its own sources). For schedules built
   * from the database and the settings (one per source).
   */
  async reconcileSchedules<N extends D["name"]>(
    name: N,
    idPrefix: string,
    wanted: ReadonlyMap<string, { repeat: Schedule; payload: PayloadOf<D, N> }>,
  ): Promise<{ scheduled: number; removed: number; changed: number }> {
    const queue = this.queue(this.definition(name).queue);
    let removed = 0;
    const current = new Map<string, { repeat: Schedule; data: unknown }>();
    for (const scheduler of await queue.getJobSchedulers(0, -1)) {
      const id = scheduler.key;
      if (!id.startsWith(`${idPrefix}-`)) continue;
      if (!wanted.has(id)) {
        if (await queue.removeJobScheduler(id)) removed++;
      } else {
        const repeat = scheduler.pattern ? { pattern: scheduler.pattern, tz: scheduler.tz ?? "UTC" } : { every: Number(scheduler.every) };
        current.set(id, { repeat, data: scheduler.template?.data });
      }
    }
    let changed = 0;
    for (const [id, { repeat, payload }] of wanted) {
      const now = current.get(id);
      if (now && sameSchedule(now.repeat, repeat) && isDeepStrictEqual(now.data, this.definition(name).payload.parse(payload))) continue;
      await this.upsertScheduler(id, repeat, name, payload);
      changed++;
    }
    return { scheduled: wanted.size, removed, changed };
  }

  private async upsertScheduler<N extends D["name"]>(id: string, repeat: Schedule, name: N, payload: PayloadOf<D, N>): Promise<void> {
    const definition = this.definition(name);
    const data = definition.payload.parse(payload);
    // A scheduler's jobs get their own ids and are never deduplicated or delayed: the rest of the options apply.
    const { jobId: _jobId, deduplication: _dedupe, delay: _delay, ...opts } = this.optionsFor(name, payload);
    await this.queue(definition.queue).upsertJobScheduler(id, { ...repeat }, { name, data, opts });
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }

  allQueues(): Queue[] {
    return QUEUE_NAMES.map((name) => this.queue(name));
  }

  private definition(name: string): D {
    const definition = this.definitions.get(name);
    if (!definition) throw new Error(`unknown job "${name}"`);
    return definition;
  }
}
