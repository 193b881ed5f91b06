// .ci/run's closing line "N passed, N failed" is what CI is judged by: it must never say "0 failed" about a pass that
// failed. Vitest's JSON report leaves out unhandled errors (they fail the run with every test green), so the line
// takes each pass's exit status beside its report. The function is run here as .ci/run defines it.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ciRun = readFileSync(join(import.meta.dirname, "../../.ci/run"), "utf8");
const summaryFunction = /^summary\(\) \{\n[\s\S]*?\n\}\n/m.exec(ciRun)?.[0] ?? "";

function summary(...passes: Array<[exitStatus: number, report: object | null]>) {
  const dir = mkdtempSync(join(tmpdir(), "ci-summary-"));
  const args = passes.map(([exitStatus, report], i) => {
    const file = join(dir, `results-${i}.json`);
    if (report) writeFileSync(file, JSON.stringify(report));
    return `${exitStatus}:${file}`;
  });
  const r = spawnSync("bash", ["-c", `${summaryFunction}\nsummary "$@"`, "summary", ...args], { encoding: "utf8" });
  const lines = r.stdout.trim().split("\n");
  return { last: lines.at(-1), out: r.stdout, status: r.status };
}

const report = (passed: number, failed = 0, failedSuites = 0) => ({
  numPassedTests: passed,
  numFailedTests: failed,
  numFailedTestSuites: failedSuites,
  numPendingTests: 0,
  numTodoTests: 0,
});

describe("CI's closing line", () => {
  it("is found in .ci/run", () => {
    expect(summaryFunction).toContain("passed,");
  });

  it("sums both passes and exits 0 when both are green", () => {
    expect(summary([0, report(1605)], [0, report(88)])).toMatchObject({ last: "1693 passed, 0 failed", status: 0 });
  });

  it("counts a pass that exited non-zero with every test green (unhandled errors) as a failure, and says why", () => {
    const r = summary([1, report(1605)], [0, report(88)]);
    expect(r).toMatchObject({ last: "1693 passed, 1 failed", status: 1 });
    expect(r.out).toMatch(/exited 1 with no failed test listed \(unhandled errors/);
  });

  it("counts failed tests once, not again for the exit status they caused", () => {
    expect(summary([1, report(1600, 5)], [0, report(88)])).toMatchObject({ last: "1688 passed, 5 failed", status: 1 });
  });

  it("counts a suite that failed to load, and a missing report, as failures", () => {
    expect(summary([1, report(10, 0, 2)], [1, null])).toMatchObject({ last: "10 passed, 3 failed", status: 1 });
  });
});
