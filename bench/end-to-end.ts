// A full archive (sync of every source + originals) through a real in-process worker (`startWorker`:
// BullMQ queues, schedulers, handlers) against the simulator with 30 ms latency per request and the
// pacer's budget of one API call per 50 ms: wall time against the minimum the budget implies
// (API calls × 50 ms), and the job system's own overhead per job.
// Run: node --import tsx bench/end-to-end.ts [--deviations 800] [--no-docs]
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createLogger } from "../src/log.ts";
import { startWorker } from "../src/worker.ts";
import { runArchive, LATENCY_MS, SPACING_MS, type ArchiveFigures } from "./archive-run.ts";
import { createBenchEnv, machine, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({ options: { deviations: { type: "string", default: "800" }, "no-docs": { type: "boolean", default: false } } });
const DEVIATIONS = Number(args.deviations);

export function archiveRows(label: string, f: ArchiveFigures): Array<string | number> {
  return [
    label,
    f.apiCalls,
    (f.minimumMs / 1000).toFixed(1),
    (f.wallMs / 1000).toFixed(1),
    `**${(f.wallMs / f.minimumMs).toFixed(2)}**`,
    f.syncJobs + f.downloadJobs,
    f.downloads.done ?? 0,
  ];
}

async function main(): Promise<void> {
  const key = randomBytes(32);
  const env = await createBenchEnv({
    sim: { seed: 9, dataset: { deviations: DEVIATIONS }, latencyMs: LATENCY_MS, clockMode: "real", startTime: new Date(), downloadQuota: 1_000_000 },
    overrides: { now: Date.now, secretKey: { key, source: "env", created: false }, pacer: { minSpacingMs: SPACING_MS } },
    configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000" },
  });
  try {
    const figures = await runArchive(env, async () => {
      const worker = await startWorker({
        config: env.config,
        log: createLogger({ level: "silent" }),
        overrides: { secretKey: { key, source: "env", created: false }, pacer: { minSpacingMs: SPACING_MS }, transport: { retry: { baseDelayMs: 10 } } },
        handleSignals: false,
      });
      return () => worker.stop("bench done");
    });
    const main = table(
      ["run", "API calls", "minimum s (calls × 50 ms)", "wall s", "wall / minimum", "jobs", "files stored"],
      [archiveRows("1 in-process worker", figures)],
    );
    const overhead = table(
      ["job system overhead", "median ms", "p95 ms"],
      [
        ["sync.source job: worker processing time − handler time", figures.syncRunOverheadMs.median.toFixed(1), figures.syncRunOverheadMs.p95.toFixed(1)],
        ["first job of a queue: enqueue → start", figures.firstPickupMs.toFixed(1), ""],
      ],
    );
    const notes =
      `Downloads by status: ${JSON.stringify(figures.downloads)}. Token refreshes: ${figures.refreshes}. ` +
      `Wall time beyond the budget: ${(figures.wallMs - figures.minimumMs).toFixed(0)} ms over ${figures.syncJobs + figures.downloadJobs} jobs ` +
      `= ${((figures.wallMs - figures.minimumMs) / (figures.syncJobs + figures.downloadJobs)).toFixed(1)} ms per job (an upper bound: it includes the bench's 100 ms polling and the hand-over from sync to downloads).`;
    process.stdout.write(`\n## End to end\n\n${main}\n\n${overhead}\n\n${notes}\n`);
    if (!args["no-docs"]) {
      await writeDocSection(
        "end-to-end",
        [
          "## End to end: a full archive through real workers against the pacing budget",
          "",
          `Machine: ${machine()}. Run ${new Date().toISOString()}.`,
          "",
          `Command: \`node --import tsx bench/end-to-end.ts --deviations ${DEVIATIONS}\` (part of \`npm run bench\`)`,
          "",
          `The simulator (seed 9, ${DEVIATIONS} deviations of the owner, every original downloadable within the quota) answers every`,
          `request after ${LATENCY_MS} ms; the pacer (shared in Redis) allows one API call per ${SPACING_MS} ms (\`minSpacingMs\` via the`,
          "services overrides), so the minimum wall time is API calls × 50 ms (CDN transfers are not paced). `startWorker` runs in",
          "the bench's process with its real queues (sync concurrency 2, downloads 4); its schedulers start every sync source; when all",
          "have completed the bench enqueues the due downloads (what the worker's `downloads.enqueue` scheduler does every 2 minutes)",
          "and stops when no download is wanted or queued. Wall time runs from the worker's start to that point.",
          "",
          main,
          "",
          overhead,
          "",
          notes,
        ].join("\n"),
      );
    }
  } finally {
    await env.close();
  }
}

await main();
