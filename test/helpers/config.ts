// Builds a Config for tests from explicit values, never from the developer's environment.
import { loadConfig, type Config } from "../../src/config.ts";
import { TEST_REDIS_URL } from "./env.ts";

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    HOME: "/nonexistent-home",
    REDIS_URL: TEST_REDIS_URL,
    LOG_LEVEL: "silent",
    ...env,
  });
}
