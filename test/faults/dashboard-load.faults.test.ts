// Issue 27, row 4 at full size: 200 parallel `GET /archive?page=N` on a 200 000-work mirror gave 185 HTTP 500 from
// the database pool's timeout. The mirror is filled with SQL (test/helpers/dashboard-load-mirror.ts, about a
// minute on a 2-core machine), `dvault worker` serves the dashboard alone in its own process with the defaults,
// and a burst of 200 and one of 20 run over separate sockets: 0 HTTP 500, every other answer a 200 or a 503 with
// Retry-After. The figures (503s, p50/p95, peak RSS) come from bench/dashboard-load.ts; this test asserts what
// must hold and prints what it saw. Only in `npm run test:faults` (excluded from `npm test` in vitest.config.ts);
// DVAULT_LOAD_WORKS makes the mirror smaller for a quick look.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { archiveBurst, burstFigures, type DashboardProcess, startDashboardProcess } from "../helpers/dashboard-burst.ts";
import { fillLoadMirror } from "../helpers/dashboard-load-mirror.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const WORKS = Number(process.env.DVAULT_LOAD_WORKS ?? 200_000);

let h: SyncHarness;
let dash: DashboardProcess;

beforeAll(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
  await fillLoadMirror(h.pool, h.account.id, { works: WORKS });
  dash = await startDashboardProcess({ DATABASE_URL: h.db.url, REDIS_URL: h.redis.url, DVAULT_REDIS_PREFIX: h.services.config.redisPrefix });
}, 600_000);

afterAll(async () => {
  await dash?.stop();
  await h?.close();
});

describe(`the dashboard on a ${WORKS}-work mirror`, () => {
  for (const n of [200, 20]) {
    it(`answers ${n} parallel archive pages with no HTTP 500`, async () => {
      const answers = await archiveBurst(dash.url, n, Math.ceil(WORKS / 48));
      const f = burstFigures(answers);
      process.stdout.write(
        `${n} parallel: ${JSON.stringify(f.byStatus)}, p50 ${f.p50Ms} ms, p95 ${f.p95Ms} ms, peak RSS ${Math.round((await dash.peakRssBytes()) / 2 ** 20)} MB\n`,
      );
      expect(f.byStatus[500] ?? 0).toBe(0);
      expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
      expect(f.busyWithoutRetryAfter).toBe(0);
    });
  }
});
