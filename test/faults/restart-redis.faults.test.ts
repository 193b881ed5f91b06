// Redis restarted under a running worker (the real one: BullMQ queues, schedulers, the job catalogue), on a
// private redis-server with AOF (test/faults/private-services.ts), mid-sync and mid-download:
// - restarted with its AOF: the worker reconnects and carries on, and the archive converges;
// - restarted EMPTY (the AOF wiped): the schedules, the maintenance jobs and the downloads still due are
//   rebuilt from PostgreSQL by the worker itself, within a bounded time, and the archive converges.
// Each case ends with the closing check (test/faults/check.ts). DVAULT_FAULTS_KILLS (the full run) restarts it 4 times.
import { setTimeout as pause } from "node:timers/promises";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createRedis } from "../../src/queue/redis.ts";
import type { RunningWorker } from "../../src/worker.ts";
import { checkMirror } from "./check.ts";
import type { FaultHarness } from "./harness.ts";
import { converged, createPrivateFaultHarness, progress, startFaultWorker, startPrivateRedis, waitFor, type PrivateRedis } from "./private-services.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

// Slow originals so that the restart lands while files are being written.
const CDN_BYTES_PER_SECOND = 1024 * 1024;
/** The worker must have rebuilt its schedules, and converged, within these after Redis is back. */
const SCHEDULES_BACK_MS = 5000;
/** Generous for a loaded 2-core CI machine; a quiet one converges in about 1.5 s. */
const CONVERGE_MS = 30_000;
/** One restart inside `npm test`; several at random points in the full run (`npm run test:faults`). */
const RESTARTS = process.env.DVAULT_FAULTS_KILLS ? 4 : 1;

let redis: PrivateRedis;

beforeAll(async () => {
  redis = await startPrivateRedis();
});
afterAll(async () => {
  await redis?.close();
});

/** One command on a fresh connection (the harness's own may still be reconnecting). */
async function onRedis<T>(fn: (r: Redis) => Promise<T>): Promise<T> {
  const connection = createRedis(redis.url);
  try {
    return await fn(connection);
  } finally {
    connection.disconnect();
  }
}

async function schedulerIds(h: FaultHarness, queueName: string): Promise<string[]> {
  const connection = createRedis(redis.url);
  const queue = new Queue(queueName, { connection, prefix: h.env.DVAULT_REDIS_PREFIX! });
  try {
    return (await queue.getJobSchedulers(0, -1)).map((s) => s.key).sort();
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

describeNeedingRedis("a worker whose Redis restarts mid-run", () => {
  for (const empty of [false, true]) {
    it(empty ? "rebuilds due work from PostgreSQL when Redis comes back empty" : "reconnects and carries on when Redis comes back with its AOF", async () => {
      const h = await createPrivateFaultHarness({ redis, sim: { seed: empty ? 5 : 7, cdnBytesPerSecond: CDN_BYTES_PER_SECOND } });
      let worker: RunningWorker | undefined;
      try {
        const startedAt = Date.now();
        const started = await startFaultWorker(h);
        worker = started.worker;
        const before = { sync: await schedulerIds(h, "sync"), maintenance: await schedulerIds(h, "maintenance") };
        expect(before.sync.length).toBe(h.sourceMap.size);

        // A key only the AOF can bring back: present after a restart with it, gone after a wipe.
        const marker = `${h.env.DVAULT_REDIS_PREFIX}:test-marker`;
        await onRedis((r) => r.set(marker, "1"));

        // Mid-run: some sources done, some files stored, more to come; in the full run, more restarts after that.
        const at = await waitFor(
          "the run to be under way",
          20_000,
          () => progress(h),
          (p) => p.sourcesDone >= 2 && p.downloadsDone >= 1,
        );
        const outageStarted = Date.now();
        let back = 0;
        for (let i = 0; i < RESTARTS; i++) {
          if (i > 0) await pause(Math.random() * 1500);
          await redis.stop(empty ? "kill" : "shutdown");
          await pause(i === 0 ? 300 : 100 + Math.random() * 1900);
          await redis.start({ empty });
          back = Date.now();
        }
        expect(await onRedis((r) => r.exists(marker))).toBe(empty ? 0 : 1);
        // Within a bounded time and without anyone's help, every schedule is back.
        await waitFor(
          "the schedules to be back",
          SCHEDULES_BACK_MS,
          () => schedulerIds(h, "sync"),
          (ids) => ids.join() === before.sync.join(),
        );

        const end = await waitFor("the archive to converge", CONVERGE_MS, () => progress(h), converged);
        const convergedMs = Date.now() - back;
        // The restart landed mid-run; a wipe was noticed and repaired by the worker itself.
        expect(at.sourcesDone < h.sourceMap.size || at.downloadsLeft > 0).toBe(true);
        const rebuiltLines = () => started.warnings.filter((m) => m.startsWith("schedules and download queue rebuilt")).length;
        // A rebuild installs the maintenance schedules after the sync ones and the downloads, then says so
        // (src/engine/install-work.ts, src/queue/redis-loss-guard.ts): files already on their way may converge the
        // archive first, so the rebuild's end is waited for, not read once.
        await waitFor(
          "the maintenance schedules to be back",
          SCHEDULES_BACK_MS,
          async () => ({ ids: await schedulerIds(h, "maintenance"), rebuilt: rebuiltLines() }),
          (s) => s.ids.join() === before.maintenance.join() && (!empty || s.rebuilt > 0),
        );
        const rebuilt = rebuiltLines();
        expect(rebuilt > 0).toBe(empty);
        expect(await schedulerIds(h, "sync")).toEqual(before.sync);
        expect(await schedulerIds(h, "maintenance")).toEqual(before.maintenance);
        await worker.stop("test done");
        worker = undefined;
        const checked = await checkMirror(h);
        console.info(
          `Redis ${empty ? "wiped" : "restarted with AOF"} x${RESTARTS}, first ${outageStarted - startedAt} ms into the run (sources done ${at.sourcesDone}/${h.sourceMap.size}, files ${at.downloadsDone}/${end.downloadsDone}); ` +
            `converged ${convergedMs} ms after it was back; ${checked.deviations} deviations and ${checked.files} files match`,
        );
      } finally {
        await worker?.stop("test failed");
        await h.close();
      }
    }, 120_000);
  }
});
