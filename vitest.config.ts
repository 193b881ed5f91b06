// Three tiers (test/unit, test/http, test/medium); the JSON report feeds .ci/run's closing line.
import { randomInt } from "node:crypto";
import { configDefaults, defineConfig } from "vitest/config";

/** The test order's seed: DVAULT_TEST_SEED replays a run's order (test/helpers/global-setup.ts prints it), else a new one. */
function testOrderSeed(): number {
  const given = process.env.DVAULT_TEST_SEED;
  if (given === undefined || given === "") return randomInt(1, 2 ** 31);
  const seed = Number(given);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`DVAULT_TEST_SEED must be a whole number, got "${given}"`);
  return seed;
}

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Minutes long (a 1 000-deviation archive by three processes; a 200 000-work mirror under a burst; a backup of
    // 100 000 rows each way): only in `npm run test:faults` (vitest.faults.config.ts).
    exclude: [
      ...configDefaults.exclude,
      "test/faults/no-shared-fs.faults.test.ts",
      "test/faults/dashboard-load.faults.test.ts",
      "test/faults/backup-large.faults.test.ts",
    ],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    // expect.poll waits up to 15 s (vitest's default is 1 s): at load 11 a page's next fetch took over a second and
    // a poll that would have passed failed. A poll ends as soon as it passes, so only a failing one waits longer.
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 120_000,
    pool: "forks",
    // Each worker keeps its modules from one file to the next: every file still gets its own database, Redis prefix,
    // archive and ports (test/helpers), and no test mocks a module. Loading src/ and its packages (bullmq alone ~0.3 s)
    // anew for each of ~235 files cost 297 s of import time and made the full suite 1 012 s on a fresh clone; kept,
    // 19 s and 695 s (same commit and seed, one after the other on one machine).
    isolate: false,
    // Two files at a time, on any machine: vitest's default (one less than the cores) ran them one by one on the
    // 2-core CI machines, while most of a medium test's time is spent waiting on PostgreSQL, Redis, a child process
    // or a socket (979 s one at a time, 585 s two at a time, measured on a fresh clone). Each file has its own
    // database, Redis prefix, archive and ports, so two never share state.
    maxWorkers: 2,
    // The tests of each file in a new random order every run, so none leans on another's state (each builds its
    // own: README.md#tests). Files keep vitest's longest-first order, which the two-worker time above relies on;
    // each file has its own database and Redis prefix, so their order cannot matter.
    sequence: { shuffle: { files: false, tests: true }, seed: testOrderSeed() },
    reporters: ["default", "json"],
    outputFile: { json: ".vitest/results.json" },
  },
});
