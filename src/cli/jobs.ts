// `dvault jobs`: what failed and why (reason, attempts, times, payload ids), selective retry, and pausing
// or resuming a queue, without reading logs or opening Redis.
import type { Command } from "commander";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { type Config, loadConfig } from "../config.ts";
import { SOURCE_NAMES } from "../config-defaults.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { retryDownloadNow } from "../downloads/retry-now.ts";
import { UserError } from "../errors.ts";
import { createPgPool } from "../db/connect.ts";
import { QueueJobsRepository } from "../db/queue-jobs.repository.ts";
import type { Coordinator } from "../coord/coordinator.ts";
import { postgresCoordinator } from "../coord/postgres.ts";
import { redisCoordinator } from "../coord/redis.ts";
import { createQueueBackend, type QueueBackend } from "../queue/backend.ts";
import { refuseIfMovedAway } from "../queue/holder.ts";
import { isQueueName, QueueAdmin, type FailedJob, type RetryOutcome } from "../queue/queue-admin.ts";
import { QUEUE_NAMES, type QueueName } from "../queue/queues.ts";
import { Producer } from "../queue/producer.ts";
import { closeRedis } from "../queue/redis.ts";
import { createServices, openRedis, type Services } from "../services.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { limitOption } from "./limit-option.ts";
import { formatRelative } from "../status/units.ts";

function parseQueue(name: string | undefined): QueueName | undefined {
  if (name === undefined) return undefined;
  if (!isQueueName(name)) throw new UserError(`unknown queue "${name}": choose from ${QUEUE_NAMES.join(", ")}`);
  return name;
}

/** `--source`: a name no source has (a typo) matched no job, and said "no failed jobs" however many had failed. */
function parseSource(name: string | undefined): string | undefined {
  if (name === undefined || (SOURCE_NAMES as readonly string[]).includes(name)) return name;
  throw new UserError(`unknown source "${name}": choose from ${SOURCE_NAMES.join(", ")}`);
}

async function withAdmin<T>(run: (admin: QueueAdmin) => Promise<T>): Promise<T> {
  const opened = await openQueues(loadConfig());
  const { config } = opened;
  // A failed download is retried through its row (src/downloads/retry-now.ts): the database is opened only then.
  let services: Services | undefined;
  const retryDownload = async (data: unknown) => {
    services ??= await createServices({ config, log: cliLogger(config) });
    const producer = new Producer([...JOB_DEFINITIONS], services.queues);
    try {
      return await retryDownloadNow(services, producer, data);
    } finally {
      await producer.close();
    }
  };
  const admin = new QueueAdmin(opened.backend, retryDownload);
  try {
    return await run(admin);
  } finally {
    await services?.close();
    await admin.close();
    await opened.close();
  }
}

/**
 * The queues alone, on the configured engine: on Redis its connection (checked in one line, the prefix settled);
 * on PostgreSQL alone dvault's database (DATABASE_URL=embedded: the server dvault runs, held until close()).
 */
async function openQueues(configured: Config): Promise<{ config: Config; backend: QueueBackend; close(): Promise<void> }> {
  const opened = await openEngine(configured);
  try {
    // On an engine `dvault engine migrate` moved the install away from, the queues are no one's: a queue resumed or
    // a job retried there would never run, and its failures are the past's.
    await refuseIfMovedAway(opened.coord, opened.config.redisPrefix, "nothing was read or changed");
  } catch (err) {
    await opened.close();
    throw err;
  }
  return opened;
}

async function openEngine(configured: Config): Promise<{ config: Config; coord: Coordinator; backend: QueueBackend; close(): Promise<void> }> {
  if (configured.engine === "postgres") {
    const database = await resolveDatabase(configured, { migrate: false });
    const { config } = database;
    const pool = createPgPool(config.databaseUrl, 2);
    const backend = await createQueueBackend(config, { tables: (schema: string) => new QueueJobsRepository(pool, schema) });
    const close = async () => {
      await backend.close();
      await pool.end();
      database.release();
    };
    return { config, coord: await postgresCoordinator(pool), backend, close };
  }
  const { config, redis } = await openRedis(configured);
  const backend = await createQueueBackend(config, { redis });
  const close = async () => {
    await backend.close();
    await closeRedis(redis);
  };
  return { config, coord: redisCoordinator(redis), backend, close };
}

