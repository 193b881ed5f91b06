// bench/versus.ts --only: a run of some scenarios replaces their lines of docs/PERFORMANCE.md's versus section and
// keeps every other scenario's, with the run line that says where they came from (bench/versus-doc.ts).
import { describe, expect, it } from "vitest";
import { mergeVersusLines, parseVersusLines, type ScenarioKey } from "../../bench/versus-doc.ts";

const ALL: ScenarioKey[] = [
  { name: "clean", label: "clean, no limit", goalKeys: ["clean, ", "calls per stored item"] },
  { name: "throttle-2", label: "2 injected 429s", goalKeys: ["2 × 429:"] },
  { name: "5xx", label: "500 every 25th call", goalKeys: ["5xx:"] },
  { name: "velocity", label: "velocity filter", goalKeys: ["velocity:"] },
];

const OLD_SECTION = [
  "## dvault versus gallery-dl",
  "",
  "Runs (each scenario's rows, splits and goals below come from the latest run that measured it):",
  "",
  "- clean, 5xx: `node --import tsx bench/versus.ts --rounds 3 --only clean,5xx`, run A; load 0.3.",
  "- throttle-2, velocity: `node --import tsx bench/versus.ts --rounds 1 --only throttle-2,velocity`, run B; load 15.",
  "",
  "| scenario | tool | wall s (median) |",
  "|---|---|---:|",
  "| clean, no limit | dvault | 6.3 |",
  "| clean, no limit | gallery-dl | 0.9 |",
  "| 2 injected 429s | dvault | 36.8 |",
  "| 500 every 25th call | dvault | 17.5 |",
  "| velocity filter | dvault | 87.9 |",
  "",
  "The clean run's floor on this machine:",
  "",
  "- round 1: 492 requests × 0.18 ms = **0.4 s**",
  "",
  "Where the wall went:",
  "",
  "- clean, no limit, dvault: start-up 0.6 s, requests 5.4 s",
  "- 2 injected 429s, dvault: start-up 2.6 s, requests 33.1 s",
  "- velocity filter, dvault: start-up 2.4 s, requests 84.9 s",
  "",
  "Goals:",
  "",
  "- **FAIL** clean, dvault (learned): wall ≤ 1.2 × gallery-dl's: 5.0 s",
  "- **PASS** calls per stored item ≤ gallery-dl's: 0.90",
  "- **PASS** 2 × 429: dvault wall ≤ 0.2 × gallery-dl's: 36.8 s",
  "- **PASS** 5xx: dvault complete, exit 0: exit 0",
  "- **FAIL** velocity: dvault complete: 87.9 s; originals 161/175",
  "",
  "Error output of runs that did not exit 0 (last lines):",
  "",
  "- velocity round 1 gallery-dl (exit cap): stopped",
  "- 5xx round 2 dvault (exit 1): a 502",
].join("\n");

