// More failed jobs than a list shows: the dashboard's /jobs lists the newest 200 of 201 and says how many failed,
// and `dvault jobs failed --limit N` says that more failed than it lists; each listed the first N as if they were all.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { UnrecoverableError } from "bullmq";
import { afterAll, beforeAll, expect } from "vitest";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { FAILED_JOBS_SHOWN } from "../../src/http/pages/jobs.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const run = promisify(execFile);
const FAILED = FAILED_JOBS_SHOWN + 1;
let h: SyncHarness;
let dash: RunningDashboard;

beforeAll(async () => {
  h = await createSyncHarness({ sim: { seed: 7, dataset: { deviations: 1, notes: 0, messages: 0, favourites: 0 } } });
  dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await dash?.close();
  await h?.close();
});

itNeedingRedis("lists the newest of more failed jobs than a page shows, saying how many failed, on the dashboard and in the CLI", async () => {
  const admin = new QueueAdmin(h.services.queues);
  const queue = admin.queue("sync");
  const worker = h.services.queues.worker(
    "sync",
    async () => {
      throw new UnrecoverableError("the gallery answered 500");
    },
    { concurrency: 50 },
  );
  try {
    await queue.addBulk(
      Array.from({ length: FAILED }, (_, i) => ({
        name: "sync.source",
        data: { accountId: 1, source: "gallery", key: `k${i}` },
        opts: { jobId: `many-${i}` },
      })),
    );
    await expect.poll(async () => (await queue.getJobCounts("failed")).failed, { timeout: 20_000, interval: 50 }).toBe(FAILED);
  } finally {
    await worker.close();
  }

  const page = await (await fetch(`${dash.url}/jobs`)).text();
  expect(page).toContain(`Failed (${FAILED})`);
  expect(page).toContain(`The newest ${FAILED_JOBS_SHOWN} are listed`);
  expect([...page.matchAll(/action="\/jobs\/retry"/g)]).toHaveLength(FAILED_JOBS_SHOWN);
  const bySync = await (await fetch(`${dash.url}/jobs?queue=sync`)).text();
  expect(bySync).toContain(`Failed in sync (${FAILED})`);

  const env = { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", REDIS_URL: h.redis.url, DVAULT_REDIS_PREFIX: h.redis.prefix, LOG_LEVEL: "silent" };
  const cli = async (...args: string[]) => (await run(process.execPath, ["bin/dvault.js", "jobs", "failed", ...args], { env, timeout: 30_000 })).stdout;
  expect(await cli("--limit", "3")).toContain("3 failed job(s) listed, the newest; more failed (--limit lists more).");
  const all = await cli("--limit", String(FAILED));
  expect(all).toContain(`${FAILED} failed job(s). Retry one with`);
  expect(all).not.toContain("more failed");
});
