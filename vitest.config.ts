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
    reporters: ["default", "json"],
    outputFile: { json: ".vitest/results.json" },
  },
});
