// Grouped durability (issue #32): `download --once` storing a gallery's originals with each file made durable and
// its row committed on its own (fsync, rename, folder fsync, one commit per file: the path before grouping,
// src/downloads/group-commit.ts with maxFiles 1) against the batches of src/downloads/group-commit.ts (the files that
// finish together fsynced in one pass, then their rows in one transaction). The same simulated gallery, the same
// process, runs interleaved; before each run the archive folder is emptied and the originals' rows wanted again, so
// every run transfers, places and records every file. Pacing is off (the budget would hide the store's cost).
//
// Run: node --import tsx bench/store-batch.ts [--deviations 300] [--rounds 3] [--concurrency 4,8] [--storage local|s3]
//      [--only download,store] [--in-flight 4,8] [--no-write]   (part of `npm run bench`)
// Results go to docs/PERFORMANCE.md (its store-batch section, or store-batch-s3) unless --no-write.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { parseArgs } from "node:util";
import { setDownloadTuning } from "../src/downloads/deps.ts";
import { runDownloadsOnce } from "../src/downloads/run-once.ts";
import { createLogger } from "../src/log.ts";
import { gallerySource } from "../src/sync/sources/gallery.ts";
import { runSource } from "../src/sync/run-source.ts";
import { startS3Server } from "../test/helpers/s3-server.ts";
import { createBenchEnv, machine, median, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: {
    deviations: { type: "string", default: "300" },
    rounds: { type: "string", default: "3" },
    concurrency: { type: "string", default: "4,8" },
    storage: { type: "string", default: "local" },
    "in-flight": { type: "string" },
    only: { type: "string", default: "download,store" },
    "no-write": { type: "boolean", default: false },
  },
});
const ROUNDS = Math.max(1, Number(args.rounds));
const CONCURRENCY = args.concurrency.split(",").map(Number);
type Mode = { name: string; batch: { maxFiles?: number; maxInFlight?: number } };
/** `--in-flight 4,8`: grouped runs with that many batches under way at most, beside the default's. */
const MODES: Mode[] = [
  { name: "per file", batch: { maxFiles: 1, maxInFlight: 1_000 } },
  { name: "grouped", batch: {} },
  ...(args["in-flight"] ? args["in-flight"].split(",").map((n) => ({ name: `grouped, ${n} under way`, batch: { maxInFlight: Number(n) } })) : []),
];
type Scenario = "download" | "store";
const SCENARIOS = args.only.split(",").filter((x): x is Scenario => x === "download" || x === "store");
type Result = { scenario: Scenario; mode: string; concurrency: number; files: number; bytes: number; ms: number };

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

