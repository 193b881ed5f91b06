// Three tiers (test/unit, test/http, test/medium); the JSON report feeds .ci/run's closing line.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    reporters: ["default", "json"],
    outputFile: { json: ".vitest/results.json" },
  },
});
