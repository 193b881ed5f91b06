// Old and new code measured interleaved in one run: the ingest, API-economy and end-to-end benchmarks of a
// base revision and of this working tree, alternating which goes first each round, so a busy machine slows
// both alike. It prints each figure's median per side and new / old, and writes the table into
// docs/PERFORMANCE.md (section "compare-revisions") unless --no-docs.
// Run: node --import tsx bench/compare-revisions.ts --base <revision> [--rounds 3] [--deviations 600] [--only ingest,end-to-end] [--no-docs]
// The base is checked out into a temporary git worktree that borrows this tree's node_modules.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { git, HEAD_DIR, prepareBase } from "./base-worktree.ts";
import { machine, median, table, writeDocSection } from "./bench-env.ts";

const { values: args } = parseArgs({
  options: {
    base: { type: "string" },
    rounds: { type: "string", default: "3" },
    deviations: { type: "string", default: "600" },
    only: { type: "string" },
    "no-docs": { type: "boolean", default: false },
  },
});
if (!args.base) {
  process.stderr.write("compare-revisions: give --base <revision> (the commit to compare this tree against, e.g. the commit before a refactor)\n");
  process.exit(2);
}
const ROUNDS = Number(args.rounds);
const DEVIATIONS = Number(args.deviations);

type Figure = { bench: string; name: string; value: number; better: "higher" | "lower" };

