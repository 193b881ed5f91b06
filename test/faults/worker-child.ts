// A worker process for the SIGKILL scenario: a full sync of every source, then the downloads, against the
// harness's simulator, database, Redis prefix and archive (configuration in FAULT_ENV, full sweeps with
// FAULT_FULL=1, simulated time in
// FAULT_NOW, moved on with the simulator's when a failed download's retry is due). It prints each phase
// as it starts, so the test can say where its kills landed.
// Run as: node --import tsx test/faults/worker-child.ts
import { createLogger } from "../../src/log.ts";
import { createServices } from "../../src/services.ts";
import { setDownloadTuning } from "../../src/downloads/deps.ts";
import { testConfig } from "../helpers/config.ts";
import { advanceSimClock, downloadUntilConverged, FAST_OVERRIDES, FAULT_SOURCES, FAULT_LOCK_TTL_MS, syncUntilConverged } from "./harness.ts";

const env = JSON.parse(process.env.FAULT_ENV ?? "{}") as Record<string, string>;
// Simulated time, moved on (here and in the simulator) only when a failed download's retry is due.
let now = Number(process.env.FAULT_NOW);
const accountId = Number(process.env.FAULT_ACCOUNT);
const services = await createServices({ config: testConfig(env), log: createLogger({ level: "silent" }), overrides: { ...FAST_OVERRIDES, now: () => now } });
const deps = setDownloadTuning(services, { lockTtlMs: FAULT_LOCK_TTL_MS });
process.stdout.write("phase sync\n");
await syncUntilConverged({ services, accountId, sources: FAULT_SOURCES, full: process.env.FAULT_FULL === "1" });
process.stdout.write("phase downloads\n");
await downloadUntilConverged({ services, deps, advance: async (ms) => (now = (await advanceSimClock(services.config.apiBase, ms)).getTime()) });
process.stdout.write("phase done\n");
await services.close();
