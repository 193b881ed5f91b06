// A worker-like process for the cron test: the digest queue's processor and the digest cron's tick, on
// the test's database and Redis prefix. Prints "ready", waits for a line on stdin, ticks at DVAULT_TEST_TICK
// (the same cron time as the other process), waits until the tick's digest is recorded, then prints how
// many digest jobs this process ran.
// Run as: node --import tsx test/medium/digest-tick-child.ts (configuration in the environment).
import readline from "node:readline";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import { loadConfig } from "../../src/config.ts";
import { DigestRepository } from "../../src/db/digest.repository.ts";
import { DigestScheduler } from "../../src/digest/schedule.ts";
import { createLogger } from "../../src/log.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { createServices } from "../../src/services.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";

const config = loadConfig(process.env);
const tick = new Date(process.env.DVAULT_TEST_TICK ?? "");
const log = createLogger({ level: "silent" });
const services = await createServices({ config, log, overrides: { now: () => tick.getTime() + 2000 } });
const producer = new Producer([...JOB_DEFINITIONS], services.queues);
let ran = 0;
const host = new WorkerHost<WorkerContext>({
  entries: checkCatalogue<WorkerContext>(JOBS),
  backend: services.queues,
  log,
  queues: ["digest"],
  makeContext: (base) => {
    ran++;
    return { ...base, services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} };
  },
});
host.start();
const repo = new DigestRepository(services.pool);
const scheduler = new DigestScheduler({
  config: config.digest,
  enqueue: (p) => producer.enqueue("digest.send", p),
  lastWindowEnd: (c) => repo.lastWindowEnd(c),
  log,
});

process.stdout.write("ready\n");
const rl = readline.createInterface({ input: process.stdin });
await new Promise<string>((resolve) => rl.once("line", resolve));
rl.close();

const payloads = await scheduler.tick(tick);
const deadline = Date.now() + 20_000;
while (Date.now() < deadline && (await repo.lastWindowEnd("smtp"))?.getTime() !== tick.getTime()) await new Promise((r) => setTimeout(r, 50));
// Give a duplicate (if there were one) the time to run.
await new Promise((r) => setTimeout(r, 1000));
await scheduler.stop();
await host.close();
await producer.close();
await services.close();
process.stdout.write(`${JSON.stringify({ ticked: payloads.length, ran })}\n`);