const s3 = args.storage === "s3" ? await startS3Server({ bucket: "dvault-bench" }) : undefined;
const PACE_OFF = { DVAULT_API_RATE_START: "1000", DVAULT_API_RATE_MAX: "1000", DVAULT_DOWNLOAD_QUOTA: "100000" };
const env = await createBenchEnv({
  sim: { seed: 32, dataset: { deviations: Number(args.deviations) }, downloadQuota: 100_000 },
  configExtra: { ...PACE_OFF, ...s3?.env, DVAULT_MIN_FREE_BYTES: "0" },
});
const started = new Date();
try {
  await runSource({ accountId: env.accountId, source: "gallery", full: true }, { services: env.services, sources: new Map([["gallery", gallerySource]]) });
  // The originals only: texts are one small file each, stored as before in both modes.
  await env.services.pool.query("DELETE FROM downloads WHERE kind <> 'original'");
  const runLog = createLogger({ level: "silent" });

  async function reset(): Promise<void> {
    await fs.rm(path.join(env.archiveDir, "originals"), { recursive: true, force: true });
    if (s3) {
      await fs.rm(path.join(s3.dir, "dvault-bench"), { recursive: true, force: true });
      await fs.mkdir(path.join(s3.dir, "dvault-bench"));
    }
    await env.services.pool.query(
      `UPDATE downloads SET status = 'wanted', path = NULL, sha256 = NULL, size = NULL, rendition = NULL, done_at = NULL,
              next_attempt_at = NULL, queued_at = NULL, attempts = 0, failures = 0, bytes_transferred = 0`,
    );
  }

  /** `download --once` end to end: API call, CDN transfer, store, row. */
  async function download(mode: Mode, concurrency: number): Promise<Result> {
    const deps = setDownloadTuning(env.services, { storeBatch: mode.batch });
    const t0 = performance.now();
    const summary = await runDownloadsOnce({ services: env.services, deps, log: runLog, progressEveryMs: 3_600_000, concurrency });
    const ms = performance.now() - t0;
    if (summary.failures.length > 0) throw new Error(`${mode.name}: ${summary.failures.length} downloads failed: ${summary.failures[0]?.error}`);
    // Every row finished, and a file for each (an original, or the free rendition of one the artist does not offer).
    const { rows } = await env.services.pool.query<{ files: number; open: number }>(
      "SELECT count(*) FILTER (WHERE path IS NOT NULL)::int AS files, count(*) FILTER (WHERE status NOT IN ('done', 'not_downloadable'))::int AS open FROM downloads",
    );
    if (rows[0]?.open) throw new Error(`${mode.name}: ${rows[0].open} rows not finished`);
    return { scenario: "download", mode: mode.name, concurrency, files: rows[0]?.files ?? 0, bytes: summary.bytes, ms };
  }

  /** The store alone: the same number of files of the same mean size, written from memory, placed and recorded. */
  async function store(mode: Mode, concurrency: number, meanBytes: number): Promise<Result> {
    const deps = setDownloadTuning(env.services, { storeBatch: mode.batch });
    const { rows: targets } = await env.services.pool.query<{ id: string }>("SELECT id::text FROM downloads ORDER BY id");
    const at = new Date();
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < targets.length; i = next++) {
          const bytes = randomBytes(meanBytes);
          const written = await deps.archive.writeStream({ key: `bench-${i}`, body: Readable.from([bytes]), ext: "bin" });
          const id = (targets[i] as { id: string }).id;
          await deps.commits.store(written, (f) => ({
            id,
            status: "done",
            rendition: "original",
            path: f.relPath,
            size: f.size,
            sha256: f.sha256,
            mime: null,
            bytes: 0,
            at,
          }));
        }
      }),
    );
    const ms = performance.now() - t0;
    return { scenario: "store", mode: mode.name, concurrency, files: targets.length, bytes: targets.length * meanBytes, ms };
  }

  const results: Result[] = [];
  // A warm-up run of each (modules, connections, the CDN's first answers), not counted; it gives the mean size.
  let meanBytes = 0;
  for (const mode of MODES) {
    await reset();
    const warm = await download(mode, CONCURRENCY[0] ?? 4);
    meanBytes = Math.round(warm.bytes / warm.files);
  }
  for (let r = 0; r < ROUNDS; r++) {
    for (const scenario of SCENARIOS) {
      for (const concurrency of CONCURRENCY) {
        // Alternate which goes first.
        for (const mode of r % 2 === 0 ? MODES : [...MODES].reverse()) {
          await reset();
          const res = scenario === "download" ? await download(mode, concurrency) : await store(mode, concurrency, meanBytes);
          results.push(res);
          log(
            `  round ${r + 1} ${scenario.padEnd(8)} ×${concurrency} ${mode.name.padEnd(8)} ${((res.files / res.ms) * 1000).toFixed(1).padStart(6)} files/s  ${res.files} files  ${(res.ms / 1000).toFixed(2)} s`,
          );
        }
      }
    }
  }
  const runs = (scenario: Scenario, mode: string, c: number) =>
    results.filter((x) => x.scenario === scenario && x.mode === mode && x.concurrency === c).map((x) => (x.files / x.ms) * 1000);
  const rate = (scenario: Scenario, mode: string, c: number) => median(runs(scenario, mode, c));
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`;
  /** The two runs of a round were back to back: their ratio, round by round. */
  const pairedRatios = (scenario: Scenario, c: number) => {
    const grouped = runs(scenario, "grouped", c);
    return runs(scenario, "per file", c).map((perFile, i) => (grouped[i] ?? 0) / perFile);
  };
  const files = results[0]?.files ?? 0;
  const meanKb = meanBytes / 1024;
  const label: Record<Scenario, string> = { download: "`download --once`", store: "store only" };
  const body = [
    '<a id="store-batch"></a>',
    "### Grouped durability: files stored per second (issue #32)",
    "",
    `Machine: ${machine()}. Run ${started.toISOString()}.`,
    "",
    `Command: \`node --import tsx bench/store-batch.ts${process.argv.length > 2 ? ` ${process.argv.slice(2).join(" ")}` : ""}\``,
    "",
    `Two scenarios on the ${files} files of a simulated gallery's originals (mean ${meanKb.toFixed(0)} KiB),`,
    `${args.storage === "s3" ? "into a bucket (s3rver on loopback)" : "into the archive folder on this machine's disk"}, ${ROUNDS} interleaved rounds, medians, the archive emptied and the`,
    "rows wanted again before every run: `download --once` is `runDownloadsOnce` (what the command runs: the API call, the",
    "CDN transfer from the simulator in this process, the store, the row), pacing off; store only is the same number of",
    "files of the mean size written from memory by as many writers (`Archive.writeStream`), then placed and recorded",
    'through the downloads\' GroupCommit. "per file" is every file fsynced, renamed, its folder fsynced and its row',
    "committed on its own, as before grouping (src/downloads/group-commit.ts with maxFiles 1 and no bound on batches",
    'under way); "grouped" is its default.',
    "",
    table(
      ["scenario", "parallel", "per file, files/s (runs)", "grouped, files/s (runs)", "grouped ÷ per file", "same, round by round (median; range)"],
      SCENARIOS.flatMap((sc) =>
        CONCURRENCY.map((c) => {
          const paired = pairedRatios(sc, c);
          return [
            label[sc],
            c,
            `${rate(sc, "per file", c).toFixed(1)} (${range(runs(sc, "per file", c))})`,
            `${rate(sc, "grouped", c).toFixed(1)} (${range(runs(sc, "grouped", c))})`,
            (rate(sc, "grouped", c) / rate(sc, "per file", c)).toFixed(2),
            `${median(paired).toFixed(2)}; ${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}`,
          ];
        }),
      ),
    ),
  ].join("\n");
  process.stdout.write(`\n${body}\n`);
  if (!args["no-write"]) {
    await writeDocSection(args.storage === "s3" ? "store-batch-s3" : "store-batch", body, "store-batch");
    log("wrote docs/PERFORMANCE.md");
  }
} finally {
  await env.close();
  await s3?.close();
}
