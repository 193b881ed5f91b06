// PostgreSQL restarted under a running worker (the real one: BullMQ queues, schedulers, the job catalogue),
// on a private server (test/faults/private-services.ts: initdb once for this file, migrated with
// `prisma migrate deploy`), mid-sync and mid-download: the worker's pg pool reconnects by
// itself, the jobs that failed while it was away are retried, and the archive converges with nothing
// duplicated or half-written (the closing check, test/faults/check.ts). DVAULT_FAULTS_KILLS (the full run)
// restarts it 4 times at random points.
import { setTimeout as pause } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeNeedingRedis, REDIS_IN_RUN } from "../helpers/needs-redis.ts";
import type { RunningWorker } from "../../src/worker.ts";
import { checkMirror } from "./check.ts";
import type { FaultHarness } from "./harness.ts";
import { converged, createPrivateFaultHarness, progress, startFaultWorker, startPrivatePostgres, waitFor, type PrivatePostgres } from "./private-services.ts";

// Slow originals so that the restart lands while files are being written.
const CDN_BYTES_PER_SECOND = 1024 * 1024;
/** How long the server stays down: long enough for every pooled connection to notice. */
const DOWN_MS = 1000;
/** Generous for a loaded 2-core CI machine; a quiet one converges in about 1.5 s. */
const CONVERGE_MS = 30_000;
/** One restart inside `npm test`; several at random points in the full run (`npm run test:faults`). */
const RESTARTS = process.env.DVAULT_FAULTS_KILLS ? 4 : 1;

let pg: PrivatePostgres;
let h: FaultHarness;

// The worker here runs on Redis (test/faults/private-services.ts opens it) beside a private PostgreSQL that restarts:
// on a run without Redis, skipped.
beforeAll(async () => {
  if (!REDIS_IN_RUN) return;
  pg = await startPrivatePostgres();
  h = await createPrivateFaultHarness({ postgres: pg, sim: { seed: 12, cdnBytesPerSecond: CDN_BYTES_PER_SECOND } });
});
afterAll(async () => {
  await h?.close();
  await pg?.close();
});

describeNeedingRedis("a worker whose PostgreSQL restarts mid-run", () => {
  it("reconnects, retries what failed during the outage, and converges", async () => {
    let worker: RunningWorker | undefined;
    try {
      const startedAt = Date.now();
      const started = await startFaultWorker(h);
      worker = started.worker;
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
        // A crash (no checkpoint, WAL replayed on start): in-flight transactions are lost, committed ones kept.
        // The full run alternates it with the usual fast shutdown (sessions terminated, a clean checkpoint).
        await pg.stop(i % 2 === 0 ? "immediate" : "fast");
        await pause(i === 0 ? DOWN_MS : 100 + Math.random() * 1900);
        await pg.start();
        back = Date.now();
      }

      const end = await waitFor("the archive to converge", CONVERGE_MS, () => progress(h), converged);
      const convergedMs = Date.now() - back;
      // The restart landed mid-run, jobs met it and were retried without spending attempts, none failed for good.
      expect(at.sourcesDone < h.sourceMap.size || at.downloadsLeft > 0).toBe(true);
      // Every job that met it said so in one warning a minute (the others at debug), not a line per job and re-run.
      const retried = started.warnings.filter((m) => m.startsWith("service unavailable: job delayed")).length;
      expect(retried).toBeGreaterThan(0);
      expect(retried).toBeLessThanOrEqual(Math.ceil((Date.now() - outageStarted) / 60_000) + 1);
      expect(started.warnings.filter((m) => m === "job failed")).toEqual([]);
      // The worker's own pool answers again, for the mirror and for the accounts.
      const { rows } = await worker.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations");
      expect(rows[0]!.n).toBeGreaterThan(0);
      expect((await worker.services.accounts.findById(h.account.id))?.id).toBe(h.account.id);
      await worker.stop("test done");
      worker = undefined;
      const checked = await checkMirror(h);
      console.info(
        `PostgreSQL restarted x${RESTARTS}, first ${outageStarted - startedAt} ms into the run (sources done ${at.sourcesDone}/${h.sourceMap.size}, files ${at.downloadsDone}/${end.downloadsDone}), down ${DOWN_MS} ms; ` +
          `${retried} warnings of jobs that met it and were retried; converged ${convergedMs} ms after it was back; ${checked.deviations} deviations and ${checked.files} files match`,
      );
    } finally {
      await worker?.stop("test failed");
    }
  }, 120_000);
});
