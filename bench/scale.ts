// The end-to-end archive with 1, 2 and 4 worker PROCESSES (bench/scale-worker.ts) sharing Redis, Postgres
// and the pacing budget: the same total work, nothing fetched twice, no token refreshed twice, and
// throughput bounded by the shared budget rather than by the process count. A fresh database, prefix and
// simulator per row.
// Run: node --import tsx bench/scale.ts [--deviations 400] [--procs 1,2,4] [--no-docs]
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import { runArchive, LATENCY_MS, SPACING_MS } from "./archive-run.ts";
import { createBenchEnv, machine, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: { deviations: { type: "string", default: "400" }, procs: { type: "string", default: "1,2,4" }, "no-docs": { type: "boolean", default: false } },
});
const DEVIATIONS = Number(args.deviations);
const PROCS = String(args.procs).split(",").map(Number);

function startChild(settings: object): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "scale-worker.ts")], {
    env: { ...process.env, SCALE_WORKER: JSON.stringify(settings) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`scale worker exited (${code}) before it was ready`)));
    child.stdout?.on("data", (b: Buffer) => {
      if (b.toString().includes("ready")) resolve(child);
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

const rows: Array<Array<string | number>> = [];
for (const n of PROCS) {
  const key = randomBytes(32);
  const env = await createBenchEnv({
    sim: { seed: 9, dataset: { deviations: DEVIATIONS }, latencyMs: LATENCY_MS, clockMode: "real", startTime: new Date(), downloadQuota: 1_000_000 },
    overrides: { now: Date.now, secretKey: { key, source: "env", created: false }, pacer: { minSpacingMs: SPACING_MS } },
    configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000" },
  });
  try {
    const settings = { databaseUrl: env.databaseUrl, prefix: env.prefix, apiBase: env.sim.url, archiveDir: env.archiveDir, keyHex: key.toString("hex") };
    const f = await runArchive(env, async () => {
      const children = await Promise.all(Array.from({ length: n }, () => startChild(settings)));
      return async () => void (await Promise.all(children.map(stopChild)));
    });
    const perDeviation = new Map<string, number>();
    for (const e of env.sim.log()) {
      const m = /^\/api\/v1\/oauth2\/deviation\/download\/([^/]+)$/.exec(e.path);
      if (m && e.status === 200) perDeviation.set(m[1] as string, (perDeviation.get(m[1] as string) ?? 0) + 1);
    }
    const twice = [...perDeviation.values()].filter((c) => c > 1).length;
    rows.push([
      n,
      f.apiCalls,
      f.downloads.done ?? 0,
      (f.minimumMs / 1000).toFixed(1),
      (f.wallMs / 1000).toFixed(1),
      (f.wallMs / f.minimumMs).toFixed(2),
      ((f.apiCalls / f.wallMs) * 1000).toFixed(1),
      twice,
      f.duplicateFetches,
      f.duplicateRows,
      f.refreshes,
    ]);
  } finally {
    await env.close();
  }
}
const out = table(
  ["worker processes", "API calls", "files stored", "minimum s", "wall s", "wall / min", "API calls/s (budget 20)", "deviations downloaded twice", "files fetched twice (CDN)", "duplicate download rows", "token refreshes"],
  rows,
);
process.stdout.write(`\n## Scale\n\n${out}\n`);
if (!args["no-docs"]) {
  await writeDocSection(
    "scale",
    [
      "## Scale: 1, 2, 4 worker processes sharing Redis, Postgres and the pacing budget",
      "",
      `Machine: ${machine()}. Run ${new Date().toISOString()}.`,
      "",
      `Command: \`node --import tsx bench/scale.ts --deviations ${DEVIATIONS} --procs ${PROCS.join(",")}\``,
      "",
      `Each row: a fresh simulator (seed 9, ${DEVIATIONS} deviations, ${LATENCY_MS} ms latency), database and Redis prefix; N processes of`,
      "`bench/scale-worker.ts` (each a real `startWorker`) archive it as in the end-to-end bench. Duplicates are counted in the",
      "simulator's log (successful `/deviation/download/{id}` per deviation, CDN fetches per file, `grant_type=refresh_token`)",
      "and in the `downloads` table.",
      "",
      out,
    ].join("\n"),
  );
}
