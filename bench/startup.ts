// Start-up of the `dvault` command as a person runs it: `bin/dvault.js --help`, `--version`, `sync --help` and
// `status` (against a migrated throwaway database, Redis and the simulator's logged-in owner), each run 10 times
// after one warm-up, interleaved so a busy machine slows every variant alike. Variants: the build in dist/ (what
// bin/dvault.js runs after `npm ci`), the sources through tsx (DVAULT_FROM_SOURCE=1: what it runs after an edit),
// and with --base <revision> that revision's bin/dvault.js from a temporary git worktree. Goal: median ≤ 1 s for
// `--help` and `status`. Writes docs/PERFORMANCE.md section "startup" unless --no-docs.
// Run: node --import tsx bench/startup.ts [--runs 10] [--base <revision>] [--no-docs]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { distIsCurrent } from "../bin/dist-current.js";
import { HEAD_DIR, prepareBase } from "./base-worktree.ts";
import { BENCH_REDIS_URL, createBenchEnv, machine, median, SIM_CLIENT_ID, SIM_CLIENT_SECRET, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: { runs: { type: "string", default: "10" }, base: { type: "string" }, "no-docs": { type: "boolean", default: false } },
});
const RUNS = Math.max(1, Number(args.runs));
const GOAL_MS = 1000;
const COMMANDS = [["--help"], ["--version"], ["sync", "--help"], ["status"]] as const;

/** `npx`: run as `npx dvault …` (the README's form; npm's own start-up comes on top), else as `node bin/dvault.js …`. */
type Variant = { name: string; dir: string; env: Record<string, string>; npx?: boolean };

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** One run of `node bin/dvault.js …` (or `npx dvault …`) in `dir`, in ms; the bench stops when the command fails. */
function timeRun(variant: Variant, command: readonly string[], env: Record<string, string>): number {
  const [file, ...argv] = variant.npx ? ["npx", "dvault", ...command] : [process.execPath, path.join(variant.dir, "bin/dvault.js"), ...command];
  const started = performance.now();
  const r = spawnSync(file as string, argv, {
    cwd: variant.dir,
    env: { ...env, ...variant.env },
    encoding: "utf8",
  });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`${variant.name}: dvault ${command.join(" ")} exited ${r.status}: ${r.stderr.trim().slice(-500)}`);
  return ms;
}

async function main(): Promise<void> {
  // What `npm ci` leaves: the Prisma client and a current dist/ (postinstall).
  const build = spawnSync("npm", ["run", "-s", "postinstall"], { cwd: HEAD_DIR, stdio: "inherit" });
  if (build.status !== 0) throw new Error("npm run postinstall failed");
  const bench = await createBenchEnv({ sim: { seed: 3, dataset: { deviations: 10 } } });
  const base = args.base ? prepareBase(args.base, { argv: ["npm", "run", "-s", "postinstall"], what: "the postinstall" }) : undefined;
  const home = mkdtempSync(path.join(os.tmpdir(), "dvault-startup-home-"));
  try {
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: home,
      LOG_LEVEL: "warn",
      DATABASE_URL: bench.databaseUrl,
      REDIS_URL: BENCH_REDIS_URL,
      DVAULT_REDIS_PREFIX: bench.prefix,
      DVAULT_API_BASE: bench.sim.url,
      DVAULT_CLIENT_ID: SIM_CLIENT_ID,
      DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
      DVAULT_ARCHIVE_DIR: bench.archiveDir,
      DVAULT_CONFIG_DIR: path.join(home, "config"),
      DVAULT_SECRET_KEY: bench.secretKeyHex,
    };
    const variants: Variant[] = [
      { name: "dist/ (after npm ci)", dir: HEAD_DIR, env: {} },
      { name: "dist/, through npx", dir: HEAD_DIR, env: {}, npx: true },
      { name: "sources through tsx (after an edit)", dir: HEAD_DIR, env: { DVAULT_FROM_SOURCE: "1" } },
      ...(base ? [{ name: `${base.commit} (before)`, dir: base.dir, env: {} }] : []),
    ];
    const times = new Map<string, number[]>();
    for (const command of COMMANDS) {
      for (const v of variants) timeRun(v, command, env); // warm-up: the page cache, tsx's transform cache
      for (let run = 0; run < RUNS; run++) {
        // Rotate which variant goes first, so none always runs on the heels of another.
        for (let i = 0; i < variants.length; i++) {
          const v = variants[(run + i) % variants.length] as Variant;
          const key = `${v.name}\0${command.join(" ")}`;
          times.set(key, [...(times.get(key) ?? []), timeRun(v, command, env)]);
        }
      }
      log(`dvault ${command.join(" ")}: done`);
    }
    // An edit to src/ or jobs/ during the runs would have sent bin/dvault.js to the sources: the dist/ row would lie.
    if (!distIsCurrent(HEAD_DIR)) throw new Error("src/ or jobs/ changed during the bench, so dist/ was not what ran: run it again on a quiet tree");
    const rows = COMMANDS.flatMap((command) =>
      variants.map((v) => {
        const t = times.get(`${v.name}\0${command.join(" ")}`) ?? [];
        return [`\`dvault ${command.join(" ")}\``, v.name, Math.round(median(t)), Math.round(Math.min(...t)), Math.round(Math.max(...t))];
      }),
    );
    const out = table(["command", "variant", "median ms", "min ms", "max ms"], rows);
    const goalMet = (command: string) => median(times.get(`${variants[0]?.name}\0${command}`) ?? []) <= GOAL_MS;
    const verdict = `Goal: median ≤ ${GOAL_MS} ms for \`--help\` and \`status\` from dist/ — ${goalMet("--help") && goalMet("status") ? "met" : "NOT MET"}.`;
    process.stdout.write(`${out}\n${verdict}\n`);
    if (!args["no-docs"]) {
      await writeDocSection(
        "startup",
        `<a id="start-up"></a>\n\n## Start-up: \`dvault --help\`, \`--version\`, \`status\`\n\n\`node --import tsx bench/startup.ts${args.base ? ` --base ${args.base}` : ""}\` on ${machine()}. Each command runs ${RUNS} times after one warm-up, as \`node bin/dvault.js …\` in a child process (the npx row as \`npx dvault …\`: npm's own start-up comes on top, which \`npm link\` or calling \`node bin/dvault.js\` in scripts avoids), the variants interleaved; \`status\` reads a migrated throwaway database with the simulator's owner logged in, and Redis. dist/ is what \`bin/dvault.js\` runs after \`npm ci\` (postinstall compiles it); after an edit to src/ or jobs/ (or an install into node_modules, bin/dist-current.js) it runs the sources through tsx until the next \`npm run build\`.\n\n${out}\n\n${verdict} \`dvault\` imports only the command it runs (src/cli/program.ts); \`test/unit/cli-startup.test.ts\` holds \`--help\` and \`--version\` to loading commander alone. dist/ loads kysely, zod, got, bullmq and sanitize-html as one bundled file each (dist/vendor/, scripts/vendor.js) instead of their hundreds of modules; \`test/unit/cli-startup.test.ts\` holds a built dist/ to loading none of them from node_modules.\n`,
      );
    }
  } finally {
    base?.cleanup();
    rmSync(home, { recursive: true, force: true });
    await bench.close();
  }
}

await main();
