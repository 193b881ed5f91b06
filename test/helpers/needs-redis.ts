// The tests about Redis itself (its keys, its slots, its loss): on a run with no Redis (test/helpers/test-servers.ts
// found none at the default address and chose PostgreSQL alone) they skip, and the run's first lines say why.
import { describe, it } from "vitest";
import { NO_REDIS_ENV } from "./test-servers.ts";

/** Whether this run has a Redis server. */
export const REDIS_IN_RUN = process.env[NO_REDIS_ENV] !== "1";

/** `describe` for tests that need Redis itself: skipped on a run without it. */
export const describeNeedingRedis = describe.skipIf(!REDIS_IN_RUN);

/** `it` for a test that needs Redis itself, among others that do not. */
export const itNeedingRedis = it.skipIf(!REDIS_IN_RUN);

/** Where a test opens Redis (test/helpers/redis.ts): on a run without it, one line saying what to do instead of a refused connection. */
export function assertRedisInRun(): void {
  if (!REDIS_IN_RUN) {
    throw new Error(
      `this test opens Redis, and this run has none (${NO_REDIS_ENV}=1, test/helpers/test-servers.ts): put it under describeNeedingRedis (test/helpers/needs-redis.ts)`,
    );
  }
}
