// A child process's pacer store (test/helpers/pacer-holder.ts, pacer-runner.ts): on its own connection, as
// another dvault process has, to the engine and namespace the parent test names.
import type { PacerStore } from "../../src/api/pacer-store.ts";
import { redisPacerStore } from "../../src/api/pacer-redis-store.ts";
import { sqlPacerStore } from "../../src/api/pacer-sql-store.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { pacerRows } from "../../src/db/pacer-rows.ts";
import { createRedis } from "../../src/queue/redis.ts";

export async function childPacerStore(engine: string, url: string, namespace: string): Promise<PacerStore> {
  if (engine === "postgres") return sqlPacerStore(pacerRows(createPgPool(url, 2), { namespace }));
  if (engine !== "redis") throw new Error(`unknown engine ${engine}`);
  const redis = createRedis(url);
  await redis.connect();
  return redisPacerStore(redis, namespace);
}
