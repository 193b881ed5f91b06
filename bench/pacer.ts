// The shared pace's own cost on each engine (src/api/pacer-store.ts): permits per second through one key when
// the pace itself allows any number (maxRate far above what either engine serves), so what is measured is the
// store: each permit is one atomic acquire and one release (Redis: a Lua script each; PostgreSQL alone: a
// transaction on the key's locked row each, src/db/pacer-rows.ts), and callers finding the key busy are woken
// by the release. Callers in one process; rounds of the two stores interleaved in one run, so the machine's
// load falls on both alike. Goal: far above the service's pace (a few calls a second), on both.
//
//   node --import tsx bench/pacer.ts [--seconds 2] [--rounds 3] [--no-write]
import { parseArgs } from "node:util";
import { createPacer, type PacerStore } from "../src/api/pacer.ts";
import { redisPacerStore } from "../src/api/pacer-redis-store.ts";
import { sqlPacerStore } from "../src/api/pacer-sql-store.ts";
import { createPgPool, dropDatabase, ensureDatabase } from "../src/db/connect.ts";
import { pacerRows } from "../src/db/pacer-rows.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { createRedis, deleteKeysByPrefix } from "../src/queue/redis.ts";
import { BENCH_PG_URL, BENCH_REDIS_URL, machine, median, table, writeDocSection } from "./bench-env.ts";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "2" }, rounds: { type: "string", default: "3" }, "no-write": { type: "boolean", default: false } },
});
const SECONDS = Math.max(0.5, Number(values.seconds));
const ROUNDS = Math.max(1, Number(values.rounds));
const CALLERS = 4;

const prefix = `dvault-bench-pacer-${process.pid}`;
const redis = createRedis(BENCH_REDIS_URL);
await redis.connect();
const dbUrl = withDatabase(BENCH_PG_URL, `dvault_bench_pacer_${process.pid}`);
await ensureDatabase(dbUrl);
const pool = createPgPool(dbUrl, CALLERS + 1);

const STORES: Record<string, (namespace: string) => PacerStore> = {
  Redis: (ns) => redisPacerStore(redis, `${prefix}:${ns}`),
  "PostgreSQL alone": (ns) => sqlPacerStore(pacerRows(pool, { namespace: ns })),
};
const SCENARIOS = [
  { name: `${CALLERS} callers, 1 permit (dvault's default)`, concurrency: 1 },
  { name: `${CALLERS} callers, ${CALLERS} permits`, concurrency: CALLERS },
];

let run = 0;
/** Permits per second through one key of a fresh namespace for SECONDS. */
async function measure(store: PacerStore, concurrency: number): Promise<number> {
  const pacer = createPacer({ store, concurrency, startRate: 1e6, maxRate: 1e6, pollMs: 50 });
  const key = "1001:bench";
  await (await pacer.acquire(key)).release("success"); // the row and the schema exist before the clock starts
  const end = performance.now() + SECONDS * 1000;
  let permits = 0;
  const caller = async () => {
    while (performance.now() < end) {
      const permit = await pacer.acquire(key, { maxWaitMs: 60_000 });
      permits++;
      await permit.release("success");
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, caller));
  const rate = permits / ((performance.now() - start) / 1000);
  await pacer.close();
  return rate;
}

const results = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const scenario of SCENARIOS) {
    // Alternate which store goes first, so neither always runs on a warmer machine.
    const names = Object.keys(STORES);
    for (const name of round % 2 ? names.reverse() : names) {
      const rate = await measure((STORES[name] as (ns: string) => PacerStore)(`r${++run}`), scenario.concurrency);
      const k = `${scenario.name}\t${name}`;
      results.set(k, [...(results.get(k) ?? []), rate]);
    }
  }
}

const rows = SCENARIOS.map((scenario) => {
  const of = (name: string) => median(results.get(`${scenario.name}\t${name}`) ?? []);
  const [r, p] = [of("Redis"), of("PostgreSQL alone")];
  return [scenario.name, Math.round(r), Math.round(p), (p / r).toFixed(2)];
});
const body = [
  "### The shared pace on each engine (`bench/pacer.ts`)",
  "",
  `Permits per second through one key, the pace itself out of the way; median of ${ROUNDS} interleaved rounds of ${SECONDS} s per store.`,
  "",
  table(["scenario", "Redis (permits/s)", "PostgreSQL alone (permits/s)", "PostgreSQL ÷ Redis"], rows),
  "",
  "Each permit is two decisions of the store (acquire, release), and a caller that finds the key busy makes one more each time it is woken. " +
    "On PostgreSQL a decision is two round trips (src/db/pacer-rows.ts: BEGIN with the locking read; the write, its NOTIFY and COMMIT), and its " +
    "commit does not wait for the disk; the service's pace is a few calls a second (docs/service-behaviour.md#rate-limits), so either engine " +
    "leaves it far above what the pace lets through.",
  "",
  `Machine: ${machine()}.`,
].join("\n");
process.stdout.write(`${body}\n`);
if (!values["no-write"]) await writeDocSection("pacer", body);

await deleteKeysByPrefix(redis, prefix);
await redis.quit();
await pool.end();
await dropDatabase(dbUrl);
