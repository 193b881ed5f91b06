// The "versus" section of docs/PERFORMANCE.md as lines owned by scenarios, so that a run of some scenarios
// (`bench/versus.ts --only throttle-2,velocity`) replaces their rows, splits, goals and notes and keeps the other
// scenarios' lines from the run that measured them, each with the line saying which run that was.

/** What ties a line of the section to a scenario: its name, its table label, the opening words of its goals. */
export type ScenarioKey = { name: string; label: string; goalKeys: string[] };

/** The section's measured lines, each block in the order it is shown. */
export type VersusLines = {
  /** One per run: "- clean, 5xx: `command`, run …": the scenarios whose lines came from that run. */
  runs: string[];
  /** Table rows, without the table's header. */
  rows: string[];
  /** The clean run's floor, one line per round. */
  floors: string[];
  splits: string[];
  goals: string[];
  notes: string[];
};

const RUN_LINE = /^- ([a-z0-9-]+(?:, [a-z0-9-]+)*): (`node --import tsx bench\/versus\.ts.*)$/;
const GOAL_LINE = /^- \*\*(?:PASS|FAIL)\*\* (.*)$/;
const NOTE_LINE = /^- (\S+) round \d+ /;
const FLOOR_LINE = /^- round \d+: /;

/** The scenario that owns the floor lines (only the clean run measures a floor). */
const FLOOR_OWNER = "clean";

/** The run line for the scenarios `names` measured by `command` (a command in backquotes, then when and where). */
export function runLine(names: string[], rest: string): string {
  return `- ${names.join(", ")}: ${rest}`;
}

/** Sorts a section's lines into their blocks; prose and table headers are left out (the bench writes them anew). */
export function parseVersusLines(body: string): VersusLines {
  const out: VersusLines = { runs: [], rows: [], floors: [], splits: [], goals: [], notes: [] };
  for (const line of body.split("\n")) {
    if (RUN_LINE.test(line)) out.runs.push(line);
    else if (line.startsWith("| ") && !line.startsWith("| scenario |")) out.rows.push(line);
    else if (FLOOR_LINE.test(line)) out.floors.push(line);
    else if (GOAL_LINE.test(line)) out.goals.push(line);
    else if (NOTE_LINE.test(line) && !line.includes(": start-up ")) out.notes.push(line);
    else if (line.startsWith("- ") && line.includes(": start-up ")) out.splits.push(line);
  }
  return out;
}

/** The scenario a line belongs to, or undefined for a line no scenario of `all` owns (dropped: a scenario renamed or gone). */
function owner(block: keyof VersusLines, line: string, all: ScenarioKey[]): string | undefined {
  switch (block) {
    case "rows":
      return all.find((k) => line.startsWith(`| ${k.label} |`))?.name;
    case "floors":
      return FLOOR_OWNER;
    case "splits":
      return all.find((k) => line.startsWith(`- ${k.label}, `))?.name;
    case "goals": {
      const name = GOAL_LINE.exec(line)?.[1] ?? "";
      return all.find((k) => k.goalKeys.some((g) => name.startsWith(g)))?.name;
    }
    case "notes":
      return all.find((k) => NOTE_LINE.exec(line)?.[1] === k.name)?.name;
    case "runs":
      return undefined;
  }
}

/**
 * The section's lines after a run of the scenarios `ran`: theirs from `fresh`, every other scenario's kept from
 * `old`, in the order of `all`; a run line of `old` keeps only the scenarios whose lines are still its own.
 */
export function mergeVersusLines(old: VersusLines, fresh: VersusLines, ran: string[], all: ScenarioKey[]): VersusLines {
  const order = (name: string | undefined) => all.findIndex((k) => k.name === name);
  const merged: VersusLines = { runs: [], rows: [], floors: [], splits: [], goals: [], notes: [] };
  for (const block of ["rows", "floors", "splits", "goals", "notes"] as const) {
    const kept = old[block].map((line) => ({ line, name: owner(block, line, all) })).filter((x) => x.name !== undefined && !ran.includes(x.name));
    const added = fresh[block].map((line) => ({ line, name: owner(block, line, all) }));
    // Stable sort: lines of one scenario keep their order (tools, rounds, goals as the bench wrote them).
    merged[block] = [...kept, ...added].sort((a, b) => order(a.name) - order(b.name)).map((x) => x.line);
  }
  const keptRuns = old.runs.flatMap((line) => {
    const m = RUN_LINE.exec(line);
    const names = (m?.[1] ?? "").split(", ").filter((n) => order(n) >= 0 && !ran.includes(n));
    return m && names.length ? [runLine(names, m[2] as string)] : [];
  });
  merged.runs = [...keptRuns, ...fresh.runs];
  return merged;
}