/** Each benchmark, how to run it small enough to repeat, and the figures read back from what it prints. */
const BENCHES: Array<{ file: string; args: string[]; read: (out: string) => Figure[] }> = [
  {
    file: "bench/ingest.ts",
    args: ["--count", "3000"],
    read: (out) => {
      const m = /repository \/ raw\s+([\d.]+)\s+([\d.]+)/.exec(out);
      if (!m) return [];
      return [
        { bench: "ingest", name: "repository / raw, first load", value: Number(m[1]), better: "higher" },
        { bench: "ingest", name: "repository / raw, re-sync", value: Number(m[2]), better: "higher" },
      ];
    },
  },
  {
    file: "bench/api-economy.ts",
    args: ["--deviations", String(DEVIATIONS * 2), "--no-docs"],
    read: (out) => {
      const first = /First full sync of \d+ deviations: (\d+) API calls.*?\(minimum (\d+),/.exec(out);
      const folders = /Galleries \+ collections listings and metadata: (\d+) calls against a minimum of (\d+)/.exec(out);
      const figures: Figure[] = [];
      if (first) figures.push({ bench: "api-economy", name: "calls / minimum, first full sync", value: Number(first[1]) / Number(first[2]), better: "lower" });
      if (folders)
        figures.push({
          bench: "api-economy",
          name: "calls / minimum, galleries + collections",
          value: Number(folders[1]) / Number(folders[2]),
          better: "lower",
        });
      return figures;
    },
  },
  {
    file: "bench/end-to-end.ts",
    // The local archive alone: its row is the figure read, and the S3 half of a688554's run hangs when s3rver
    // loses its preflight object (an unhandled ENOENT in s3rver's child), which would stall the comparison.
    args: ["--deviations", String(DEVIATIONS), "--storage", "local", "--no-docs"],
    read: (out) => {
      // The row is "1 in-process worker, local archive folder" since the bench measures S3 too (older revisions: "1 in-process worker").
      const m = /\| 1 in-process worker(?:, local archive folder)? \| \d+ \| [\d.]+ \| [\d.]+ \| \*\*([\d.]+)\*\*/.exec(out);
      return m ? [{ bench: "end-to-end", name: "wall / minimum", value: Number(m[1]), better: "lower" }] : [];
    },
  },
];

const ONLY = args.only ? new Set(args.only.split(",")) : undefined;
const SELECTED = BENCHES.filter((b) => !ONLY || ONLY.has(path.basename(b.file, ".ts")));

function runBench(dir: string, bench: (typeof BENCHES)[number]): Figure[] {
  const r = spawnSync(process.execPath, ["--import", "tsx", bench.file, ...bench.args], { cwd: dir, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const figures = bench.read(r.stdout ?? "");
  if (r.status !== 0 || figures.length === 0) {
    process.stderr.write(`${bench.file} in ${dir} failed (exit ${r.status}):\n${(r.stderr ?? "").slice(-2000)}\n`);
    process.exit(1);
  }
  return figures;
}

async function main(): Promise<void> {
  const base = prepareBase(args.base as string, { argv: [process.execPath, "scripts/prisma-generate.js"], what: "generating the Prisma client" });
  const headCommit = git(HEAD_DIR, "rev-parse", "--short", "HEAD");
  const dirty = git(HEAD_DIR, "status", "--porcelain", "--untracked-files=no") !== "";
  const seen = new Map<string, { figure: Figure; old: number[]; now: number[] }>();
  const started = Date.now();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (["old", "now"] as const) : (["now", "old"] as const);
      for (const bench of SELECTED) {
        for (const side of order) {
          const figures = runBench(side === "old" ? base.dir : HEAD_DIR, bench);
          for (const f of figures) {
            const key = `${f.bench}: ${f.name}`;
            const entry = seen.get(key) ?? { figure: f, old: [], now: [] };
            entry[side].push(f.value);
            seen.set(key, entry);
          }
          process.stderr.write(`round ${round + 1}/${ROUNDS} ${bench.file} ${side}: ${figures.map((f) => `${f.name} ${f.value.toFixed(3)}`).join(", ")}\n`);
        }
      }
    }
  } finally {
    base.cleanup();
  }
  const rows: Array<Array<string | number>> = [];
  let worst = 0;
  for (const [key, { figure, old, now }] of seen) {
    const o = median(old);
    const n = median(now);
    // How much worse the new code is, as a fraction: positive is worse, whichever way the figure points.
    const worse = figure.better === "higher" ? o / n - 1 : n / o - 1;
    worst = Math.max(worst, worse);
    rows.push([key, figure.better, o.toFixed(3), n.toFixed(3), (n / o).toFixed(3), worse <= 0.05 ? "yes" : "**no**"]);
  }
  const minutes = ((Date.now() - started) / 60000).toFixed(1);
  const result = table(
    ["figure", "better when", `old (${base.commit}) median`, `new (${headCommit}${dirty ? "+changes" : ""}) median`, "new / old", "within 5 %"],
    rows,
  );
  process.stdout.write(`\n## Old and new, interleaved\n\n${result}\n\n(${ROUNDS} rounds, ${minutes} min; worst ${(worst * 100).toFixed(1)} % worse)\n`);
  if (!args["no-docs"]) {
    // A run of some benchmarks only (--only) gets a section of its own beside the full comparison.
    await writeDocSection(
      args.only ? `compare-revisions-${[...(ONLY ?? [])].join("-")}` : "compare-revisions",
      [
        `## Renovation: old and new code measured interleaved${args.only ? ` (${args.only} only)` : ""}`,
        "",
        `Machine: ${machine()}. Run ${new Date().toISOString()}, ${minutes} min.`,
        "",
        `Command: \`node --import tsx bench/compare-revisions.ts --base ${base.commit} --rounds ${ROUNDS} --deviations ${DEVIATIONS}${args.only ? ` --only ${args.only}` : ""}\``,
        "",
        "The ingest, API-economy and end-to-end benchmarks of the old revision (checked out into a temporary worktree) and of this",
        "tree run one after the other, the order swapped each round, so load on the machine falls on both alike; sizes are smaller",
        `than the full benchmarks' (ingest 3 000 deviations, API economy ${DEVIATIONS * 2}, end to end ${DEVIATIONS}) so the rounds fit in`,
        'one sitting. Each cell is the median over the rounds; "within 5 %" compares in the direction that is worse.',
        "",
        result,
      ].join("\n"),
    );
  }
}

await main();
