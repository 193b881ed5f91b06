// Peak memory of `dvault track import --dry-run` on a 108 MB txt list against the same command on a two-line list:
// the list is read as a stream and the names it repeats are found in PostgreSQL (src/track-lists/files.ts,
// import-list.ts), so the goal is less than 100 MB above the two-line list (docs/RELIABILITY.md#foreign-files;
// it was 3.3 GB). The list mixes usernames, profile and RSS URLs, comments, names repeated far apart, lines that
// name nobody and a few 1 MB lines. Each command runs as a person runs it, `node bin/dvault.js` (dist/ built
// first), under GNU time (`/usr/bin/time -f %M`); the median of --runs is reported. Prints a table; writes no doc.
//
//   node --import tsx bench/track-import-rss.ts [--mb 108] [--runs 3]
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { once } from "node:events";
import { parseArgs } from "node:util";
import { BENCH_REDIS_URL, createBenchEnv, machine, median, table } from "./bench-env.ts";

const { values: args } = parseArgs({ options: { mb: { type: "string", default: "108" }, runs: { type: "string", default: "3" } } });
const ROOT = path.join(import.meta.dirname, "..");
const BYTES = Number(args.mb) * 1_000_000;
const RUNS = Number(args.runs);

/** Writes `bytes` of list; returns the lines written. */
async function writeList(file: string, bytes: number): Promise<number> {
  const out = createWriteStream(file);
  let written = 0;
  let n = 0;
  const line = (i: number): string => {
    switch (i % 20) {
      case 0:
        return `# folder ${i}`;
      case 1:
      case 2:
        return `https://www.deviantart.com/artist-${i.toString(36)}`;
      case 3:
      case 4:
        return `https://backend.deviantart.com/rss.xml?type=deviation&q=gallery:artist-${i.toString(36)}`;
      case 5:
        return `artist-${Math.floor(i / 7).toString(36)}`; // a name met thousands of lines before
      case 6:
        return "not a name, nor a URL";
      default:
        return `artist-${i.toString(36)}`;
    }
  };
  while (written < bytes) {
    const text = n > 0 && n % 1_000_000 === 0 ? "z".repeat(1_000_000) : line(n);
    n += 1;
    written += text.length + 1;
    if (!out.write(`${text}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
  return n;
}

/** Peak RSS in MB and seconds of one run of the command, and its first line. */
function timed(argv: string[], env: NodeJS.ProcessEnv): Promise<{ mb: number; s: number; first: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/time", ["-f", "TIME %M %e", process.execPath, path.join(ROOT, "bin/dvault.js"), ...argv], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      const m = /TIME (\d+) ([\d.]+)/.exec(stderr);
      if (code !== 0 || !m) return reject(new Error(`dvault ${argv.join(" ")} ended ${code}: ${stderr.trim()}`));
      resolve({ mb: Number(m[1]) / 1024, s: Number(m[2]), first: stdout.split("\n")[0] ?? "" });
    });
  });
}

async function main(): Promise<void> {
  spawnSync(process.execPath, [path.join(ROOT, "scripts/build.js")], { cwd: ROOT, stdio: "ignore" });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-bench-track-rss-"));
  const bench = await createBenchEnv({ sim: { seed: 5, dataset: { deviations: 1 } } });
  try {
    const small = path.join(dir, "two-lines.txt");
    await fs.writeFile(small, "alice\nbob\n");
    const big = path.join(dir, "big.txt");
    const lines = await writeList(big, BYTES);
    const env = {
      PATH: process.env.PATH ?? "",
      HOME: dir,
      DATABASE_URL: bench.databaseUrl,
      REDIS_URL: BENCH_REDIS_URL,
      DVAULT_REDIS_PREFIX: bench.prefix,
      DVAULT_SECRET_KEY: bench.secretKeyHex,
      DVAULT_CONFIG_DIR: path.join(dir, "config"),
      LOG_LEVEL: "warn",
    };
    const results: Record<string, Array<{ mb: number; s: number; first: string }>> = { small: [], big: [] };
    for (let run = 0; run < RUNS; run++) {
      results.small?.push(await timed(["track", "import", small, "--dry-run"], env));
      results.big?.push(await timed(["track", "import", big, "--dry-run"], env));
    }
    const row = (name: string, size: string, rs: Array<{ mb: number; s: number; first: string }>) => [
      name,
      size,
      Math.round(median(rs.map((r) => r.mb))),
      median(rs.map((r) => r.s)).toFixed(1),
    ];
    const smallMb = median((results.small ?? []).map((r) => r.mb));
    const bigMb = median((results.big ?? []).map((r) => r.mb));
    const body = [
      "### `dvault track import --dry-run`: peak RSS",
      "",
      `Median of ${RUNS} runs; \`/usr/bin/time -f %M node bin/dvault.js track import <list> --dry-run\` with dist/ built. Machine: ${machine()}.`,
      "",
      table(
        ["list", "size", "peak RSS (MB)", "seconds"],
        [row("two lines", "10 B", results.small ?? []), row(`${lines} lines`, `${args.mb} MB`, results.big ?? [])],
      ),
      "",
      `Above the two-line list: ${Math.round(bigMb - smallMb)} MB (goal: < 100 MB). The big list's report: ${results.big?.[0]?.first ?? ""}`,
      "",
      `Run: \`node --import tsx bench/track-import-rss.ts --mb ${args.mb} --runs ${RUNS}\`.`,
    ].join("\n");
    process.stdout.write(`${body}\n`);
  } finally {
    await bench.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

await main();
