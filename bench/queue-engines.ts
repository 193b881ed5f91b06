// `node --import tsx bench/queue-engines.ts [jobs] [rounds]`: the queues on either engine (src/queue/backend.ts),
// interleaved in one run: 2 000 jobs added in one bulk and processed by one worker at concurrency 16, with the
// retention every dvault job has (src/queue/queues.ts). Each round has queues of its own (a Redis prefix, a
// PostgreSQL schema), removed after it. Prints a table; writes no document.
import { randomBytes } from "node:crypto";
import { createPgPool } from "../src/db/connect.ts";
import { QueueJobsRepository } from "../src/db/queue-jobs.repository.ts";
import { postgresQueueBackend, type QueueBackend, redisQueueBackend } from "../src/queue/backend.ts";
import { RETENTION } from "../src/queue/queues.ts";
import { createRedis, deleteKeysByPrefix } from "../src/queue/redis.ts";
import { BENCH_PG_URL, BENCH_REDIS_URL, machine, median, table } from "./bench-env.ts";

const JOBS = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);
const CONCURRENCY = 16;

type Figures = { addMs: number; processMs: number; totalMs: number };

async function round(backend: QueueBackend): Promise<Figures> {
  const queue = backend.queue("downloads");
  const started = performance.now();
  await queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: "bench.job", data: { i }, opts: { ...RETENTION } })));
  const added = performance.now();
  const hosted = backend.worker("downloads", async () => ({ status: "done" }), { concurrency: CONCURRENCY });
  let done = 0;
  // Attached before the worker's first job can end (it starts on the next turn of the event loop).
  const finished = new Promise<void>((resolve) => {
    hosted.worker.on("completed", () => {
      if (++done === JOBS) resolve();
    });
  });
  await finished;
  const ended = performance.now();
  await hosted.close();
  await queue.close();
  return { addMs: added - started, processMs: ended - added, totalMs: ended - started };
}

async function main(): Promise<void> {
  const redis = createRedis(BENCH_REDIS_URL);
  await redis.connect();
  const pool = createPgPool(BENCH_PG_URL, 2);
  const results: Record<"redis" | "postgres", Figures[]> = { redis: [], postgres: [] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      const tag = randomBytes(4).toString("hex");
      // Redis first in even rounds, PostgreSQL first in odd ones: neither always runs on a warmer machine.
      const order: Array<"redis" | "postgres"> = r % 2 === 0 ? ["redis", "postgres"] : ["postgres", "redis"];
      for (const engine of order) {
        if (engine === "redis") {
          const prefix = `dvault-bench-queues-${tag}`;
          results.redis.push(await round(redisQueueBackend({ redis, url: BENCH_REDIS_URL, prefix })));
          await deleteKeysByPrefix(redis, prefix);
        } else {
          const schema = `dvault_bench_jobs_${tag}`;
          const tables = (s: string) => new QueueJobsRepository(pool, s);
          const backend = await postgresQueueBackend({ url: BENCH_PG_URL, schema, tables });
          try {
            results.postgres.push(await round(backend));
          } finally {
            await backend.close();
            await tables(schema).dropSchema();
          }
        }
        const last = results[engine].at(-1)!;
        process.stderr.write(`round ${r + 1} ${engine}: ${Math.round(last.totalMs)} ms\n`);
      }
    }
  } finally {
    await redis.quit();
    await pool.end();
  }
  const row = (engine: "redis" | "postgres") => {
    const f = results[engine];
    const total = median(f.map((x) => x.totalMs));
    return [
      engine,
      Math.round(median(f.map((x) => x.addMs))),
      Math.round(median(f.map((x) => x.processMs))),
      Math.round(total),
      Math.round((JOBS / total) * 1000),
    ];
  };
  process.stdout.write(`${JOBS} jobs, one bulk add, one worker at concurrency ${CONCURRENCY}, median of ${ROUNDS} interleaved rounds; ${machine()}\n\n`);
  process.stdout.write(`${table(["engine", "add ms", "process ms", "total ms", "jobs/s"], [row("redis"), row("postgres")])}\n`);
}

await main();
