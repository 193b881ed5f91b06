// The producer is the only entrance that schedules jobs (docs/ARCHITECTURE.md#the-life-of-a-deviation): a scheduler
// gets its job's options from the definition (attempts, backoff, retention) and its interval from the definition or
// the caller; reconcileSchedules installs the wanted schedulers of a prefix and removes the others; a download's
// priority comes from its definition, given the ranking its caller knows (src/queue/contract.ts#JobRankings).
import { REDIS_IN_RUN, describeNeedingRedis } from "../helpers/needs-redis.ts";
import { afterAll, beforeAll, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { refreshTokensDefinition } from "../../jobs/refresh-tokens/definition.ts";
import { downloadJobId } from "../../src/downloads/download-job.ts";
import { downloadJobPriority } from "../../src/downloads/quota.ts";
import { Producer, schedulerIdOf } from "../../src/queue/producer.ts";
import { RETENTION } from "../../src/queue/queues.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let r: TestRedis;
let producer: Producer;

// The producer on BullMQ's Redis backend: on a run without Redis, skipped.
beforeAll(async () => {
  if (!REDIS_IN_RUN) return;
  r = await createTestRedis();
  producer = new Producer([...JOB_DEFINITIONS], r.queues);
});

afterAll(async () => {
  await producer?.close();
  await r?.cleanup();
});

describeNeedingRedis(Producer.name, () => {
  it("schedules a job at its definition's interval, with its definition's options", async () => {
    await producer.schedule("tokens.refresh", {});
    const scheduler = await queueOf(producer, "maintenance").getJobScheduler(schedulerIdOf("tokens.refresh"));
    expect(scheduler).toMatchObject({ key: "maint-tokens-refresh", name: "tokens.refresh", every: refreshTokensDefinition.every });
    expect(scheduler?.template?.opts).toMatchObject({
      attempts: refreshTokensDefinition.attempts,
      backoff: { type: "exponential", delay: refreshTokensDefinition.backoffMs },
      removeOnComplete: RETENTION.removeOnComplete,
      removeOnFail: RETENTION.removeOnFail,
    });
    await producer.schedule("tokens.refresh", {}, { everyMs: 1234 });
    expect((await queueOf(producer, "maintenance").getJobScheduler("maint-tokens-refresh"))?.every).toBe(1234);
  });

  it("refuses to schedule a job whose definition has no interval unless given one", async () => {
    await expect(producer.schedule("sync.source", { accountId: 1, source: "gallery", key: "" })).rejects.toThrow(/has no interval/);
  });

  it("reconciles the schedulers of a prefix: installs the wanted ones, removes the rest, leaves other prefixes alone", async () => {
    // A scheduler under another prefix, which reconciling "sched" must leave alone.
    await producer.schedule("tokens.refresh", {});
    const payload = (source: "gallery" | "notes") => ({ accountId: 1, source, key: "" });
    await producer.reconcileSchedules(
      "sync.source",
      "sched",
      new Map([
        ["sched-1-gallery-", { repeat: { every: 60_000 }, payload: payload("gallery") }],
        ["sched-1-notes-", { repeat: { every: 60_000 }, payload: payload("notes") }],
      ]),
    );
    const summary = await producer.reconcileSchedules(
      "sync.source",
      "sched",
      new Map([["sched-1-gallery-", { repeat: { every: 30_000 }, payload: payload("gallery") }]]),
    );
    expect(summary).toEqual({ scheduled: 1, removed: 1, changed: 1 });
    const schedulers = await queueOf(producer, "sync").getJobSchedulers(0, -1);
    expect(schedulers.map((s) => [s.key, s.every])).toEqual([["sched-1-gallery-", 30_000]]);
    expect(schedulers[0]?.template?.opts).toMatchObject({ attempts: 5, backoff: { type: "exponential", delay: 30_000, jitter: 0.5 } });
    expect(await queueOf(producer, "maintenance").getJobScheduler("maint-tokens-refresh")).toBeDefined();
  });

  it("orders a download by the ranking its caller hands over, through the definition, and ensures it once per file", async () => {
    const now = new Date("2026-11-02T12:00:00Z");
    const newGallery = { deviationid: "rank-new", kind: "original" as const };
    const oldCollection = { deviationid: "rank-old", kind: "text" as const };
    const ranked = { rank: 1, publishedAt: new Date("2026-11-02T10:00:00Z"), now };
    expect(await producer.ensure("download.file", newGallery, { promote: true, ranking: ranked })).toBe("added");
    expect(await producer.ensure("download.file", oldCollection, { promote: true, ranking: { rank: 2, publishedAt: null, now } })).toBe("added");
    const downloads = queueOf(producer, "downloads");
    const first = await downloads.getJob(downloadJobId(newGallery));
    const second = await downloads.getJob(downloadJobId(oldCollection));
    expect(first?.opts.priority).toBe(downloadJobPriority(1, ranked.publishedAt, now));
    expect(second?.opts.priority).toBe(downloadJobPriority(2, null, now));
    expect(first!.opts.priority!).toBeLessThan(second!.opts.priority!);
    // Pending: left as it is. A job added without a ranking has no priority (the private queue of download --once).
    expect(await producer.ensure("download.file", newGallery, { promote: true, ranking: ranked })).toBe("pending");
    await downloads.remove(downloadJobId(newGallery));
    await producer.enqueue("download.file", newGallery);
    expect((await downloads.getJob(downloadJobId(newGallery)))?.opts.priority).toBeUndefined();
    // Parked until its quota window: promoted only when the table says the window has come.
    await downloads.remove(downloadJobId(newGallery));
    await producer.enqueue("download.file", newGallery, { delayMs: 60_000 });
    expect(await producer.ensure("download.file", newGallery, { promote: false })).toBe("pending");
    expect(await downloads.getJobState(downloadJobId(newGallery))).toBe("delayed");
    expect(await producer.ensure("download.file", newGallery, { promote: true })).toBe("promoted");
    expect(await downloads.getJobState(downloadJobId(newGallery))).not.toBe("delayed");
    await downloads.obliterate({ force: true });
  });
});
