// The dashboard under a burst (issue 27, row 4): 200 parallel `GET /archive?page=N` on a 200 000-work mirror gave
// 185 HTTP 500 from the database pool's timeout (20 parallel: 3 of 20), RSS 332–394 MB. A scratch database is
// filled with SQL (test/helpers/dashboard-load-mirror.ts), `dvault worker` serves the dashboard alone in its own
// process with the defaults an operator has (DVAULT_HTTP_CONCURRENCY, DVAULT_HTTP_QUEUE, DVAULT_DB_POOL_SIZE), and
// each burst runs over separate sockets (test/helpers/dashboard-burst.ts). It prints the answers by status (0
// HTTP 500 is the goal; 503s carry Retry-After and are counted apart), p50/p95 of the time to a whole answer and
// the worker's peak RSS (VmHWM), for docs/RELIABILITY.md#the-dashboard-under-load.
//
//   node --import tsx bench/dashboard-load.ts [--works 200000] [--bursts 200,20] [--env DVAULT_HTTP_CONCURRENCY=4]
import { parseArgs } from "node:util";
import { archiveBurst, burstFigures, startDashboardProcess } from "../test/helpers/dashboard-burst.ts";
import { fillLoadMirror } from "../test/helpers/dashboard-load-mirror.ts";
import { BENCH_REDIS_URL, createBenchEnv, machine, table } from "./bench-env.ts";

const { values } = parseArgs({
  options: {
    works: { type: "string", default: "200000" },
    bursts: { type: "string", default: "200,20" },
    env: { type: "string", multiple: true, default: [] },
  },
});
const WORKS = Math.max(1000, Number(values.works));
const BURSTS = values.bursts.split(",").map(Number);
const EXTRA = Object.fromEntries(values.env.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));

const env = await createBenchEnv({ sim: { seed: 3, dataset: { deviations: 1 } } });
try {
  const filled = performance.now();
  const mirror = await fillLoadMirror(env.services.pool, env.accountId, { works: WORKS });
  process.stdout.write(
    `filled ${mirror.works} works, ${mirror.stored} stored files, ${mirror.folders} folders in ${((performance.now() - filled) / 1000).toFixed(1)} s\n`,
  );
  const dash = await startDashboardProcess({
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: BENCH_REDIS_URL,
    DVAULT_REDIS_PREFIX: env.prefix,
    DVAULT_ARCHIVE_DIR: env.archiveDir,
    DVAULT_SECRET_KEY: env.secretKeyHex,
    ...EXTRA,
  });
  try {
    const pages = Math.ceil(WORKS / 48);
    const idle = await dash.rssBytes();
    const rows: Array<Array<string | number>> = [];
    for (const n of BURSTS) {
      const started = performance.now();
      const f = burstFigures(await archiveBurst(dash.url, n, pages));
      const wall = performance.now() - started;
      rows.push([
        n,
        f.byStatus[200] ?? 0,
        f.byStatus[503] ?? 0,
        f.byStatus[500] ?? 0,
        Object.entries(f.byStatus)
          .filter(([s]) => !["200", "503", "500"].includes(s))
          .map(([s, c]) => `${c}×${s}`)
          .join(" ") || "0",
        f.p50Ms,
        f.p95Ms,
        (wall / 1000).toFixed(1),
        Math.round((await dash.peakRssBytes()) / 2 ** 20),
      ]);
      if (f.busyWithoutRetryAfter > 0) throw new Error(`${f.busyWithoutRetryAfter} answers 503 without Retry-After`);
    }
    const settings = Object.entries(EXTRA)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ");
    process.stdout.write(
      `\n${WORKS} works, ${pages} pages; dvault worker (http role only)${settings ? ` with ${settings}` : " with the default settings"}, RSS ${Math.round(idle / 2 ** 20)} MB before the first burst\n${machine()}\n\n`,
    );
    process.stdout.write(`${table(["parallel", "200", "503 (Retry-After)", "500", "other", "p50 ms", "p95 ms", "burst s", "peak RSS MB"], rows)}\n`);
  } finally {
    await dash.stop();
  }
} finally {
  await env.close();
}
