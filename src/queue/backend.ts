// Where the queues live: Redis (today's keys under the install's prefix, docs/ARCHITECTURE.md#redis-keys) or
// PostgreSQL through BullMQ's own PostgreSQL backend (its tables in a schema of their own, `dvault_jobs`, beside
// the mirror's), chosen by DVAULT_ENGINE. Everything that makes a BullMQ Queue, Worker or QueueEvents asks this
// for it, so the producer, the operator's view, the worker host and run-now are the same on either engine; the
// few reads BullMQ's API has no call for (an active job's lock, the event log from a cursor) are here per engine.
import { randomBytes } from "node:crypto";
import {
  assertSchemaCompatibility,
  type BackendFactory,
  ConnectionClosedError,
  createPostgresBackend,
  type Job,
  LATEST_SCHEMA_VERSION,
  PostgresConnection,
  type PostgresConnectionOptions,
  PostgresQueueBackend,
  type Processor,
  Queue,
  QueueEvents,
  runMigrations,
  withBackend,
  Worker,
} from "bullmq";
import type { Redis } from "ioredis";
import type { Config, Engine } from "../config.ts";
import { QUEUE_NAMES } from "./queues.ts";
import { closeRedis, createRedis } from "./redis.ts";
import { holdScratchPrefix, SCRATCH_ID_BYTES, SCRATCH_LIVENESS, type ScratchLiveness, scratchPrefix, sweepDeadScratchPrefixes } from "./redis-scratch.ts";

/** The schema BullMQ's PostgreSQL tables live in, in dvault's database. */
export const JOBS_SCHEMA = "dvault_jobs";

/** A worker and how to close it with whatever connections it was given. */
export type QueueWorker = { worker: Worker; close(): Promise<void> };

export type WorkerSettings = { concurrency: number; name?: string };

/** A job that finished for good ("completed", or "failed" with no attempt left), as the queue's event log says. */
export type FinishedEvent = { event: "completed" | "failed"; name: string };

export interface QueueBackend {
  readonly engine: Engine;
  /** The Redis key prefix, or the PostgreSQL schema. */
  readonly namespace: string;
  /** A Queue on the shared command connection; its close() leaves that connection open. */
  queue(name: string): Queue;
  /** A Worker with connections of its own (BullMQ blocks on them), closed with it. */
  worker(name: string, processor: Processor, settings: WorkerSettings): QueueWorker;
  /** A QueueEvents with a connection of its own (tests and benchmarks wait on it). */
  events(name: string): QueueEvents;
  /** Queues of their own beside these (run-now's private ones): nobody else's worker takes their jobs. */
  scratch(): Promise<ScratchBackend>;
  /**
   * Moves `job` (as read from the active list) back to the queue, due at once and no attempt spent, if it is still
   * that activation by `holder` (its `processedBy` and `processedOn`); BullMQ's move checks the lock token and that
   * it is still active, so a job activated again meanwhile is never taken from whoever has it now.
   */
  requeueActive(queue: Queue, job: Job, holder: string): Promise<boolean>;
  /** Where the queue's event log ends now (a cursor for finishedAfter). */
  eventCursor(queue: string): Promise<string>;
  /** The jobs that finished for good after `cursor`, and the cursor past them. */
  finishedAfter(queue: string, cursor: string): Promise<{ cursor: string; finished: FinishedEvent[] }>;
  /** Closes what the backend opened itself (never the Redis command connection it was given). */
  close(): Promise<void>;
}

export type ScratchBackend = QueueBackend & { discard(): Promise<void> };

/**
 * BullMQ's PostgreSQL tables in one schema, read where its API has no call (src/db/queue-jobs.repository.ts, given
 * by the composition root: this layer opens no database itself).
 */
export type QueueTables = {
  lockOfActivation(queue: string, jobId: string, holder: string, processedOn: number, fresh: string): Promise<string | undefined>;
  lastEventId(queue: string): Promise<string>;
  eventsAfter(queue: string, afterId: string, limit: number): Promise<Array<{ id: string; event: string; jobId: string | null; name: string | null }>>;
  dropSchema(): Promise<void>;
  /** Whether BullMQ's migration ledger is in this schema, read from the catalogs. */
  migrated(): Promise<boolean>;
  /** Holds this scratch schema for this process until the returned call; a process that ends outright lets it go. */
  holdScratch(): Promise<() => Promise<void>>;
  /** Drops this schema's scratch schemas that no live process holds (`--once` runs killed outright). */
  sweepDeadScratches(): Promise<number>;
};

export type QueueTablesOf = (schema: string) => QueueTables;

