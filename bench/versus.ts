// dvault against Debian's gallery-dl (1.25) on the same simulated gallery, in one run, interleaved (round 1:
// dvault first; round 2: gallery-dl first; …), each run on a fresh simulator and with fresh state (issue #16):
// wall time with start-up, API calls (from the simulator's request log; CDN requests apart), files stored,
// whether both stored the same bytes for the same deviations, exit codes, calls per stored file; dvault as
// `dvault archive --once`, in the clean run also after an earlier run taught its pace (issue #32); the clean run's
// floor measured in the same run (loopback round trip and bandwidth); then the issues' goals, PASS or FAIL (a
// missed goal is reported, it does not fail the process).
// Run: node --import tsx bench/versus.ts [--rounds 3] [--items 300] [--only clean,throttle-2,…] [--no-docs]
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { DEFAULT_API_RATE } from "../src/config-defaults.ts";
import type { FaultRule } from "../src/simulator/faults.ts";
import type { SimulatorOptions } from "../src/simulator/server.ts";
import { makeServiceCertificate } from "../test/helpers/service-name-tunnel.ts";
import { machine, median, readDocSection, table, writeDocSection } from "./bench-env.ts";
import { mergeVersusLines, parseVersusLines, runLine, type VersusLines } from "./versus-doc.ts";
import {
  DVAULT_LEARNED,
  isDvault,
  type Loopback,
  measureLoopback,
  runDvaultOnce,
  runGalleryDlOnce,
  simOptions,
  type RunFigures,
  type Tool,
  dvaultEnvOverrides,
} from "./versus-run.ts";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    items: { type: "string", default: "300" },
    only: { type: "string" },
    cap: { type: "string", default: "900" },
    "no-docs": { type: "boolean", default: false },
  },
});
const ROUNDS = Number(args.rounds);
const ITEMS = Number(args.items);
const CAP_MS = Number(args.cap) * 1000;
if (!(Number.isInteger(ROUNDS) && ROUNDS >= 1) || !(Number.isInteger(ITEMS) && ITEMS >= 1) || !(CAP_MS > 0)) {
  process.stderr.write("versus: --rounds and --items expect whole numbers ≥ 1, --cap seconds > 0\n");
  process.exit(2);
}

/** The 2026 velocity filter of docs/service-behaviour.md#rate-limits: 120 calls per 60 s, 20 s decay. */
const VELOCITY = { limit: 120, windowMs: 60_000, decayMs: 20_000 };
/** gallery-dl with a user token under the velocity filter is expected not to finish: stopped here. */
const GDL_VELOCITY_CAP_MS = 240_000;
/** dvault under the velocity filter: past ~2 × its goal (1.5 × 360 calls ÷ 2/s at 300 items) a run only tells it failed. */
const DVAULT_VELOCITY_CAP_MS = Math.min(CAP_MS, 600_000);
const GDL: Tool = "gallery-dl";
const GDL_FULL: Tool = "gallery-dl +metadata +folders";

type Agg = {
  tool: Tool;
  runs: RunFigures[];
  wallMs: number;
  api: number;
  files: number;
  /** Deviations with a file stored (median). */
  items: number;
  /** Same bytes as dvault's for the deviations both stored, over all rounds: [same, both]. */
  sameAsDvault: [number, number];
};
type Goal = { name: string; pass: boolean; detail: string };
/** The clean run's floor on this machine, per round: (fewest calls + CDN requests of any tool) × round trip + dvault's bytes ÷ bandwidth. */
type Floor = { round: number; loopback: Loopback; calls: number; bytes: number; ms: number };
type Scenario = {
  name: string;
  label: string;
  sim: Partial<SimulatorOptions>;
  faults: FaultRule[];
  tools: Tool[];
  /** The opening words of its goals' names (bench/versus-doc.ts: which goal lines a run of it replaces). */
  goalKeys: string[];
  capMs?: Partial<Record<Tool, number>>;
  goals(by: Map<Tool, Agg>, floors: Floor[]): Goal[];
};

const s = (ms: number) => (ms / 1000).toFixed(1);