describe("the versus section after a run of some scenarios", () => {
  it("sorts the section's lines into runs, rows, floors, splits, goals and notes", () => {
    const old = parseVersusLines(OLD_SECTION);
    expect(old.runs).toHaveLength(2);
    expect(old.rows).toEqual([
      "| clean, no limit | dvault | 6.3 |",
      "| clean, no limit | gallery-dl | 0.9 |",
      "| 2 injected 429s | dvault | 36.8 |",
      "| 500 every 25th call | dvault | 17.5 |",
      "| velocity filter | dvault | 87.9 |",
    ]);
    expect(old.floors).toEqual(["- round 1: 492 requests × 0.18 ms = **0.4 s**"]);
    expect(old.splits).toHaveLength(3);
    expect(old.goals).toHaveLength(5);
    expect(old.notes).toEqual(["- velocity round 1 gallery-dl (exit cap): stopped", "- 5xx round 2 dvault (exit 1): a 502"]);
  });

  it("replaces the run scenarios' lines and keeps the others' where they were, with their run named", () => {
    const fresh = {
      runs: ["- throttle-2, velocity: `node --import tsx bench/versus.ts --rounds 1 --only throttle-2,velocity`, run C; load 6."],
      rows: ["| 2 injected 429s | dvault | 30.1 |", "| 2 injected 429s | gallery-dl | 500.2 |", "| velocity filter | dvault | 80.0 |"],
      floors: [],
      splits: ["- 2 injected 429s, dvault: start-up 0.7 s, requests 29.0 s", "- velocity filter, dvault: start-up 0.7 s, requests 79.0 s"],
      goals: ["- **PASS** 2 × 429: dvault wall ≤ 0.2 × gallery-dl's: 30.1 s", "- **PASS** velocity: dvault complete: 80.0 s; originals 175/175"],
      notes: [],
    };
    const merged = mergeVersusLines(parseVersusLines(OLD_SECTION), fresh, ["throttle-2", "velocity"], ALL);
    expect(merged.runs).toEqual([
      "- clean, 5xx: `node --import tsx bench/versus.ts --rounds 3 --only clean,5xx`, run A; load 0.3.",
      "- throttle-2, velocity: `node --import tsx bench/versus.ts --rounds 1 --only throttle-2,velocity`, run C; load 6.",
    ]);
    expect(merged.rows).toEqual([
      "| clean, no limit | dvault | 6.3 |",
      "| clean, no limit | gallery-dl | 0.9 |",
      "| 2 injected 429s | dvault | 30.1 |",
      "| 2 injected 429s | gallery-dl | 500.2 |",
      "| 500 every 25th call | dvault | 17.5 |",
      "| velocity filter | dvault | 80.0 |",
    ]);
    expect(merged.floors).toEqual(["- round 1: 492 requests × 0.18 ms = **0.4 s**"]);
    expect(merged.splits).toEqual([
      "- clean, no limit, dvault: start-up 0.6 s, requests 5.4 s",
      "- 2 injected 429s, dvault: start-up 0.7 s, requests 29.0 s",
      "- velocity filter, dvault: start-up 0.7 s, requests 79.0 s",
    ]);
    expect(merged.goals).toEqual([
      "- **FAIL** clean, dvault (learned): wall ≤ 1.2 × gallery-dl's: 5.0 s",
      "- **PASS** calls per stored item ≤ gallery-dl's: 0.90",
      "- **PASS** 2 × 429: dvault wall ≤ 0.2 × gallery-dl's: 30.1 s",
      "- **PASS** 5xx: dvault complete, exit 0: exit 0",
      "- **PASS** velocity: dvault complete: 80.0 s; originals 175/175",
    ]);
    // The velocity note was the old run's; the new one exited 0 everywhere, so only the 5xx note stays.
    expect(merged.notes).toEqual(["- 5xx round 2 dvault (exit 1): a 502"]);
  });

  it("keeps an older run's line for the scenarios of it not run again, and drops lines no scenario owns", () => {
    const old = parseVersusLines(`${OLD_SECTION}\n| a scenario since renamed | dvault | 1.0 |`);
    const fresh = {
      runs: ["- clean: `node --import tsx bench/versus.ts --rounds 3 --only clean`, run D."],
      rows: ["| clean, no limit | dvault | 5.5 |"],
      floors: ["- round 1: 490 requests × 0.10 ms = **0.2 s**"],
      splits: [],
      goals: [],
      notes: [],
    };
    const merged = mergeVersusLines(old, fresh, ["clean"], ALL);
    // Run A's line now names only 5xx, the scenario of it whose lines are still its own.
    expect(merged.runs.map((line) => line.slice(0, line.indexOf(": `")))).toEqual(["- 5xx", "- throttle-2, velocity", "- clean"]);
    expect(merged.rows.map((row) => row.slice(2, -2).split(" | ")[2])).toEqual(["5.5", "36.8", "17.5", "87.9"]);
    expect(merged.floors).toEqual(["- round 1: 490 requests × 0.10 ms = **0.2 s**"]);
    expect(merged.goals.filter((g) => g.includes("clean, ") || g.includes("calls per stored item"))).toEqual([]);
  });
});