/** The backend of the configured engine; on PostgreSQL BullMQ's migrations run first (once per schema version). */
export async function createQueueBackend(
  config: Pick<Config, "engine" | "redisUrl" | "redisPrefix" | "databaseUrl">,
  deps: { redis?: Redis; tables?: QueueTablesOf; schema?: string },
): Promise<QueueBackend> {
  if (config.engine === "postgres") {
    if (!deps.tables) throw new Error("the PostgreSQL engine needs its tables' repository");
    return postgresQueueBackend({ url: config.databaseUrl, schema: deps.schema ?? JOBS_SCHEMA, tables: deps.tables });
  }
  if (!deps.redis) throw new Error("the Redis engine needs the command connection");
  return redisQueueBackend({ redis: deps.redis, url: config.redisUrl, prefix: config.redisPrefix });
}

const EVENT_PAGE = 1000;
/** How long a taken-over lock of a lapsed activation holds while it is moved back (requeueActive). */
const TAKEOVER_LOCK_MS = 10_000;

function takeoverToken(): string {
  return `requeue:${randomBytes(8).toString("hex")}`;
}

async function moveBack(job: Job, token: string): Promise<boolean> {
  try {
    await job.moveToDelayed(Date.now(), token);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- Redis

/**
 * `redis` is the command connection, shared and left open; workers get connections of their own from `url`.
 * `liveness`: how a scratch prefix's run keeps it marked as live (src/queue/redis-scratch.ts; a test gives its own).
 */
export function redisQueueBackend({
  redis,
  url,
  prefix,
  liveness = SCRATCH_LIVENESS,
}: {
  redis: Redis;
  url: string;
  prefix: string;
  liveness?: ScratchLiveness;
}): QueueBackend {
  const queue = (name: string) => new Queue(name, { connection: redis, prefix });
  return {
    engine: "redis",
    namespace: prefix,
    queue,
    worker: (name, processor, settings) => redisWorker(url, prefix, name, processor, settings),
    events: (name) => new QueueEvents(name, { connection: createRedis(url, "worker"), prefix }),
    scratch: () => redisScratch({ redis, url, prefix, liveness }),
    async requeueActive(q, job, holder) {
      const jobKey = q.toKey(job.id ?? "");
      const lockKey = `${jobKey}:lock`;
      const reply = (await redis.multi().hget(jobKey, "pb").hget(jobKey, "processedOn").get(lockKey).exec()) ?? [];
      const [pb, processedOn, lock] = reply.map(([, v]) => v as string | null);
      if (pb !== holder || Number(processedOn) !== job.processedOn) return false;
      let token = lock;
      if (token == null) {
        // Its lock already lapsed: take one (an activation meanwhile overwrites it, and the move fails).
        token = takeoverToken();
        if ((await redis.set(lockKey, token, "PX", TAKEOVER_LOCK_MS, "NX")) !== "OK") return false;
      }
      return moveBack(job, token);
    },
    async eventCursor(name) {
      const last = await redis.xrevrange(`${prefix}:${name}:events`, "+", "-", "COUNT", 1).catch(() => []);
      return last[0]?.[0] ?? "0-0";
    },
    async finishedAfter(name, cursor) {
      const finished: FinishedEvent[] = [];
      for (;;) {
        const entries = await redis.xrange(`${prefix}:${name}:events`, `(${cursor}`, "+", "COUNT", EVENT_PAGE);
        if (entries.length === 0) break;
        const ended: Array<{ event: "completed" | "failed"; jobId: string }> = [];
        for (const [, fields] of entries) {
          const f = fieldMap(fields);
          if ((f.event === "completed" || f.event === "failed") && f.jobId) ended.push({ event: f.event, jobId: f.jobId });
        }
        const names = ended.length ? await Promise.all(ended.map((e) => redis.hget(`${prefix}:${name}:${e.jobId}`, "name"))) : [];
        for (const [i, e] of ended.entries()) finished.push({ event: e.event, name: names[i] ?? "unknown" });
        cursor = entries[entries.length - 1]![0];
        if (entries.length < EVENT_PAGE) break;
      }
      return { cursor, finished };
    },
    async close() {},
  };
}

/**
 * A scratch prefix beside `prefix` for a `--once` run, marked as live until discarded; the keys of scratch prefixes of
 * runs killed outright are removed meanwhile (awaited by discard), since nothing else removes them
 * (test/medium/once-scratch-leak.test.ts).
 */
async function redisScratch({
  redis,
  url,
  prefix,
  liveness,
}: {
  redis: Redis;
  url: string;
  prefix: string;
  liveness: ScratchLiveness;
}): Promise<ScratchBackend> {
  const id = randomBytes(SCRATCH_ID_BYTES).toString("hex");
  const letGo = await holdScratchPrefix(redis, prefix, id, liveness);
  const swept = sweepDeadScratchPrefixes(redis, prefix).catch(() => 0);
  const inner = redisQueueBackend({ redis, url, prefix: scratchPrefix(prefix, id), liveness });
  return {
    ...inner,
    async discard() {
      // Listed until every queue is obliterated: keys a failed removal left are the next run's sweep's.
      let removed = false;
      try {
        const obliterated = await Promise.all(
          QUEUE_NAMES.map(async (name) => {
            const q = inner.queue(name);
            const done = await q.obliterate({ force: true }).then(
              () => true,
              () => false,
            );
            await q.close().catch(() => undefined);
            return done;
          }),
        );
        removed = obliterated.every(Boolean);
      } finally {
        await letGo(removed);
        await swept;
      }
    },
  };
}

function redisWorker(url: string, prefix: string, name: string, processor: Processor, settings: WorkerSettings): QueueWorker {
  const connection = createRedis(url, "worker");
  // BullMQ blocks on a duplicate of the connection; keep a hand on it for close() (below).
  const blocking: Redis[] = [];
  const duplicate = connection.duplicate.bind(connection);
  connection.duplicate = (...args: Parameters<Redis["duplicate"]>) => {
    const copy = duplicate(...args);
    blocking.push(copy);
    return copy;
  };
  const worker = new Worker(name, processor, {
    connection,
    prefix,
    concurrency: settings.concurrency,
    autorun: true,
    ...(settings.name ? { name: settings.name } : {}),
  });
  return {
    worker,
    async close() {
      // BullMQ closes a worker by disconnecting its blocking connection and waiting for "end". An ioredis
      // client caught between reconnect attempts (Redis restarted or down) never emits it: disconnect() only
      // cancels the next attempt. Without this the worker would hang on SIGTERM while Redis is away.
      const unstick = setInterval(() => {
        for (const c of blocking) {
          const client = c as unknown as { status: string; manuallyClosing?: boolean; reconnectTimeout?: unknown; setStatus(status: string): void };
          if (client.status === "reconnecting" && client.manuallyClosing && !client.reconnectTimeout) client.setStatus("end");
        }
      }, 100);
      try {
        await worker.close();
      } finally {
        clearInterval(unstick);
      }
      // BullMQ never closes a connection it was given.
      await closeRedis(connection);
    },
  };
}

function fieldMap(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]!] = fields[i + 1]!;
  return out;
}

