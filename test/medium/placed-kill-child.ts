// `download --once` in its own process that kills itself with SIGKILL once a batch of originals is placed (and its
// journal written) and before the batch's rows commit (src/downloads/group-commit.ts): no handler runs and no note is
// written, as after a power loss or the OOM killer. The harness's configuration arrives in DL_ENV (JSON), the number of
// files the run stores in DL_FILES. One batch under way at a time: the first file's batch waits, before its commit,
// until every other file is written and waiting, so that they all make the second batch, which dies; its paths are
// printed first. With DL_KILL_AT=placed it dies as soon as that batch's files are placed instead, before anything
// else of the batch runs.
// Run as: node --import tsx test/medium/placed-kill-child.ts
import fs from "node:fs";
import { setDownloadTuning } from "../../src/downloads/deps.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { createLogger } from "../../src/log.ts";
import { createServices } from "../../src/services.ts";
import type { StoredFile } from "../../src/storage/archive.ts";
import { testConfig } from "../helpers/config.ts";

const env = JSON.parse(process.env.DL_ENV ?? "{}") as Record<string, string>;
const files = Number(process.env.DL_FILES);
const killAt = process.env.DL_KILL_AT === "placed" ? "placed" : "commit";
const log = createLogger({ level: "silent" });
const services = await createServices({ config: testConfig(env), log, overrides: { pacer: { pollMs: 5, lockTtlMs: 1000 } } });
let allWaiting: () => void = () => undefined;
const waiting = new Promise<void>((resolve) => {
  allWaiting = resolve;
});
let batches = 0;
const deps = setDownloadTuning(services, {
  lockTtlMs: 1000,
  storeBatch: {
    maxInFlight: 1,
    async beforeRowsCommit(placed) {
      if (++batches === 1) return waiting;
      return die(placed);
    },
  },
});
/** Prints the batch's paths and kills this process outright. */
function die(placed: readonly StoredFile[]): Promise<never> {
  fs.writeSync(1, `${JSON.stringify(placed.map((f) => f.relPath))}\n`);
  process.kill(process.pid, "SIGKILL");
  return new Promise(() => undefined);
}
const place = deps.archive.placeWritten.bind(deps.archive);
let placings = 0;
deps.archive.placeWritten = async (written) => {
  const placed = await place(written);
  if (killAt === "placed" && ++placings === 2) await die(placed.flatMap((p) => (p.status === "fulfilled" ? [p.value] : [])));
  return placed;
};
const store = deps.commits.store.bind(deps.commits);
let stored = 0;
deps.commits.store = (...args) => {
  if (++stored === files) allWaiting();
  return store(...args);
};
await runDownloadsOnce({ services, deps, log, progressEveryMs: 60_000, concurrency: files });
await services.close();