/** The pace's ceiling dvault runs under here: DVAULT_API_RATE_MAX as VERSUS_DVAULT_ENV sets it, else its default (calls a second). */
function paceCeiling(): number {
  const n = Number(dvaultEnvOverrides().DVAULT_API_RATE_MAX ?? Number.NaN);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_API_RATE.max;
}

/**
 * What the pace's ceiling alone takes of a run's requests: the pace spaces a key's sends at least 1 ÷ rate apart
 * (src/api/pacer-rules.ts), so n API calls at DVAULT_API_RATE_MAX take (n − 1) ÷ ceiling, a bound below which no dvault
 * run comes whatever its CPU (the CDN key has a ceiling of its own); said next to the clean goals.
 */
function paceBoundText(d: Agg, boundMs: number): string {
  const ceiling = paceCeiling();
  const paceMs = (Math.max(0, d.api - 1) / ceiling) * 1000;
  const verdict = paceMs > boundMs ? "above the bound: no run under this ceiling can pass" : "below the bound";
  return `; the pace's ceiling alone: (${d.api} API calls − 1) ÷ DVAULT_API_RATE_MAX ${ceiling}/s = ${s(paceMs)} s, ${verdict}`;
}
const perItem = (a: Agg) => (a.items ? a.api / a.items : Number.POSITIVE_INFINITY);

/** Every run finished with every downloadable original, byte for byte. */
function complete(d: Agg): boolean {
  return d.runs.every((r) => r.finished && r.originals === r.downloadable);
}

