// The single place that decides queue options (job id, dedupe, priority, attempts, retention) per job name.
import { Queue, type JobsOptions } from "bullmq";
import type { Redis } from "ioredis";
import type { JobDefinition } from "./job-definition.ts";
import { QUEUE_NAMES, RETENTION, type QueueName } from "./queues.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- heterogeneous catalogue; typed through PayloadOf
type AnyDefinition = JobDefinition<string, any>;
type PayloadOf<D extends AnyDefinition, N extends string> = D extends JobDefinition<N, infer P> ? P : never;

export type EnqueueOptions = { delayMs?: number; jobId?: string };

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
      attempts: definition.attempts,
      backoff: { type: "exponential", delay: definition.backoffMs, jitter: 0.5 },
    };
    const jobId = extra.jobId ?? definition.jobId?.(payload);
    if (jobId) options.jobId = jobId;
    const dedupeKey = jobId ? undefined : definition.dedupeKey?.(payload);
    if (dedupeKey) options.deduplication = { id: dedupeKey, keepLastIfActive: true };
    const priority = definition.priority?.(payload);
    if (priority !== undefined) options.priority = priority;
    if (extra.delayMs) options.delay = extra.delayMs;
    return options;
  }

  async enqueue<N extends D["name"]>(name: N, payload: PayloadOf<D, N>, extra: EnqueueOptions = {}) {
    const definition = this.definition(name);
    const data = definition.payload.parse(payload);
    return this.queue(definition.queue).add(name, data, this.optionsFor(name, payload, extra));
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
