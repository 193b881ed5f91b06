// Three tiers (test/unit, test/http, test/medium); the JSON report feeds .ci/run's closing line.
import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Minutes long (a 1 000-deviation archive by three processes; a 200 000-work mirror under a burst): only in
    // `npm run test:faults` (vitest.faults.config.ts).
    exclude: [...configDefaults.exclude, "test/faults/no-shared-fs.faults.test.ts", "test/faults/dashboard-load.faults.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two files at a time, on any machine: vitest's default (one less than the cores) ran them one by one on the
    // 2-core CI machines, while most of a medium test's time is spent waiting on PostgreSQL, Redis, a child process
    // or a socket (979 s one at a time, 585 s two at a time, measured on a fresh clone). Each file has its own
    // database, Redis prefix, archive and ports, so two never share state.
    maxWorkers: 2,
    reporters: ["default", "json"],
    outputFile: { json: ".vitest/results.json" },
  },
});
