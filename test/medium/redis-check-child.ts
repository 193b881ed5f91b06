// Run by redis-check.test.ts in a process of its own: checks the Redis at argv[2] and prints, as JSON, how the check
// ended and what it left holding the event loop (process.getActiveResourcesInfo, nothing else running here), its own
// stdout and stderr aside.
import { checkRedis } from "../../src/queue/redis.ts";

const ended = await checkRedis(process.argv[2] ?? "").then(
  () => "answered",
  (err: unknown) => (err instanceof Error ? err.name : String(err)),
);
process.stdout.write(`${JSON.stringify({ ended, left: process.getActiveResourcesInfo().filter((r) => r !== "PipeWrap" && r !== "TTYWrap") })}\n`);
