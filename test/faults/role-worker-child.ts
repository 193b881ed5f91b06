// One host of the no-shared-filesystem scenario (no-shared-fs.faults.test.ts): a real `startWorker` with the
// configuration in ROLE_ENV (its own DVAULT_ARCHIVE_DIR, its DVAULT_WORKER_ROLES, the store's DVAULT_STORAGE
// and DVAULT_S3_*), stopped by SIGTERM or killed by the test. With the http role it serves the dashboard on a
// free loopback port. It prints "dashboard <url>" when it serves one, then "ready".
// Run as: node --import tsx test/faults/role-worker-child.ts
import { createLogger } from "../../src/log.ts";
import { startWorker } from "../../src/worker.ts";
import { testConfig } from "../helpers/config.ts";
import { FAST_OVERRIDES } from "./harness.ts";

const env = JSON.parse(process.env.ROLE_ENV ?? "{}") as Record<string, string>;
const roles = (env.DVAULT_WORKER_ROLES ?? "").split(",");
const worker = await startWorker({
  config: testConfig(env),
  log: createLogger({ level: "silent" }),
  overrides: FAST_OVERRIDES,
  handleSignals: true,
  ...(roles.includes("http") ? { http: { host: "127.0.0.1", port: 0 } } : {}),
});
if (worker.dashboard) process.stdout.write(`dashboard ${worker.dashboard.url}\n`);
process.stdout.write("ready\n");
await worker.untilStopped();
process.exit(0);
