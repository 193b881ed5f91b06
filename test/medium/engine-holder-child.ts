// A process holding a lease on an engine, as a worker or `dvault download --once` does (src/queue/holder.ts), for
// test/medium/engine-migrate.test.ts: prints "ready" once its lease is written, gives it back on SIGTERM.
// Run as: node --import tsx test/medium/engine-holder-child.ts <redis url> <prefix>
import { redisCoordinator } from "../../src/coord/redis.ts";
import { holdLease } from "../../src/queue/holder.ts";
import { createRedis } from "../../src/queue/redis.ts";

const [url, prefix] = process.argv.slice(2);
if (!url || !prefix) throw new Error("usage: engine-holder-child <redis url> <prefix>");
const redis = createRedis(url);
await redis.connect();
const lease = await holdLease(redisCoordinator(redis), prefix, { roles: ["downloads"] });
process.stdout.write("ready\n");
const keepAlive = setInterval(() => undefined, 60_000);
process.on("SIGTERM", () => {
  clearInterval(keepAlive);
  void lease.stop().finally(() => redis.quit());
});
