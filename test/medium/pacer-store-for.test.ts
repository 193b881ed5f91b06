// The pacer's store is the configured engine's (src/services.ts pacerStoreFor), never another: on Redis it keeps
// the keys every install so far has, so an install that upgrades starts at the rate it learned; on PostgreSQL
// alone it touches no Redis at all; and an engine without its connection is a plain error, not a fallback.
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPacer } from "../../src/api/pacer.ts";
import { pacerStoreFor } from "../../src/services.ts";
import type { TestDatabase } from "../helpers/db.ts";
import { createBothEngines } from "../helpers/pacer-stores.ts";
import type { TestRedis } from "../helpers/redis.ts";

let r: TestRedis;
let db: TestDatabase;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  ({ r, db, cleanup } = await createBothEngines());
});
afterAll(() => cleanup());

describe(pacerStoreFor.name, () => {
  itNeedingRedis("on Redis, reads the state an earlier version wrote under <prefix>:pacer:<key>: the rate learned is where the next run starts", async () => {
    // What an install's Redis holds from before the store seam: a key that learned 7 requests/s, idle since.
    await r.redis.hset(`${r.prefix}:pacer:1001:artist`, { rate: 40, learned: 7, lastSend: 1, clean: 20 });
    const pacer = createPacer({
      store: pacerStoreFor({ engine: "redis", redisPrefix: r.prefix }, { redis: r.redis, pool: db.pool }),
      startRate: 2,
      maxRate: 50,
    });
    const permit = await pacer.acquire("1001:artist", { maxWaitMs: 0 });
    expect((await pacer.status("1001:artist")).rate).toBe(7);
    await permit.release("error");
    await pacer.close();
  });

  itNeedingRedis("on PostgreSQL alone, keeps the pace in its own schema and writes nothing to Redis", async () => {
    const store = pacerStoreFor({ engine: "postgres", redisPrefix: r.prefix }, { redis: r.redis, pool: db.pool, namespace: "store-for" });
    const pacer = createPacer({ store, startRate: 3, maxRate: 50 });
    await (await pacer.acquire("1001:artist2", { maxWaitMs: 0 })).release("throttled");
    expect(await pacer.status("1001:artist2")).toMatchObject({ rate: 3, holders: 0 });
    expect(await pacer.keys()).toEqual(["1001:artist2"]);
    expect(await r.redis.exists(`${r.prefix}:pacer:1001:artist2`)).toBe(0);
    await pacer.close();
  });

  it("refuses an engine whose connection it was not given", () => {
    // Given no pool (a Redis connection or none), the PostgreSQL engine refuses.
    expect(() => pacerStoreFor({ engine: "postgres", redisPrefix: r.prefix }, {})).toThrow(/pool/);
    expect(() => pacerStoreFor({ engine: "redis", redisPrefix: r.prefix }, { pool: db.pool })).toThrow(/Redis/);
  });
});
