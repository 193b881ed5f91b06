// A worker whose Redis is away for long (a reboot, maintenance, an hour): each of its queues' connections fails to
// reconnect about every two seconds and BullMQ raises an error for each, so the host logs one error line a minute per
// queue, the others at debug, counted in the next (src/queue/log-every-minute.ts#LOG_EVERY_MS), not thousands an hour. Any
// other worker error meanwhile is its own line.
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

type Line = { level: number; msg: string; queue?: string; err?: { message?: string } };

/** A host of the maintenance queue on a Redis that is not there (nothing listens: every connection is refused). */
async function hostWithRedisAway(prefix: string): Promise<{ host: WorkerHost<JobContext>; errors: () => Line[] }> {
  const url = `redis://127.0.0.1:${await freePort()}`;
  const redis = createRedis(url);
  const lines: Line[] = [];
  const log = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  const host = new WorkerHost<JobContext>({
    entries: checkCatalogue<JobContext>([]),
    backend: redisQueueBackend({ redis, url, prefix }),
    log,
    queues: ["maintenance"],
    makeContext: (base) => base,
  });
  host.start();
  cleanups.push(async () => {
    await host.close();
    await closeRedis(redis);
  });
  return { host, errors: () => lines.filter((l) => l.msg === "queue worker error") };
}

describeNeedingRedis(WorkerHost.name, () => {
  it("logs a queue's worker errors while Redis is away once a minute, the rest at debug", async () => {
    const { errors } = await hostWithRedisAway("dvault-away");
    await expect.poll(() => errors().length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(4);
    const seen = errors();
    expect(seen.map((l) => l.level)).toEqual([50, ...Array(seen.length - 1).fill(20)]);
    expect(seen.every((l) => l.queue === "maintenance")).toBe(true);
  }, 30_000);

  it("logs a worker error of another kind at once while the minute of Redis away holds", async () => {
    const { host, errors } = await hostWithRedisAway("dvault-away-other");
    await expect.poll(() => errors().length, { timeout: 20_000, interval: 100 }).toBeGreaterThanOrEqual(1);
    // What BullMQ raises on its worker when a job's end could not be recorded (its lock lost): once per job, and not the
    // store being away, so a person must see it whatever was said of the outage a moment ago.
    const { worker } = (host as unknown as { workers: { worker: { emit(event: "error", err: Error): boolean } }[] }).workers[0]!;
    worker.emit("error", new Error("Missing lock for job 7. moveToFinished"));
    // Raised again for the same job (BullMQ's failed move after its completed one): the same error waits its minute.
    worker.emit("error", new Error("Missing lock for job 7. moveToFinished"));
    worker.emit("error", new Error("Missing lock for job 8. moveToFinished"));
    expect(
      errors()
        .filter((l) => l.level === 50)
        .map((l) => l.err?.message),
    ).toEqual([expect.stringMatching(/ECONNREFUSED/), "Missing lock for job 7. moveToFinished", "Missing lock for job 8. moveToFinished"]);
  }, 30_000);
});
