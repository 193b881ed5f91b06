// The downloads' pause switch and BullMQ's own keys under one Redis prefix: while downloads are paused for disk
// space, the producer still queues a download (its ensure asks BullMQ for the job's state). The switch used to be
// `<prefix>:downloads:paused`, BullMQ's paused-list name for the downloads queue, and that state check failed
// with WRONGTYPE (src/coord/downloads-pause.ts).
import { afterAll, beforeAll, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { downloadsPausedKey, readDownloadsPause } from "../../src/coord/downloads-pause.ts";
import { Producer } from "../../src/queue/producer.ts";
import { readPausedFlag } from "../../src/status/redis-state.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

let r: TestRedis;
let producer: Producer;

describeNeedingRedis("the downloads' pause switch beside BullMQ's keys on Redis", () => {
  beforeAll(async () => {
    r = await createTestRedis();
    producer = new Producer([...JOB_DEFINITIONS], r.queues);
  });
  afterAll(async () => {
    await producer?.close();
    await r?.cleanup();
  });

  it("lets the producer queue a download, and BullMQ's paused list is never read as the switch", async () => {
    const state = { reason: "downloads paused: disk almost full", since: new Date().toISOString(), cause: "disk" };
    await r.coord.put(downloadsPausedKey(r.prefix), JSON.stringify(state));
    const ranking = { rank: 0, publishedAt: null, now: new Date() };
    await expect(producer.ensure("download.file", { deviationid: "PAUSE-KEY-1", kind: "original" }, { promote: false, ranking })).resolves.toBe("added");
    await expect(producer.ensure("download.file", { deviationid: "PAUSE-KEY-1", kind: "original" }, { promote: false, ranking })).resolves.toBe("pending");
    expect(await readPausedFlag(r.coord, r.prefix)).toEqual({ paused: true, reason: state.reason });
    await producer.pause("downloads");
    await producer.resume("downloads");
    expect(JSON.parse((await readDownloadsPause(r.coord, r.prefix)) ?? "null")).toEqual(state);
  });
});
