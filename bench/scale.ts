// The end-to-end archive with 1, 2 and 4 worker PROCESSES (bench/scale-worker.ts) sharing Redis, Postgres
// and the pacing budget: the same total work, nothing fetched twice, no token refreshed twice, and
// throughput bounded by the shared budget rather than by the process count. A fresh database, prefix and
// simulator per row. Access tokens live --token-lifetime seconds (default 10) of real time, so each row
// spans several expiries: every refresh is counted from the simulator's log — one grant_type=refresh_token
// per access token that ran out, each refresh token presented once, none refused — across all processes.
// --engines redis,postgres runs each row on each engine (DVAULT_ENGINE), interleaved, with the ratio PostgreSQL ÷ Redis.
// Run: node --import tsx bench/scale.ts [--deviations 1000] [--procs 1,2,4] [--token-lifetime 10] [--engines redis[,postgres]] [--no-docs]
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import type { Engine } from "../src/config.ts";
import { runArchive, LATENCY_MS, SPACING_MS } from "./archive-run.ts";
import { createBenchEnv, machine, parseEngines, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: {
    deviations: { type: "string", default: "1000" },
    procs: { type: "string", default: "1,2,4" },
    "token-lifetime": { type: "string", default: "10" },
    engines: { type: "string", default: "redis" },
    "no-docs": { type: "boolean", default: false },
  },
});
const ENGINES = parseEngines(String(args.engines));
const BY_ENGINE = ENGINES.length > 1 || ENGINES[0] !== "redis";
const DEVIATIONS = Number(args.deviations);
const PROCS = String(args.procs).split(",").map(Number);
const LIFETIME_S = Number(args["token-lifetime"]);

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
const checks: Array<Array<string | number>> = [];
const walls: Array<{ n: number; engine: Engine; wallMs: number; apiCalls: number }> = [];
for (const [n, engine] of PROCS.flatMap((n) => ENGINES.map((e) => [n, e] as const))) {
  const key = randomBytes(32);
  const env = await createBenchEnv({
    sim: {
      seed: 9,
      dataset: { deviations: DEVIATIONS },
      latencyMs: LATENCY_MS,
      clockMode: "real",
      startTime: new Date(),
      downloadQuota: 1_000_000,
      accessTokenLifetimeS: LIFETIME_S,
    },
    overrides: { now: Date.now, secretKey: { key, source: "env", created: false }, pacer: { startRate: 1000 / SPACING_MS, maxRate: 1000 / SPACING_MS } },
    configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000", DVAULT_ENGINE: engine },
  });
  try {
    const settings = {
      databaseUrl: env.databaseUrl,
      prefix: env.prefix,
      apiBase: env.sim.url,
      archiveDir: env.archiveDir,
      keyHex: key.toString("hex"),
      engine,
    };
    const f = await runArchive(env, async () => {
      const children = await Promise.all(Array.from({ length: n }, () => startChild(settings)));
      return async () => void (await Promise.all(children.map(stopChild)));
    });
    // Refreshes of the owner's grant: each presents the refresh token the previous one returned (single-use).
    const refreshes = env.sim.log().filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token");
    const presented = new Set(refreshes.map((e) => String(e.form.refresh_token)));
    const refused = refreshes.filter((e) => e.status !== 200).length;
    const unauthorized = env.sim.log().filter((e) => e.route.startsWith("/api/v1/oauth2") && e.status === 401).length;
    // Access tokens that ran out during the run (the login's token and each refreshed one live LIFETIME_S),
    // and the shortest time between two refreshes: two refreshes for one expiry would sit close together.
    const lifetimes = Math.floor(f.wallMs / (LIFETIME_S * 1000));
    const gaps = refreshes.slice(1).map((e, i) => e.realMs - (refreshes[i]?.realMs ?? 0));
    const minGapS = gaps.length ? (Math.min(...gaps) / 1000).toFixed(1) : "–";
    const { rows: acct } = await env.services.pool.query<{ state: string }>("SELECT state::text FROM accounts WHERE id = $1", [env.accountId]);
    const row = BY_ENGINE ? `${n}, ${engine}` : n;
    walls.push({ n, engine, wallMs: f.wallMs, apiCalls: f.apiCalls });
    process.stdout.write(`${n} processes, ${engine}: ${f.apiCalls} API calls, wall ${(f.wallMs / 1000).toFixed(1)} s\n`);
    rows.push([
      row,
      f.apiCalls,
      f.downloads.done ?? 0,
      (f.minimumMs / 1000).toFixed(1),
      (f.wallMs / 1000).toFixed(1),
      (f.firstApiMs / 1000).toFixed(1),
      `**${(f.wallMs / f.minimumMs).toFixed(2)}**`,
      ((f.apiCalls / f.wallMs) * 1000).toFixed(1),
    ]);
    checks.push([
      row,
      f.downloadedTwice.length,
      f.duplicateFetches,
      f.duplicateRows,
      refreshes.length,
      lifetimes,
      minGapS,
      refreshes.length - presented.size,
      refused,
      unauthorized,
      acct[0]?.state ?? "?",
    ]);
  } finally {
    await env.close();
  }
}
const out = table(
  ["worker processes", "API calls", "files stored", "minimum s", "wall s", "of which before the first request s", "wall / min", "API calls/s (budget 20)"],
  rows,
);
const once = table(
  [
    "worker processes",
    "deviations downloaded twice",
    "files fetched twice (CDN)",
    "duplicate download rows",
    "token refreshes",
    `${LIFETIME_S} s token lifetimes in the run`,
    "shortest s between refreshes",
    "refresh tokens presented twice",
    "refreshes refused",
    "API 401s",
    "account state",
  ],
  checks,
);
const [base, other] = ENGINES as [Engine, Engine | undefined];
const ratio = other
  ? table(
      ["worker processes", `wall ${other} ÷ ${base}`, "API calls ÷"],
      PROCS.map((n) => {
        const of = (engine: Engine) => walls.find((w) => w.n === n && w.engine === engine);
        const [b, o] = [of(base), of(other)];
        return [n, b && o ? `**${(o.wallMs / b.wallMs).toFixed(2)}**` : "–", b && o ? (o.apiCalls / b.apiCalls).toFixed(3) : "–"];
      }),
    )
  : "";