function wallGoal(name: string, factor: number): (by: Map<Tool, Agg>) => Goal[] {
  return (by) => {
    const d = by.get("dvault");
    const g = by.get(GDL);
    if (!d || !g) return [];
    const allFinished = complete(d);
    return [
      {
        name: `${name}: dvault wall ≤ ${factor} × gallery-dl's, complete`,
        pass: allFinished && d.wallMs <= factor * g.wallMs,
        detail: `${s(d.wallMs)} s against ${factor} × ${s(g.wallMs)} s = ${s(factor * g.wallMs)} s; originals ${d.runs.map((r) => `${r.originals}/${r.downloadable}`).join(", ")}`,
      },
    ];
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: "clean",
    label: "clean, no limit",
    sim: {},
    faults: [],
    tools: ["dvault", DVAULT_LEARNED, GDL, GDL_FULL],
    goalKeys: ["clean, ", "calls per stored item"],
    goals(by, floors) {
      const g = by.get(GDL);
      const full = by.get(GDL_FULL);
      const floorMs = median(floors.map((f) => f.ms));
      const goals: Goal[] = [];
      for (const [tool, role] of [
        [DVAULT_LEARNED, "the goal"],
        ["dvault", "a fresh install's cautious start, reported"],
      ] as const) {
        const d = by.get(tool);
        if (!d) continue;
        const done = complete(d) && d.runs.every((r) => r.exit === "0");
        const originals = d.runs.map((r) => `${r.originals}/${r.downloadable}`).join(", ");
        if (g)
          goals.push({
            name: `clean, ${tool} (${role}): wall ≤ 1.2 × gallery-dl's, complete`,
            pass: done && d.wallMs <= 1.2 * g.wallMs,
            detail: `${s(d.wallMs)} s against 1.2 × ${s(g.wallMs)} s = ${s(1.2 * g.wallMs)} s (${(d.wallMs / g.wallMs).toFixed(2)} ×); originals ${originals}${paceBoundText(d, 1.2 * g.wallMs)}`,
          });
        if (floors.length)
          goals.push({
            name: `clean, ${tool} (${role}): wall ≤ 2 × the floor`,
            pass: done && d.wallMs <= 2 * floorMs,
            detail: `${s(d.wallMs)} s against 2 × ${s(floorMs)} s = ${s(2 * floorMs)} s (${(d.wallMs / floorMs).toFixed(2)} × the floor)${paceBoundText(d, 2 * floorMs)}`,
          });
      }
      const d = by.get(DVAULT_LEARNED) ?? by.get("dvault");
      if (d && g && full) {
        const folderPages = median(full.runs.map((r) => r.folderPages));
        const allowance = g.api + folderPages + Math.ceil(ITEMS / 50);
        goals.push({
          name: "calls per stored item ≤ gallery-dl's with metadata and folders on, or ≤ its default's + folder pages + ⌈items/50⌉",
          pass: perItem(d) <= perItem(full) || d.api <= allowance,
          detail:
            `dvault ${perItem(d).toFixed(2)} (${d.api} calls, ${d.items} items); gallery-dl +metadata +folders ${perItem(full).toFixed(2)}; ` +
            `gallery-dl default ${perItem(g).toFixed(2)} (${g.api} calls) + ${folderPages} folder pages + ${Math.ceil(ITEMS / 50)} = ${allowance} calls`,
        });
      }
      return goals;
    },
  },
  {
    name: "throttle-2",
    label: "2 injected 429s",
    sim: {},
    faults: [{ kind: "user_throttle", times: 2 }],
    tools: ["dvault", GDL],
    goalKeys: ["2 × 429:"],
    goals: wallGoal("2 × 429", 0.2),
  },
  {
    name: "throttle-10",
    label: "10 % of calls answered 429",
    sim: {},
    faults: [{ kind: "user_throttle", probability: 0.1 }],
    tools: ["dvault", GDL],
    goalKeys: ["10 % 429:"],
    goals: wallGoal("10 % 429", 0.2),
  },
  {
    name: "5xx",
    label: "500 every 25th call, 3 % 502/503",
    sim: {},
    faults: [
      { kind: "status_500", every: 25 },
      { kind: "status_502", probability: 0.015 },
      { kind: "status_503", probability: 0.015 },
    ],
    tools: ["dvault", GDL],
    goalKeys: ["5xx:"],
    goals(by) {
      const d = by.get("dvault");
      if (!d) return [];
      return [
        {
          name: "5xx: dvault complete, exit 0",
          pass: complete(d) && d.runs.every((r) => r.exit === "0"),
          detail: d.runs.map((r) => `exit ${r.exit}, originals ${r.originals}/${r.downloadable}`).join("; "),
        },
        ...wallGoal("5xx", 1)(by),
      ];
    },
  },
  {
    name: "velocity",
    label: "2026 velocity filter, 120 calls / 60 s, 20 s decay",
    sim: { velocity: VELOCITY },
    faults: [],
    tools: ["dvault", GDL],
    goalKeys: ["velocity:"],
    capMs: { [GDL]: GDL_VELOCITY_CAP_MS, dvault: DVAULT_VELOCITY_CAP_MS },
    goals(by) {
      const d = by.get("dvault");
      const g = by.get(GDL);
      if (!d) return [];
      const rate = VELOCITY.limit / (VELOCITY.windowMs / 1000);
      const bound = (1.5 * d.api) / rate;
      const goals: Goal[] = [
        {
          name: "velocity: dvault complete, wall ≤ 1.5 × calls ÷ rate",
          pass: d.runs.every((r) => r.finished && r.originals === r.downloadable) && d.wallMs / 1000 <= bound,
          detail: `${s(d.wallMs)} s against 1.5 × ${d.api} calls ÷ ${rate}/s = ${bound.toFixed(1)} s; originals ${d.runs.map((r) => `${r.originals}/${r.downloadable}`).join(", ")}`,
        },
      ];
      // Only a run that needs more calls than the filter's bucket holds can meet the filter at all.
      const small =
        g && g.api <= VELOCITY.limit ? ` (its ${g.api} calls fit in the filter's bucket of ${VELOCITY.limit}: --items is too small to meet the filter)` : "";
      if (g)
        goals.push({
          name: "velocity: gallery-dl with a user token does not finish (expected, not dvault's goal)",
          pass: g.runs.some((r) => !r.finished || r.originals < r.downloadable),
          detail: `${g.runs.map((r) => `exit ${r.exit} after ${s(r.wallMs)} s, originals ${r.originals}/${r.downloadable}`).join("; ")}${small}`,
        });
      return goals;
    },
  },
];

function gallerydlVersion(): string | undefined {
  const v = spawnSync("gallery-dl", ["--version"], { encoding: "utf8" });
  return v.status === 0 ? v.stdout.trim() : undefined;
}

