// The fault suite on its own (`npm run test:faults`): the same global setup as vitest.config.ts.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/faults/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
