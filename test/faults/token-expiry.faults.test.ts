// Access tokens that live 20 s while four runners sync the same account at once: each expiry costs
// exactly one refresh (single flight), every run succeeds, and the mirror ends exact. Then the same with
// four worker processes, which share the account's tokens only through PostgreSQL and Redis.
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SourceName } from "../../src/sync/source.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

const RUNNERS: SourceName[] = ["profile", "gallery", "notes", "messages"];
const BATCHES = 5;
/** Rounds of four processes: each process costs a Node start, so the trimmed run keeps two. */
const PROCESS_ROUNDS = process.env.DVAULT_FAULTS_KILLS ? 5 : 2;

let h: FaultHarness;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 4, accessTokenLifetimeS: 20 } });
});
afterAll(async () => {
  await h?.close();
});

const refreshes = () => h.sim.log().filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token");

describe("access tokens expiring every 20 s under 4 concurrent runners", () => {
  it("refreshes exactly once per expiry", async () => {
    // Counted from this test's start: the other test (in either order) refreshes the same account too.
    const before = refreshes().length;
    for (let batch = 1; batch <= BATCHES; batch++) {
      h.sim.clock.advance(21_000); // the current access token has expired
      const results = await Promise.all(RUNNERS.map((source) => h.runSource(source)));
      expect(results.map((r) => r.status)).toEqual(RUNNERS.map(() => "ok"));
      expect(
        refreshes()
          .slice(before)
          .map((e) => e.status),
      ).toEqual(Array.from({ length: batch }, () => 200));
    }
    // No API call was ever answered 401: every token was refreshed ahead of its expiry.
    expect(h.sim.log().filter((e) => e.status === 401)).toEqual([]);
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    await checkMirror(h);
    console.info(`token expiry: ${BATCHES} expiries x ${RUNNERS.length} runners, ${refreshes().length} refreshes in all`);
  }, 120_000);

  it("refreshes exactly once per expiry when four worker processes share the account", async () => {
    const before = refreshes().length;
    for (let round = 1; round <= PROCESS_ROUNDS; round++) {
      h.sim.clock.advance(21_000); // the current access token has expired
      const env = { ...process.env, FAULT_ENV: JSON.stringify(h.env), FAULT_NOW: String(h.sim.clock.now().getTime()), FAULT_ACCOUNT: String(h.account.id) };
      const children = RUNNERS.map((source) => startChild({ ...env, FAULT_SOURCE: source }));
      // All four connected first, then started together: they meet the expired token within milliseconds.
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.go();
      expect(await Promise.all(children.map((c) => c.status))).toEqual(RUNNERS.map(() => "ok"));
      expect(
        refreshes()
          .slice(before)
          .map((e) => e.status),
      ).toEqual(Array.from({ length: round }, () => 200));
    }
    expect(h.sim.log().filter((e) => e.status === 401)).toEqual([]);
    expect((await h.pool.query("SELECT state FROM accounts WHERE id = $1", [h.account.id])).rows[0]).toEqual({ state: "ok" });
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    await checkMirror(h);
    console.info(`token expiry: ${PROCESS_ROUNDS} expiries x ${RUNNERS.length} processes, ${refreshes().length - before} refreshes`);
  }, 300_000);
});

/** test/faults/sync-child.ts as a process: `ready` once it is connected, `go()` starts its run, `status` is what it printed last. */
function startChild(env: NodeJS.ProcessEnv): { ready: Promise<void>; go(): void; status: Promise<string> } {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/faults/sync-child.ts")], { env, stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.on("data", (c: Buffer) => {
    out += c.toString();
    if (out.startsWith("ready\n")) onReady();
  });
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const status = new Promise<string>((resolve, reject) =>
    child.once("exit", (code) => {
      onReady();
      if (code === 0) resolve(out.trim().split("\n").pop() ?? "");
      else reject(new Error(`sync child exited with ${code}: ${err.slice(-2000)}`));
    }),
  );
  return { ready, go: () => child.stdin.end("go\n"), status };
}
