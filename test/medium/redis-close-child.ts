// Run by redis-check.test.ts in a process of its own: opens a connection as every command does (createRedis) to the
// Redis at argv[2], kills that server (pid argv[3]) mid-run, closes the connection as every command does at its end
// (closeRedis), and prints, as JSON, the connection's state then and how long the process took from there to exit.
import { closeRedis, createRedis } from "../../src/queue/redis.ts";

const redis = createRedis(process.argv[2] ?? "");
await redis.connect();
await redis.ping();
const gone = new Promise<void>((resolve) => redis.once("close", () => resolve()));
process.kill(Number(process.argv[3]), "SIGKILL");
await gone;
const status = redis.status;
await closeRedis(redis);
const closed = performance.now();
process.on("exit", () => process.stdout.write(`${JSON.stringify({ status, exitMs: Math.round(performance.now() - closed) })}\n`));