function aggregate(tool: Tool, runs: RunFigures[], dvault: RunFigures[]): Agg {
  const same: [number, number] = [0, 0];
  for (const r of runs) {
    const d = dvault.find((x) => x.round === r.round);
    if (!d) continue;
    for (const [id, sum] of r.sums) {
      const other = d.sums.get(id);
      if (other === undefined) continue;
      same[1] += 1;
      if (other === sum) same[0] += 1;
    }
  }
  const m = (f: (r: RunFigures) => number) => median(runs.map(f));
  return { tool, runs, wallMs: m((r) => r.wallMs), api: m((r) => r.api), files: m((r) => r.files), items: m((r) => r.items), sameAsDvault: same };
}

function rows(scenario: Scenario, by: Map<Tool, Agg>): Array<Array<string | number>> {
  return [...by.values()].map((a) => {
    const m = (f: (r: RunFigures) => number) => median(a.runs.map(f));
    return [
      scenario.label,
      a.tool,
      s(a.wallMs),
      `${a.runs.filter((r) => r.finished).length}/${a.runs.length}`,
      a.runs.map((r) => r.exit).join(", "),
      a.api,
      m((r) => r.refused),
      m((r) => r.failedCalls),
      m((r) => r.cdn),
      a.files,
      a.items,
      `${m((r) => r.originals)}/${m((r) => r.downloadable)}`,
      isDvault(a.tool) ? "–" : `${a.sameAsDvault[0]}/${a.sameAsDvault[1]}`,
      a.items ? perItem(a).toFixed(2) : "–",
    ];
  });
}

/** The round's floor: the fewest calls and CDN requests any tool made × the round trip, plus dvault's bytes at the bandwidth. */
function floorOf(round: number, loopback: Loopback, runs: Map<Tool, RunFigures[]>): Floor {
  const inRound = [...runs.values()].flatMap((rs) => rs.filter((r) => r.round === round));
  const calls = Math.min(...inRound.map((r) => r.api + r.cdn));
  const bytes = inRound.find((r) => r.tool === "dvault")?.bytes ?? Math.max(...inRound.map((r) => r.bytes));
  return { round, loopback, calls, bytes, ms: calls * loopback.rttMs + bytes / loopback.bytesPerMs };
}

function floorLine(f: Floor): string {
  return (
    `- round ${f.round}: ${f.calls} requests × ${f.loopback.rttMs.toFixed(2)} ms + ${(f.bytes / 1e6).toFixed(1)} MB ÷ ${(f.loopback.bytesPerMs / 1000).toFixed(0)} MB/s` +
    ` = ${s(f.calls * f.loopback.rttMs)} s + ${s(f.bytes / f.loopback.bytesPerMs)} s = **${s(f.ms)} s**`
  );
}

/** Where each dvault run's wall went, medians: start-up (to the first request), the requests, the ending (after the last). */
function splits(scenario: Scenario, by: Map<Tool, Agg>): string[] {
  return [...by.values()]
    .filter((a) => isDvault(a.tool) || scenario.name === "clean")
    .map((a) => {
      const m = (f: (r: RunFigures) => number) => s(median(a.runs.map(f)));
      const cpu = a.runs.every((r) => r.cpuMs !== undefined) ? `; CPU ${m((r) => r.cpuMs ?? 0)} s` : "";
      return `- ${scenario.label}, ${a.tool}: start-up ${m((r) => r.firstMs)} s, requests ${m((r) => r.lastMs - r.firstMs)} s, ending ${m((r) => r.wallMs - r.lastMs)} s (wall ${s(a.wallMs)} s${cpu})`;
    });
}