/** The payload's ids in one line: accountId=1 source=gallery key=... */
function payloadLine(data: Record<string, unknown>): string {
  return Object.entries(data)
    .filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : String(v)}`)
    .join(" ");
}

/** The failed jobs listed; `more` when more failed than these (the newest), which --limit lists. */
export function formatFailed(jobs: readonly FailedJob[], now: number, more = false): string {
  if (jobs.length === 0) return "no failed jobs";
  const lines: string[] = [];
  for (const j of jobs) {
    lines.push(`${j.queue}/${j.id}  ${j.name}  ${payloadLine(j.data)}`);
    lines.push(`  failed ${formatRelative(j.failedAt, now)} after ${j.attemptsMade} of ${j.attempts} attempt(s); created ${formatRelative(j.createdAt, now)}`);
    lines.push(`  reason: ${j.reason || "(none recorded)"}`);
  }
  const listed = more ? `${jobs.length} failed job(s) listed, the newest; more failed (--limit lists more).` : `${jobs.length} failed job(s).`;
  lines.push("", `${listed} Retry one with: dvault jobs retry <id>, or all with: dvault jobs retry --all`);
  return lines.join("\n");
}

function printRetry(outcome: RetryOutcome): void {
  for (const r of outcome.retried) printOut(`retried ${r.queue}/${r.id}`);
  for (const s of outcome.skipped) printOut(`not retried ${s.queue ? `${s.queue}/` : ""}${s.id}: ${s.reason}`);
  if (outcome.retried.length === 0 && outcome.skipped.length === 0) printOut("no failed jobs to retry");
  if (outcome.retried.length === 0 && outcome.skipped.length > 0) process.exitCode = 1;
}

export function registerJobsCommand(program: Command): void {
  const jobs = program.command("jobs").description("inspect failed jobs, retry them, pause or resume a queue");

  jobs
    .command("failed")
    .description("list failed jobs with the reason, attempts, times and payload ids (newest first)")
    .option("--queue <queue>", `only this queue (${QUEUE_NAMES.join(", ")})`)
    .option("--source <source>", "only sync jobs of this source (gallery, notes, ...)")
    .option("--limit <n>", "at most this many", limitOption(), 100)
    .option("--json", "print JSON")
    .action(async (opts: { queue?: string; source?: string; limit: number; json?: boolean }) => {
      const queue = parseQueue(opts.queue);
      const source = parseSource(opts.source);
      // One more than asked for says whether more failed than are listed.
      const read = await withAdmin((admin) => admin.failed({ queue, source, limit: opts.limit + 1 }));
      const failed = read.slice(0, opts.limit);
      if (opts.json) printJson(failed);
      else printOut(formatFailed(failed, Date.now(), read.length > failed.length));
    });

  jobs
    .command("retry")
    .description("move failed jobs back to waiting with a fresh attempt budget: one by id, or --all")
    .argument("[id]", "the job id shown by dvault jobs failed")
    .option("--all", "every failed job (of --queue / --source when given)")
    .option("--queue <queue>", "the job's queue (default: look in every queue)")
    .option("--source <source>", "with --all: only sync jobs of this source")
    .action(async (id: string | undefined, opts: { all?: boolean; queue?: string; source?: string }) => {
      const queue = parseQueue(opts.queue);
      const source = parseSource(opts.source);
      if (!id && !opts.all) throw new UserError("name a job id (see dvault jobs failed) or pass --all");
      if (id && opts.all) throw new UserError("give either a job id or --all, not both");
      // A job id names one job already: a --source beside it would be taken and do nothing.
      if (id && source) throw new UserError("--source goes with --all: a job id names one job (dvault jobs failed --source shows its ids)");
      // "sync/123" as printed by `jobs failed` names the queue too.
      const slash = id?.indexOf("/") ?? -1;
      const named = id && slash > 0 && isQueueName(id.slice(0, slash)) ? { queue: id.slice(0, slash) as QueueName, id: id.slice(slash + 1) } : undefined;
      const outcome = await withAdmin((admin) => (id ? admin.retry(named?.id ?? id, queue ?? named?.queue) : admin.retryAll({ queue, source })));
      printRetry(outcome);
    });

  for (const action of ["pause", "resume"] as const) {
    jobs
      .command(action)
      .description(action === "pause" ? "stop workers from starting jobs of a queue (active jobs finish)" : "let workers take jobs of a paused queue again")
      .argument("<queue>", QUEUE_NAMES.join(" | "))
      .action(async (name: string) => {
        const queue = parseQueue(name) as QueueName;
        await withAdmin((admin) => (action === "pause" ? admin.pause(queue) : admin.resume(queue)));
        printOut(`${queue}: ${action === "pause" ? "paused" : "resumed"}`);
      });
  }
}