// ---------------------------------------------------------------- PostgreSQL

/**
 * How long a worker waits after its database call failed for want of a connection before it tries again: fetching the
 * next job, and recording the end of a job that met the outage. BullMQ's own 15 s left a worker idle for up to 15 s
 * after PostgreSQL came back (a 45 s outage: 41–44 s to converge here, 2 s on Redis, whose client queues the calls
 * instead of failing them). A refused connection costs little, so the worker asks every 2 s.
 */
const PG_RUN_RETRY_MS = 2000;

/** Connections of BullMQ's command queues, one pool for all of them (each worker has its own, as on Redis). */
const SHARED_POOL_MAX = 4;

/**
 * BullMQ's PostgreSQL backend on the schema, migrated first. The command queues share one connection (a pool and,
 * for waits, one LISTEN client); a worker or a QueueEvents gets its own, as BullMQ's factory makes them.
 */
export async function postgresQueueBackend({ url, schema, tables }: { url: string; schema: string; tables: QueueTablesOf }): Promise<QueueBackend> {
  const options = { connectionString: url, schema };
  const shared = new PostgresConnection({ ...options, max: SHARED_POOL_MAX });
  shared.on("error", () => undefined);
  try {
    // Once per start on a session of its own (runMigrations takes an advisory lock for the transaction).
    const client = await shared.pool.connect();
    try {
      // A schema already at BullMQ's version is only read (runMigrations would write its ledger and take a lock
      // every time): a read-only database still opens the queues, and what then refuses a write says so.
      // Whether the ledger is there is read from the catalogs first: a failed read of it would leave this session's
      // catalog cache saying "no such schema" under runMigrations' lock (src/db/catalog.ts).
      const current = (await tables(schema).migrated()) ? await assertSchemaCompatibility(client, schema).catch(() => 0) : 0;
      if (current < LATEST_SCHEMA_VERSION) await runMigrations(client, schema);
    } finally {
      client.release();
    }
  } catch (err) {
    await shared.close().catch(() => undefined);
    throw err;
  }
  const factory: BackendFactory<PostgresQueueBackend, PostgresConnectionOptions> = (name, opts, made = {}) => {
    if (made.withBlockingConnection) return recordEndsThroughOutages(createPostgresBackend(name, opts, made));
    return made.blocking ? createPostgresBackend(name, opts, made) : new PostgresQueueBackend(shared, name, opts, false);
  };
  const classes = withBackend(factory);
  const repo = tables(schema);
  const backend: QueueBackend = {
    engine: "postgres",
    namespace: schema,
    // Typed for the Redis connection by default; the API dvault calls is the same on either backend.
    queue: (name) => new classes.Queue(name, { connection: options }) as unknown as Queue,
    worker(name, processor, settings) {
      const worker = new classes.Worker(name, processor, {
        // A connection for each job it runs at once, and one for its own bookkeeping (the LISTEN client is apart).
        connection: { ...options, max: settings.concurrency + 1 },
        concurrency: settings.concurrency,
        autorun: true,
        runRetryDelay: PG_RUN_RETRY_MS,
        ...(settings.name ? { name: settings.name } : {}),
      }) as unknown as Worker;
      return { worker, close: () => worker.close() };
    },
    events: (name) => new classes.QueueEvents(name, { connection: options }) as unknown as QueueEvents,
    scratch: () => postgresScratch({ url, schema, tables }),
    async requeueActive(queue, job, holder) {
      const token = await repo.lockOfActivation(queue.name, job.id ?? "", holder, job.processedOn ?? -1, takeoverToken());
      return token === undefined ? false : moveBack(job, token);
    },
    eventCursor: (name) => repo.lastEventId(name),
    async finishedAfter(name, cursor) {
      const finished: FinishedEvent[] = [];
      for (;;) {
        const rows = await repo.eventsAfter(name, cursor, EVENT_PAGE);
        if (rows.length === 0) break;
        for (const r of rows) if ((r.event === "completed" || r.event === "failed") && r.jobId) finished.push({ event: r.event, name: r.name ?? "unknown" });
        cursor = rows[rows.length - 1]!.id;
        if (rows.length < EVENT_PAGE) break;
      }
      return { cursor, finished };
    },
    close: () => shared.close(),
  };
  return backend;
}

