// Builds a Config for tests from explicit values, never from the developer's environment.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig, type Config } from "../../src/config.ts";
import { TEST_REDIS_URL } from "./env.ts";

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    HOME: "/nonexistent-home",
    REDIS_URL: TEST_REDIS_URL,
    LOG_LEVEL: "silent",
    // Never the project's ./archive: a test that starts a worker with wanted rows would write there.
    DVAULT_ARCHIVE_DIR: mkdtempSync(path.join(os.tmpdir(), "dvault-test-archive-")),
    ...env,
  });
}
