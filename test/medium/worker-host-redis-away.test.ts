// A worker whose Redis is away for long (a reboot, maintenance, an hour): each of its queues' connections fails to
// reconnect about every two seconds and BullMQ raises an error for each, so the host logs one error line a minute per
// queue, the others at debug, counted in the next (src/queue/log-every-minute.ts#LOG_EVERY_MS), not thousands an hour.
import { afterEach, expect, it } from "vitest";
import { freePort } from "../../src/free-port.ts";
import { createLogger } from "../../src/log.ts";
import { redisQueueBackend } from "../../src/queue/backend.ts";
import { checkCatalogue, type JobContext } from "../../src/queue/job-definition.ts";
import { closeRedis, createRedis } from "../../src/queue/redis.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describeNeedingRedis(WorkerHost.name, () => {
  it("logs a queue's worker errors while Redis is away once a minute, the rest at debug", async () => {
    // Nothing listens here: every connection attempt is refused, as while Redis is down.
    const url = `redis://127.0.0.1:${await freePort()}`;
    const redis = createRedis(url);
    const lines: { level: number; msg: string; queue?: string }[] = [];
    const log = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
    const host = new WorkerHost<JobContext>({
      entries: checkCatalogue<JobContext>([]),
      backend: redisQueueBackend({ redis, url, prefix: "dvault-away" }),
      log,
      queues: ["maintenance"],
      makeContext: (base) => base,
    });
    host.start();
    cleanups.push(async () => {
      await host.close();
      await closeRedis(redis);
    });
    const errors = () => lines.filter((l) => l.msg === "queue worker error");
    await expect.poll(() => errors().length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(4);
    const seen = errors();
    expect(seen.map((l) => l.level)).toEqual([50, ...Array(seen.length - 1).fill(20)]);
    expect(seen.every((l) => l.queue === "maintenance")).toBe(true);
  }, 30_000);
});
