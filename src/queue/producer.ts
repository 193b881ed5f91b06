// The single place that decides queue options (job id, dedupe, priority, attempts, retention) per job name,
// and the only entrance that adds a job or installs a job scheduler (scripts/checks/jobs-through-producer.ts).
import { isDeepStrictEqual } from "node:util";
import { sameSchedule, type Schedule } from "../config/schedules.ts";
import type { Job, JobsOptions, Queue } from "bullmq";
import type { QueueBackend } from "./backend.ts";
import type { JobPayloads, RankingOf } from "./contract.ts";
import type { JobDefinition } from "./job-definition.ts";
import { RETENTION, type QueueName } from "./queues.ts";

// biome-ignore lint/suspicious/noExplicitAny: heterogeneous catalogue; each entry is typed by the contract (DefinitionOf)
type AnyDefinition = JobDefinition<string, any, any>;

/** The definitions a Producer over the payload map `M` takes: one per name, each with that name's payload. */
export type DefinitionOf<M extends object> = { [N in keyof M & string]: JobDefinition<N, M[N], RankingOf<N>> }[keyof M & string];

/** `attempts`: fewer than the definition's where a person waits for the outcome (src/queue/run-now.ts). */
export type EnqueueOptions<Ranking = never> = { delayMs?: number; jobId?: string; attempts?: number; ranking?: Ranking };

export type ScheduleOptions = { everyMs?: number; schedulerId?: string };

/** What Queue.add and Queue.addBulk take for one job. */
type PreparedJob = { name: string; data: unknown; opts: JobsOptions };

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

/**
 * Typed by a payload map: the job contract's (src/queue/contract.ts) unless a test gives its own. What a job is
 * queued with comes from its definition here, never from the caller: only the attempts of a run a person waits
 * for, a delay and the ranking its definition orders by.
 */
export class Producer<M extends object = JobPayloads> {
  private readonly queues = new Map<QueueName, Queue>();
  private readonly definitions = new Map<string, AnyDefinition>();

  constructor(
    definitions: readonly NoInfer<DefinitionOf<M>>[],
    /** Where the queues live (src/queue/backend.ts); closing the producer leaves it open. */
    private readonly backend: QueueBackend,
    /** Connection errors of the queues (Redis down, reconnecting); without a listener BullMQ prints them to stderr. */
    private readonly onError: (err: Error, queue: QueueName) => void = () => undefined,
  ) {
    for (const d of definitions) this.definitions.set(d.name, d);
  }

  private queue(name: QueueName): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      queue = this.backend.queue(name);
      queue.on("error", (err) => this.onError(err, name));
      this.queues.set(name, queue);
    }
    return queue;
  }

  optionsFor<N extends keyof M & string>(name: N, payload: M[N], extra: EnqueueOptions<RankingOf<N>> = {}): JobsOptions {
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
    const priority = definition.priority?.(payload, extra.ranking);
    if (priority !== undefined) options.priority = priority;
    if (extra.delayMs) options.delay = extra.delayMs;
    return options;
  }

  async enqueue<N extends keyof M & string>(name: N, payload: M[N], extra: EnqueueOptions<RankingOf<N>> = {}): Promise<Job> {
    const { queue, job } = this.prepared(name, payload, extra);
    return this.queue(queue).add(job.name, job.data, job.opts);
  }

  /**
   * Adds the jobs, in the order given, with one round trip a queue (BullMQ's addBulk) instead of one a job, and returns
   * them in that order. Every payload is checked before any is added.
   */
  async enqueueAll<N extends keyof M & string>(jobs: readonly { name: N; payload: M[N]; options?: EnqueueOptions<never> }[]): Promise<Job[]> {
    const byQueue = new Map<QueueName, { index: number; job: PreparedJob }[]>();
    for (const [index, { name, payload, options }] of jobs.entries()) {
      const { queue, job } = this.prepared(name, payload, options ?? {});
      const entries = byQueue.get(queue);
      if (entries) entries.push({ index, job });
      else byQueue.set(queue, [{ index, job }]);
    }
    const added: Job[] = new Array(jobs.length);
    for (const [queue, entries] of byQueue) {
      const jobsAdded = await this.queue(queue).addBulk(entries.map((e) => e.job));
      for (const [i, { index }] of entries.entries()) added[index] = jobsAdded[i] as Job;
    }
    return added;
  }

  /** A job as its queue takes it: the payload checked against its definition, the options its definition gives. */
  private prepared<N extends keyof M & string>(name: N, payload: M[N], extra: EnqueueOptions<RankingOf<N>>): { queue: QueueName; job: PreparedJob } {
    const definition = this.definition(name);
    return { queue: definition.queue, job: { name, data: definition.payload.parse(payload), opts: this.optionsFor(name, payload, extra) } };
  }

  /**
   * For a job with a deterministic id whose table, not the queue, says it is due (download.file): adds it when its
   * queue holds none pending (a completed or failed one is replaced), promotes a delayed one when `promote` (its
   * wait is over), and leaves one waiting or running as it is.
   */
  async ensure<N extends keyof M & string>(
    name: N,
    payload: M[N],
    opts: { promote: boolean; ranking?: RankingOf<N> },
  ): Promise<"added" | "promoted" | "pending"> {
    const definition = this.definition(name);
    const jobId = definition.jobId?.(payload);
    if (!jobId) throw new Error(`job "${name}" has no deterministic id to ensure it by`);
    const queue = this.queue(definition.queue);
    const state = await queue.getJobState(jobId);
    if (state === "delayed") {
      if (!opts.promote) return "pending";
      await (await queue.getJob(jobId))?.promote();
      return "promoted";
    }
    if (state === "completed" || state === "failed") await queue.remove(jobId);
    else if (state !== "unknown") return "pending";
    await this.enqueue(name, payload, opts.ranking === undefined ? {} : { ranking: opts.ranking });
    return "added";
  }

  /** Holds the queue's jobs where they are (the disk guard: no space for another file), or lets them go again. */
  async pause(name: QueueName): Promise<void> {
    await this.queue(name).pause();
  }

  async resume(name: QueueName): Promise<void> {
    await this.queue(name).resume();
  }

  /** Whether the queue holds the scheduler (the sentinel a Redis that lost its data no longer has: redis-loss-guard.ts). */
  async hasScheduler(name: QueueName, schedulerId: string): Promise<boolean> {
    return (await this.queue(name).getJobScheduler(schedulerId)) != null;
  }

  /** Installs or updates the job's scheduler: one job every `everyMs` (default the definition's `every`), with the definition's options. */
  async schedule<N extends keyof M & string>(name: N, payload: M[N], opts: ScheduleOptions = {}): Promise<void> {
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
  async reconcileSchedules<N extends keyof M & string>(
    name: N,
    idPrefix: string,
    wanted: ReadonlyMap<string, { repeat: Schedule; payload: M[N] }>,
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

  private async upsertScheduler<N extends keyof M & string>(id: string, repeat: Schedule, name: N, payload: M[N]): Promise<void> {
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

  private definition(name: string): AnyDefinition {
    const definition = this.definitions.get(name);
    if (!definition) throw new Error(`unknown job "${name}"`);
    return definition;
  }
}
