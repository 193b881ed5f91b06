// `npm run bench`: every benchmark in sequence, each in its own process, each printing its table (and
// rewriting its section of docs/PERFORMANCE.md). Stops at the first that fails.
import { spawnSync } from "node:child_process";

const BENCHES = [
  "bench/ingest.ts",
  "bench/api-economy.ts",
  "bench/freshness.ts",
  "bench/end-to-end.ts",
  "bench/pacer.ts",
  "bench/scale.ts",
  "bench/sync-scale.ts",
  "bench/downloads.ts",
  "bench/storage.ts",
  "bench/store-batch.ts",
  "bench/hostile-body.ts",
  "bench/import-gallery-dl.ts",
  "bench/startup.ts",
  "bench/versus.ts",
  "bench/thumbnails.ts",
  "bench/feeds.ts",
  "bench/track-lists.ts",
  "bench/dashboard-load.ts",
  "bench/dashboard-pages.ts",
  "bench/archive-scale.ts",
  "bench/readable-tree.ts",
];
for (const file of BENCHES) {
  process.stdout.write(`\n=== ${file} ===\n`);
  const r = spawnSync(process.execPath, ["--import", "tsx", file], { stdio: "inherit" });
  if (r.status !== 0) {
    process.stderr.write(`${file} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
}
