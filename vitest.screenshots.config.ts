// `npm run screenshots` only (scripts/screenshots.ts): the dashboard photographed into docs/img, never in CI.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/screens/**/*.shots.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
