// The engine picks the coordination store (src/services.ts#openCoordination): on DVAULT_ENGINE=postgres no Redis
// connection is made at all, services.coord is the PostgreSQL driver, and a caller that still reads services.redis
// gets a line that says why, while `{ ...services }` (status, the dashboard) still works.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { createServices } from "../../src/services.ts";
import { testConfig } from "../helpers/config.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { createTestRedis } from "../helpers/redis.ts";

let db: TestDatabase;
/** A port that accepts connections and counts them: a Redis client would connect here. */
let listener: net.Server;
let connections = 0;
let redisUrl: string;

beforeAll(async () => {
  db = await createTestDatabase();
  listener = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  redisUrl = `redis://127.0.0.1:${(listener.address() as net.AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  await db.drop();
});

describe("the engine's coordination store", () => {
  it("on postgres: no Redis connection, locks in dvault_coord, and services.redis explains itself", async () => {
    const services = await createServices({
      config: testConfig({ DVAULT_ENGINE: "postgres", DATABASE_URL: db.url, REDIS_URL: redisUrl }),
      log: createLogger({ level: "silent" }),
    });
    try {
      expect(services.coord.engine).toBe("postgres");
      expect(() => services.redis).toThrow(/no Redis connection on the PostgreSQL engine/);
      const copy = { ...services };
      expect(copy.coord).toBe(services.coord);
      expect(await services.coord.putIfAbsent(`${services.config.redisPrefix}:probe`, "1")).toBe(true);
      const { rows } = await db.pool.query("SELECT key FROM dvault_coord.value");
      expect(rows).toEqual([{ key: `${services.config.redisPrefix}:probe` }]);
    } finally {
      await services.close();
    }
    expect(connections).toBe(0);
  });

  itNeedingRedis("on redis (the default): the Redis driver, under the configured prefix", async () => {
    const r = await createTestRedis({ hashTag: true });
    const services = await createServices({
      config: testConfig({ DATABASE_URL: db.url, DVAULT_REDIS_PREFIX: r.prefix, DVAULT_ENGINE: undefined }),
      log: createLogger({ level: "silent" }),
    });
    try {
      expect(services.coord.engine).toBe("redis");
      await services.coord.put(`${r.prefix}:probe`, "1");
      expect(await r.redis.get(`${r.prefix}:probe`)).toBe("1");
    } finally {
      await services.close();
      await r.cleanup();
    }
  });
});
