// What every test sees of the servers the run's global setup settled (test/helpers/test-servers.ts): the run's
// PostgreSQL with the template migrated, dvault on PostgreSQL alone when the run has no Redis, and the tests about
// Redis itself skipped then. On a machine with both servers it checks the ordinary run; test/newcomer/node-alone.test.ts
// runs it on one with neither.
import { expect, it } from "vitest";
import { testConfig } from "../helpers/config.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { describeNeedingRedis, REDIS_IN_RUN } from "../helpers/needs-redis.ts";
import { createTestRedis } from "../helpers/redis.ts";

it("copies a database from the run's migrated template", async () => {
  const db = await createTestDatabase();
  try {
    const { rows } = await db.pool.query<{ n: string }>("SELECT count(*) AS n FROM _prisma_migrations WHERE finished_at IS NOT NULL");
    expect(Number(rows[0]?.n)).toBeGreaterThan(0);
  } finally {
    await db.drop();
  }
});

it("runs dvault on PostgreSQL alone when the run has no Redis", () => {
  if (!REDIS_IN_RUN) expect(TEST_ENGINE).toBe("postgres");
  expect(testConfig().engine).toBe(TEST_ENGINE);
});

describeNeedingRedis("the run's Redis", () => {
  it("answers under a prefix of the test's own", async () => {
    const redis = await createTestRedis();
    try {
      expect(await redis.redis.ping()).toBe("PONG");
    } finally {
      await redis.cleanup();
    }
  });
});