async function main(): Promise<void> {
  const version = gallerydlVersion();
  if (!version) process.stderr.write("versus: gallery-dl is not installed (Debian: apt-get install gallery-dl); measuring dvault alone\n");
  const only = args.only?.split(",").map((x) => x.trim());
  const unknown = only?.filter((n) => !SCENARIOS.some((sc) => sc.name === n)) ?? [];
  if (unknown.length) {
    process.stderr.write(`versus: unknown scenario ${unknown.join(", ")}; choose from ${SCENARIOS.map((sc) => sc.name).join(", ")}\n`);
    process.exit(2);
  }
  const scenarios = SCENARIOS.filter((sc) => !only || only.includes(sc.name));
  const certDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-versus-cert-"));
  const certificate = await makeServiceCertificate(certDir);
  const allRows: Array<Array<string | number>> = [];
  const goals: Goal[] = [];
  const floorLines: string[] = [];
  const splitLines: string[] = [];
  const notes: string[] = [];
  try {
    for (const sc of scenarios) {
      const tools = sc.tools.filter((t) => isDvault(t) || version);
      const runs = new Map<Tool, RunFigures[]>(tools.map((t) => [t, []]));
      const loopbacks = new Map<number, Loopback>();
      for (let round = 1; round <= ROUNDS; round++) {
        // The clean run's floor: this machine's loopback, measured in each round before its runs.
        if (sc.name === "clean") {
          const lb = await measureLoopback(simOptions(ITEMS, sc.sim));
          loopbacks.set(round, lb);
          process.stderr.write(`versus ${sc.name} round ${round} loopback: round trip ${lb.rttMs.toFixed(2)} ms, ${(lb.bytesPerMs / 1000).toFixed(0)} MB/s\n`);
        }
        for (const tool of round % 2 ? tools : [...tools].reverse()) {
          const setup = { sim: simOptions(ITEMS, sc.sim), faults: sc.faults, capMs: sc.capMs?.[tool] ?? CAP_MS };
          const r =
            tool === "dvault" || tool === DVAULT_LEARNED
              ? await runDvaultOnce(round, setup, tool === DVAULT_LEARNED ? "learned" : "fresh")
              : await runGalleryDlOnce(tool, round, setup, certificate);
          process.stderr.write(
            `versus ${sc.name} round ${round} ${tool}: ${s(r.wallMs)} s (first request ${s(r.firstMs)} s, last ${s(r.lastMs)} s${r.cpuMs !== undefined ? `, CPU ${s(r.cpuMs)} s` : ""}), exit ${r.exit}, ${r.api} API calls (${r.refused} × 429, ${r.failedCalls} × 5xx), ${r.cdn} CDN, ${r.files} files (${r.items} items, ${(r.bytes / 1e6).toFixed(1)} MB), originals ${r.originals}/${r.downloadable}\n`,
          );
          if (r.tail) notes.push(`${sc.name} round ${round} ${tool} (exit ${r.exit}): ${r.tail}`);
          runs.get(tool)?.push(r);
        }
      }
      const dvaultRuns = runs.get("dvault") ?? [];
      const by = new Map<Tool, Agg>(tools.map((t) => [t, aggregate(t, runs.get(t) ?? [], dvaultRuns)]));
      const floors = [...loopbacks].map(([round, loopback]) => floorOf(round, loopback, runs));
      allRows.push(...rows(sc, by));
      goals.push(...sc.goals(by, floors));
      if (floors.length) floorLines.push(...floors.map(floorLine));
      splitLines.push(...splits(sc, by));
    }
  } finally {
    await fs.rm(certDir, { recursive: true, force: true });
  }
  const header = [
    "scenario",
    "tool",
    "wall s (median)",
    "finished",
    "exit codes",
    "API calls",
    "429s",
    "5xx/resets",
    "CDN requests",
    "files",
    "items stored",
    "originals stored/downloadable",
    "same bytes as dvault",
    "API calls / item",
  ];
  const goalLines = goals.map((g) => `- **${g.pass ? "PASS" : "FAIL"}** ${g.name}: ${g.detail}`);
  const command = `node --import tsx bench/versus.ts --rounds ${ROUNDS} --items ${ITEMS}${args.only ? ` --only ${args.only}` : ""}`;
  const load = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
  const fresh: VersusLines = {
    runs: [
      runLine(
        scenarios.map((sc) => sc.name),
        `\`${command}\`, run ${new Date().toISOString()}; ${machine()}, at the end ${load}; gallery-dl ${version ?? "not installed"}.`,
      ),
    ],
    rows: table(header, allRows).split("\n").slice(2),
    floors: floorLines,
    splits: splitLines,
    goals: goalLines,
    notes: notes.map((n) => `- ${n}`),
  };
  process.stdout.write(`\n## dvault versus gallery-dl\n\n${render(header, fresh)}\n`);
  if (!args["no-docs"]) {
    // A run of some scenarios (--only) replaces their lines and keeps the others' from the run that measured them.
    const old = parseVersusLines(await readDocSection("versus"));
    const merged = mergeVersusLines(
      old,
      fresh,
      scenarios.map((sc) => sc.name),
      SCENARIOS,
    );
    await writeDocSection(
      "versus",
      [
        "## dvault versus gallery-dl on the same simulated gallery (issue #16)",
        "",
        "Runs (each scenario's rows, splits and goals below come from the latest run that measured it):",
        "",
        ...merged.runs,
        "",
        `Each run starts a fresh simulator (seed 16, legacy mode for gallery-dl 1.25, ${ITEMS} deviations in the owner's gallery,`,
        "no download quota in the way, real clock) with the scenario's faults from its first call. dvault runs as the real CLI,",
        "`dvault archive --once --only gallery` (one child process, start-up included) on a new database, Redis prefix and archive",
        "folder. `dvault` is a fresh install: its pace learns nothing from an earlier run and starts cautiously",
        "(docs/service-behaviour.md#rate-limits). `dvault (learned)` (clean run) is the same account's next run: an earlier",
        "`archive --once` on an environment of its own (same simulator seed, untimed) taught the pace; its pace keys' stored",
        "state (what `dvault engine migrate` carries) is restored into the new Redis prefix without the current rate and last",
        "send, so the run starts as one more than 5 minutes later does, at the learned rate; database and archive folder are new.",
        "gallery-dl runs with its own user grant (`public=false`), a private cache file and an empty target folder, reaching the",
        "simulator under www.deviantart.com through a CONNECT proxy and the simulator's TLS listener (test/helpers/service-name-tunnel.ts).",
        "Rounds alternate which tool goes first. Wall time, calls and files are medians over the rounds; API calls are the",
        "simulator's count of /api/v1/oauth2 requests (token requests and CDN transfers apart); files are what the tool left on",
        "disk, items the deviations with at least one of them (calls per item divide by these); originals are the gallery's",
        "downloadable originals stored byte for byte; same bytes compares, over all rounds, the",
        "image each tool stored for every deviation both stored. Runs are stopped at",
        `${args.cap} s (under the velocity filter: gallery-dl at ${GDL_VELOCITY_CAP_MS / 1000} s, dvault at ${DVAULT_VELOCITY_CAP_MS / 1000} s) and counted unfinished.`,
        "`npm run bench` runs it with 3 rounds of 300 deviations: expect over an hour, while gallery-dl's 429 delays and the",
        "velocity caps dominate; `--only clean,5xx` is the quick pair, and a run of some scenarios keeps the others' lines.",
        "",
        render(header, merged, "Goals (issues #16, #32), PASS or FAIL as measured:"),
      ].join("\n"),
    );
  }
}

/** The table, the floor, where the wall went, the goals and the error output, from the section's lines. */
function render(header: string[], lines: VersusLines, goalsTitle = "Goals (issues #16, #32):"): string {
  const cells = lines.rows.map((row) => row.slice(2, -2).split(" | "));
  const floorText = lines.floors.length
    ? `\nThe clean run's floor on this machine, measured in each round (round trip: the median of 200 sequential /placebo calls by curl; bandwidth: the 8 largest originals fetched by curl, the simulator's first making of each picture left out):\n\n${lines.floors.join("\n")}\n`
    : "";
  const splitText = lines.splits.length
    ? `\nWhere the wall went (medians; from the simulator's log: start to first request, first to last, last to exit; CPU: the user and system time of the tool's process, its threads included, from /proc):\n\n${lines.splits.join("\n")}\n`
    : "";
  const noteText = lines.notes.length ? `\nError output of runs that did not exit 0 (last lines):\n\n${lines.notes.join("\n")}\n` : "";
  return [table(header, cells), floorText, splitText, goalsTitle, "", lines.goals.join("\n"), noteText].join("\n");
}

await main();
