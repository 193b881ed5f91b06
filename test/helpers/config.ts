// Builds a Config for tests from explicit values, never from the developer's environment.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig, type Config } from "../../src/config.ts";
import { TEST_ENGINE, TEST_REDIS_URL } from "./env.ts";

/**
 * The API pace of tests that are not about pacing: a key starts (and stays) at 1000 calls per second, as
 * fast as the simulator answers. The pace's own tests (test/medium/pacer*.test.ts) set their rates.
 */
export const TEST_PACE_ENV = { DVAULT_API_RATE_START: "1000", DVAULT_API_RATE_MAX: "1000" } as const;

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    HOME: "/nonexistent-home",
    REDIS_URL: TEST_REDIS_URL,
    DVAULT_ENGINE: TEST_ENGINE,
    LOG_LEVEL: "silent",
    ...TEST_PACE_ENV,
    // Never the project's ./archive: a test that starts a worker with wanted rows would write there.
    DVAULT_ARCHIVE_DIR: mkdtempSync(path.join(os.tmpdir(), "dvault-test-archive-")),
    ...env,
  });
}