/**
 * A worker's backend whose moves that record how a job's attempt ended wait out a connection the outage broke, as
 * BullMQ waits out a refused one. BullMQ's worker tries such a move again (every runRetryDelay) only for a refused
 * connection (ECONNREFUSED) or its ConnectionClosedError; a pooled connection PostgreSQL dropped meanwhile
 * ("Connection terminated unexpectedly", or 57P01 of a server shutting down) it takes for the job's own failure, so a
 * job whose handler succeeded during the outage was recorded as a failed attempt, for good if it had one
 * (test/medium/queue-postgres-outage.test.ts). Raised as ConnectionClosedError, the original as its cause (which
 * src/queue/outage.ts still reads), the move is tried again until the database is back. So is a move PostgreSQL rolled
 * back as a deadlock's victim (40P01, 40001): nothing of it was written, and BullMQ too took it for the job's failure
 * (test/medium/queue-postgres-outage.test.ts "…a deadlock's victim"). A move the database committed before its answer
 * was lost is refused when tried again (BullMQ's move_to_completed: the job is no longer active) and changes nothing:
 * the job stays as recorded. Refused writes (read-only, disk full) are left to BullMQ: they last until a person acts.
 */
function recordEndsThroughOutages(backend: PostgresQueueBackend): PostgresQueueBackend {
  const moves = ["moveToCompleted", "moveToFailed", "moveToDelayed", "retryJob"] as const;
  for (const name of moves) {
    const move = backend[name].bind(backend) as (...args: unknown[]) => Promise<unknown>;
    Object.assign(backend, { [name]: (...args: unknown[]) => move(...args).catch((err: unknown) => asConnectionLoss(err)) });
  }
  return backend;
}

async function asConnectionLoss(err: unknown): Promise<never> {
  // Loaded when a move fails: outage.ts reads got's errors, which `dvault status` and `jobs` never load (their start-up).
  const { outageOf } = await import("./outage.ts");
  const kind = outageOf(err)?.kind;
  if (kind !== "outage" && kind !== "conflict") throw err;
  const why = kind === "outage" ? "PostgreSQL connection lost" : "PostgreSQL rolled the move back (deadlock or serialization conflict)";
  throw new ConnectionClosedError(`${why}: ${(err as Error).message}`, err as Error);
}

/**
 * A scratch schema beside `schema` for a `--once` run, held by this process until discarded; the scratch schemas of
 * runs killed outright are dropped first, since nothing else removes them (test/medium/once-scratch-leak.test.ts).
 */
async function postgresScratch({ url, schema, tables }: { url: string; schema: string; tables: QueueTablesOf }): Promise<ScratchBackend> {
  await tables(schema)
    .sweepDeadScratches()
    .catch(() => 0);
  const scratchSchema = `${schema}_once_${randomBytes(6).toString("hex")}`;
  const letGo = await tables(scratchSchema).holdScratch();
  let inner: QueueBackend;
  try {
    inner = await postgresQueueBackend({ url, schema: scratchSchema, tables });
  } catch (err) {
    await letGo();
    throw err;
  }
  return {
    ...inner,
    async discard() {
      try {
        await inner.close();
        await tables(scratchSchema).dropSchema();
      } finally {
        await letGo();
      }
    },
  };
}
