// Two real processes sharing one key of the pace (test/helpers/pacer-runner.ts), on each store: together they
// never start requests closer than the key's pace allows, and a refusal one of them meets holds the other too.
// The children keep real time (a pace shared across processes is a pace of the wall clock); the test itself
// only reads what they print.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPacerStores, PACER_ENGINES, type PacerStores } from "../helpers/pacer-stores.ts";

type Grant = { acquiredAt: number; releasedAt: number; refused: boolean };

const RATE = 20; // requests per second: starts at least 50 ms apart
const HOLD_MS = 400;

/** A runner child and the lines it printed, once it said "ready". */
async function runner(s: PacerStores, key: string, permits: number, refuseLast: boolean) {
  const args = [s.engine, s.url, s.namespace, key, String(permits), refuseLast ? "1" : "0", String(RATE), String(HOLD_MS)];
  const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/pacer-runner.ts", ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const grants: Grant[] = [];
  const lines = createInterface({ input: child.stdout });
  const ready = new Promise<void>((resolve) =>
    lines.on("line", (line) => {
      if (line === "ready") resolve();
      else grants.push(JSON.parse(line) as Grant);
    }),
  );
  await Promise.race([ready, once(child, "exit").then(() => Promise.reject(new Error("the runner ended before it was ready")))]);
  return { child, grants };
}

const finished = async (child: ChildProcess) => {
  if (child.exitCode === null) await once(child, "exit");
  expect(child.exitCode).toBe(0);
};

describe.each(PACER_ENGINES)("two processes sharing one key of the pace, on %s", (engine) => {
  let s: PacerStores;
  beforeAll(async () => {
    s = await createPacerStores(engine);
  });
  afterAll(async () => {
    await s.cleanup();
  });

  it("never start requests closer than the pace together, and a refusal in one holds the other", async () => {
    const key = "1001:shared";
    const [a, b] = await Promise.all([runner(s, key, 6, true), runner(s, key, 14, false)]);
    try {
      for (const { child } of [a, b]) child.stdin?.write("go\n");
      await Promise.all([finished(a.child), finished(b.child)]);
    } finally {
      for (const { child } of [a, b]) child.kill("SIGKILL");
    }
    expect(a.grants).toHaveLength(6);
    expect(b.grants).toHaveLength(14);
    // Together: every start at least 1/rate after the one before, whichever process made it.
    const starts = [...a.grants, ...b.grants].map((g) => g.acquiredAt).sort((x, y) => x - y);
    const gaps = starts.slice(1).map((t, i) => t - (starts[i] as number));
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 / RATE);
    // A's last permit was refused: B's next start waited out the hold from that refusal.
    const refusal = a.grants.at(-1) as Grant;
    expect(refusal.refused).toBe(true);
    const after = b.grants.filter((g) => g.acquiredAt > refusal.acquiredAt);
    expect(after.length).toBeGreaterThan(0);
    expect(Math.min(...after.map((g) => g.acquiredAt))).toBeGreaterThanOrEqual(refusal.releasedAt + HOLD_MS);
    // And the pace stored is the one both kept: the refusal held the key (time lost), cut nothing.
    const store = s.store();
    const status = await store.status(key, Date.now());
    await store.close();
    expect(status.rate).toBe(RATE);
    expect(status.lostMs).toBeGreaterThanOrEqual(HOLD_MS);
  });
});
