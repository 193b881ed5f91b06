// The producer is the only entrance that schedules jobs (docs/ARCHITECTURE.md#the-life-of-a-deviation): a scheduler
// gets its job's options from the definition (attempts, backoff, retention) and its interval from the definition or
// the caller; reconcileSchedules installs the wanted schedulers of a prefix and removes the others.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { refreshTokensDefinition } from "../../jobs/refresh-tokens/definition.ts";
import { Producer, schedulerIdOf } from "../../src/queue/producer.ts";
import { RETENTION } from "../../src/queue/queues.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";

let r: TestRedis;
let producer: Producer<(typeof JOB_DEFINITIONS)[number]>;

beforeAll(async () => {
  r = await createTestRedis();
  producer = new Producer([...JOB_DEFINITIONS], r.redis, r.prefix);
});

afterAll(async () => {
  await producer?.close();
  await r?.cleanup();
});

describe(Producer.name, () => {
  it("schedules a job at its definition's interval, with its definition's options", async () => {
    await producer.schedule("tokens.refresh", {});
    const scheduler = await producer.queue("maintenance").getJobScheduler(schedulerIdOf("tokens.refresh"));
    expect(scheduler).toMatchObject({ key: "maint-tokens-refresh", name: "tokens.refresh", every: refreshTokensDefinition.every });
    expect(scheduler?.template?.opts).toMatchObject({
      attempts: refreshTokensDefinition.attempts,
      backoff: { type: "exponential", delay: refreshTokensDefinition.backoffMs },
      removeOnComplete: RETENTION.removeOnComplete,
      removeOnFail: RETENTION.removeOnFail,
    });
    await producer.schedule("tokens.refresh", {}, { everyMs: 1234 });
    expect((await producer.queue("maintenance").getJobScheduler("maint-tokens-refresh"))?.every).toBe(1234);
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
    const schedulers = await producer.queue("sync").getJobSchedulers(0, -1);
    expect(schedulers.map((s) => [s.key, s.every])).toEqual([["sched-1-gallery-", 30_000]]);
    expect(schedulers[0]?.template?.opts).toMatchObject({ attempts: 5, backoff: { type: "exponential", delay: 30_000, jitter: 0.5 } });
    expect(await producer.queue("maintenance").getJobScheduler("maint-tokens-refresh")).toBeDefined();
  });
});
