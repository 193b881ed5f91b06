// One worker process of bench/scale.ts: a real `startWorker` on the bench's database, Redis prefix and
// simulator, with the shared pacing budget; stops on SIGTERM. Settings come as one JSON in SCALE_WORKER.
import { createLogger } from "../src/log.ts";
import { startWorker } from "../src/worker.ts";
import { benchConfig } from "./bench-env.ts";
import { SPACING_MS } from "./archive-run.ts";

const s = JSON.parse(process.env.SCALE_WORKER ?? "{}") as {
  databaseUrl: string;
  prefix: string;
  apiBase: string;
  archiveDir: string;
  keyHex: string;
  engine: "redis" | "postgres";
};
const worker = await startWorker({
  config: benchConfig({
    databaseUrl: s.databaseUrl,
    prefix: s.prefix,
    apiBase: s.apiBase,
    archiveDir: s.archiveDir,
    extra: { DVAULT_DOWNLOAD_QUOTA: "1000000", DVAULT_ENGINE: s.engine },
  }),
  log: createLogger({ level: "silent" }),
  overrides: {
    secretKey: { key: Buffer.from(s.keyHex, "hex"), source: "env", created: false },
    pacer: { startRate: 1000 / SPACING_MS, maxRate: 1000 / SPACING_MS },
    transport: { retry: { baseDelayMs: 10 } },
  },
  handleSignals: true,
});
process.stdout.write("ready\n");
await worker.untilStopped();
process.exit(0);
