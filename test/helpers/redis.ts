// A unique key prefix per test file on the shared Redis; every key under it is deleted afterwards.
import { randomBytes } from "node:crypto";
import { assertRedisInRun, REDIS_IN_RUN } from "./needs-redis.ts";
import type { Redis } from "ioredis";
import type { Coordinator } from "../../src/coord/coordinator.ts";
import { redisCoordinator } from "../../src/coord/redis.ts";
import { type QueueBackend, redisQueueBackend } from "../../src/queue/backend.ts";
import { createRedis, deleteKeysByPrefix } from "../../src/queue/redis.ts";
import { TEST_REDIS_URL } from "./env.ts";

/**
 * `coord`: the coordination seam's Redis driver on the same connection (src/coord/redis.ts); `queues`: the queues
 * under the prefix, on the command connection `redis`.
 */
export type TestRedis = { url: string; prefix: string; redis: Redis; coord: Coordinator; queues: QueueBackend; cleanup(): Promise<void> };

/** `hashTag`: a prefix such as {dvault-test-…}, the Redis Cluster form the default {dvault} has (src/queue/redis-prefix.ts). */
export async function createTestRedis({ hashTag = false }: { hashTag?: boolean } = {}): Promise<TestRedis> {
  const name = `dvault-test-${randomBytes(5).toString("hex")}`;
  const prefix = hashTag ? `{${name}}` : name;
  if (!REDIS_IN_RUN) return withoutRedis(prefix);
  const redis = createRedis(TEST_REDIS_URL);
  await redis.connect();
  return {
    url: TEST_REDIS_URL,
    prefix,
    redis,
    coord: redisCoordinator(redis),
    queues: redisQueueBackend({ redis, url: TEST_REDIS_URL, prefix }),
    async cleanup() {
      await deleteKeysByPrefix(redis, prefix);
      await redis.quit();
    },
  };
}

/**
 * On a run with no Redis (dvault on PostgreSQL alone, test/helpers/test-servers.ts): the prefix and URL a fixture
 * passes on, and no connection; a test that reads Redis itself is told, when it does, to go under describeNeedingRedis.
 */
function withoutRedis(prefix: string): TestRedis {
  const absent = () => {
    assertRedisInRun();
    throw new Error("unreachable");
  };
  return {
    url: TEST_REDIS_URL,
    prefix,
    get redis(): Redis {
      return absent();
    },
    get coord(): Coordinator {
      return absent();
    },
    get queues(): QueueBackend {
      return absent();
    },
    cleanup: async () => undefined,
  };
}
