// The fault suite on its own (`npm run test:faults`): the same global setup as vitest.config.ts.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/faults/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 600_000,
    // expect.poll waits up to 15 s (vitest's default is 1 s): at load 11 a page's next fetch took over a second and
    // a poll that would have passed failed. A poll ends as soon as it passes, so only a failing one waits longer.
    expect: { poll: { timeout: 15_000 } },
    hookTimeout: 120_000,
    pool: "forks",
  },
});
