// A unique key prefix per test file on the shared Redis; every key under it is deleted afterwards.
import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { createRedis } from "../../src/queue/redis.ts";
import { TEST_REDIS_URL } from "./env.ts";

export type TestRedis = { url: string; prefix: string; redis: Redis; cleanup(): Promise<void> };

export async function createTestRedis(): Promise<TestRedis> {
  const prefix = `dvault-test-${randomBytes(5).toString("hex")}`;
  const redis = createRedis(TEST_REDIS_URL);
  await redis.connect();
  return {
    url: TEST_REDIS_URL,
    prefix,
    redis,
    async cleanup() {
      await deleteByPrefix(redis, prefix);
      await redis.quit();
    },
  };
}

export async function deleteByPrefix(redis: Redis, prefix: string): Promise<number> {
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    cursor = next;
    if (keys.length) deleted += await redis.del(...keys);
  } while (cursor !== "0");
  return deleted;
}
