// SIGKILL of a worker process at random points across sync and downloads, restarting it each time, then a
// clean run: the mirror matches the simulator, no row twice, every file whole, no temp file left.
// DVAULT_FAULTS_KILLS sets how many kills (3 inside `npm test`, 20 in `npm run test:faults`).
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

const KILLS = Number(process.env.DVAULT_FAULTS_KILLS ?? 3);
// Slow originals so that a kill can land mid-file, not only between files.
const CDN_BYTES_PER_SECOND = 512 * 1024;

let h: FaultHarness;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 3, cdnBytesPerSecond: CDN_BYTES_PER_SECOND } });
});
afterAll(async () => {
  await h?.close();
});

/** Starts the child, kills it `afterMs` after it is running (or lets it finish); returns the phase it was in. */
async function runChild(afterMs: number | null, full = false): Promise<{ phase: string; signal: NodeJS.Signals | null; code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/faults/worker-child.ts")], {
    env: {
      ...process.env,
      FAULT_ENV: JSON.stringify(h.env),
      FAULT_NOW: String(h.sim.clock.now().getTime()),
      FAULT_ACCOUNT: String(h.account.id),
      FAULT_FULL: full ? "1" : "0",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let phase = "starting";
  let stderr = "";
  let timer: NodeJS.Timeout | undefined;
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  child.stdout.on("data", (c: Buffer) => {
    const lines = c.toString().trim().split("\n");
    const last = lines[lines.length - 1]?.replace(/^phase /, "");
    if (!last) return;
    if (phase === "starting" && afterMs !== null) timer = setTimeout(() => child.kill("SIGKILL"), afterMs);
    phase = last;
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once("exit", (c, s) => resolve([c, s])));
  clearTimeout(timer);
  return { phase, signal, code, stderr };
}

describe("a worker killed with SIGKILL", () => {
  it(`survives ${KILLS} kills at random points and ends with an exact mirror and archive`, async () => {
    const phases: string[] = [];
    for (let i = 0; i < KILLS; i++) {
      // Every other round the child sweeps every source in full and the kill aims at that sweep (≈ 0.5 s);
      // the others spread over a whole run (an incremental sync takes milliseconds, downloads 1–2 s at
      // this CDN speed). Without the sweeps, only the first kill could land in sync.
      const sweep = i % 2 === 1;
      const at = Math.floor(Math.random() * (sweep ? 500 : 2500));
      const run = await runChild(at, sweep);
      if (run.signal !== "SIGKILL") expect(run.code, run.stderr.slice(-2000)).toBe(0);
      phases.push(`${at}ms:${run.signal === "SIGKILL" ? run.phase : "finished"}`);
      h.sim.clock.advance(60_000);
    }
    // The clean run: one more worker process to completion, then the same loops in this process.
    const last = await runChild(null);
    expect(last.code, last.stderr.slice(-2000)).toBe(0);
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    const checked = await checkMirror(h);
    console.info(`SIGKILL x${KILLS} at ${phases.join(", ")}; ${checked.deviations} deviations and ${checked.files} files match`);
  }, 600_000);
});
