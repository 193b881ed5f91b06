// Child process for the pacer tests: takes a permit on a key and never releases it, so the test can kill
// it (SIGKILL) and check that other processes are stalled no longer than the lock TTL.
// Usage: node --import tsx test/helpers/pacer-holder.ts <redisUrl> <prefix> <key> <lockTtlMs>
import { createPacer } from "../../src/api/pacer.ts";
import { createRedis } from "../../src/queue/redis.ts";

const [redisUrl, prefix, key, lockTtlMs] = process.argv.slice(2);
if (!redisUrl || !prefix || !key || !lockTtlMs) throw new Error("usage: pacer-holder <redisUrl> <prefix> <key> <lockTtlMs>");
const redis = createRedis(redisUrl);
await redis.connect();
const pacer = createPacer({ redis, prefix, lockTtlMs: Number(lockTtlMs) });
const permit = await pacer.acquire(key, { maxWaitMs: 10_000 });
process.stdout.write(`${JSON.stringify({ acquiredAt: permit.acquiredAt })}\n`);
// Hold the permit until killed.
setInterval(() => undefined, 60_000);
