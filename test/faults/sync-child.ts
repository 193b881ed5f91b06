// A process that runs one sync source once against the harness's simulator, database and Redis
// (configuration in FAULT_ENV, simulated time in FAULT_NOW, the source in FAULT_SOURCE) and prints the
// run's status. Several at once are separate workers sharing one account's tokens: each prints "ready"
// once connected and starts on a line on stdin, so that they meet the expired token together.
// Run as: node --import tsx test/faults/sync-child.ts
import { createLogger } from "../../src/log.ts";
import { createServices } from "../../src/services.ts";
import { runSource } from "../../src/sync/run-source.ts";
import type { SourceName } from "../../src/sync/source.ts";
import { testConfig } from "../helpers/config.ts";
import { FAST_OVERRIDES, FAULT_LOCK_TTL_MS, FAULT_SOURCES } from "./harness.ts";

const env = JSON.parse(process.env.FAULT_ENV ?? "{}") as Record<string, string>;
const now = Number(process.env.FAULT_NOW);
const services = await createServices({ config: testConfig(env), log: createLogger({ level: "silent" }), overrides: { ...FAST_OVERRIDES, now: () => now } });
process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
try {
  const result = await runSource(
    { accountId: Number(process.env.FAULT_ACCOUNT), source: process.env.FAULT_SOURCE as SourceName },
    { services, sources: FAULT_SOURCES, lockTtlMs: FAULT_LOCK_TTL_MS },
  );
  process.stdout.write(`${result.status}\n`);
} finally {
  await services.close();
}