process.stdout.write(`\n## Scale\n\n${out}\n\n${once}\n\n${ratio}\n`);
if (BY_ENGINE && !args["no-docs"]) {
  await writeDocSection(
    "engines-scale",
    [
      "### Scale on each engine",
      "",
      `Machine: ${machine()}. Run ${new Date().toISOString()}.`,
      "",
      `Command: \`node --import tsx bench/scale.ts --engines ${ENGINES.join(",")} --deviations ${DEVIATIONS} --procs ${PROCS.join(",")} --token-lifetime ${LIFETIME_S}\``,
      "",
      "The scale bench's rows (below) with each process count run once per engine, one after the other, every",
      "`bench/scale-worker.ts` process on the row's `DVAULT_ENGINE`: on `postgres` they share the pace, the token's lock",
      "and BullMQ's queues through PostgreSQL alone.",
      "",
      out,
      "",
      once,
      "",
      ratio,
    ].join("\n"),
    "scale",
  );
} else if (!args["no-docs"]) {
  await writeDocSection(
    "scale",
    [
      "## Scale: 1, 2, 4 worker processes sharing Redis, Postgres and the pacing budget",
      "",
      `Machine: ${machine()}. Run ${new Date().toISOString()}.`,
      "",
      `Command: \`node --import tsx bench/scale.ts --deviations ${DEVIATIONS} --procs ${PROCS.join(",")} --token-lifetime ${LIFETIME_S}\` (part of \`npm run bench\`)`,
      "",
      `Each row: a fresh simulator (seed 9, ${DEVIATIONS} deviations, ${LATENCY_MS} ms latency), database and Redis prefix; N processes of`,
      "`bench/scale-worker.ts` (each a real `startWorker`) archive it as in the end-to-end bench. Duplicates are counted in the",
      "simulator's log (successful `/deviation/download/{id}` per deviation, CDN fetches per file) and in the `downloads` table.",
      "The rows archive fewer deviations than the end-to-end bench's 5 000 so that the three take about 6 minutes together.",
      `Access tokens live ${LIFETIME_S} s of real time, so each row outlives several of them (wall time ÷ ${LIFETIME_S} s in the table);`,
      "every `grant_type=refresh_token` request is counted from the simulator's log across all processes, with the refresh tokens",
      "presented (single-use on the real service: one presented twice would be refused and the account would need re-authorization)",
      "and the shortest time between two refreshes (two processes refreshing for the same expiry would show up as a gap of",
      "milliseconds). dvault refreshes a token shortly before it expires — its margin is at most a fifth of the lifetime, and a sync",
      "source asks for a token valid for half a lifetime before a long walk — so a little more than one refresh per lifetime, none",
      "refused, no 401 and the account still `ok` is the expected result.",
      "",
      out,
      "",
      once,
    ].join("\n"),
  );
}
