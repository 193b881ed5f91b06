// A dvault worker in its own process, for the kill-and-resume test: the harness's configuration arrives
// in DL_ENV (JSON) and the simulated time in DL_NOW; it prints "ready" once the worker runs.
// Run as: node --import tsx test/medium/downloads-child.ts
import { createLogger } from "../../src/log.ts";
import { startWorker } from "../../src/worker.ts";
import { testConfig } from "../helpers/config.ts";

const env = JSON.parse(process.env.DL_ENV ?? "{}") as Record<string, string>;
const now = Number(process.env.DL_NOW);
const worker = await startWorker({
  config: testConfig(env),
  log: createLogger({ level: "silent" }),
  // A killed child's API permit frees itself within 1 s, as in the fault harness (production: 60 s).
  overrides: { now: () => now, pacer: { pollMs: 5, lockTtlMs: 1000 } },
  handleSignals: true,
});
process.stdout.write("ready\n");
await worker.untilStopped();
