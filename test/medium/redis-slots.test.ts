// Redis Cluster readiness (docs/ARCHITECTURE.md#redis-keys): every key one Lua script, MULTI or multi-key
// command touches must lie in one slot, or the cluster refuses it (CROSSSLOT). A whole worker pass (sync and
// downloads against the simulator, BullMQ's scripts, the pacer's scripts, the locks, the holder lease, the
// heartbeat) runs on the normal Redis under a hash-tagged prefix while MONITOR records every command; the
// keys of each atomic operation are then given to a real 3-node cluster's CLUSTER KEYSLOT.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { startWorker } from "../../src/worker.ts";
import { testConfig } from "../helpers/config.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { startRedisCluster, type RedisCluster } from "../helpers/redis-cluster.ts";

/** One atomic operation as MONITOR shows it: a script with the commands it ran, a MULTI block, or one command. */
type Operation = { commands: string[][] };

/**
 * Groups MONITOR's lines into atomic operations. Redis 7 logs EVAL/EVALSHA before the commands its script
 * runs (source "lua", nothing else runs meanwhile), and a MULTI's queued commands when EXEC runs them,
 * under the client's address, between its MULTI and EXEC lines.
 */
function recordOperations(monitor: Redis): { operations: Operation[]; stop(): void } {
  const operations: Operation[] = [];
  const open = new Map<string, Operation>();
  let script: Operation | undefined;
  const onCommand = (_time: string, args: string[], source: string) => {
    const name = (args[0] ?? "").toLowerCase();
    if (source === "lua") return void script?.commands.push(args);
    const block = open.get(source);
    if (name === "multi") return void open.set(source, { commands: [] });
    if (name === "exec" || name === "discard") {
      open.delete(source);
      if (block && name === "exec") operations.push(block);
      return;
    }
    if (block) return void block.commands.push(args);
    const op = { commands: [args] };
    script = name === "eval" || name === "evalsha" || name.startsWith("fcall") ? op : undefined;
    operations.push(op);
  };
  monitor.on("monitor", onCommand);
  return { operations, stop: () => monitor.off("monitor", onCommand) };
}

/** The keys of each command, as Redis itself reads them (COMMAND GETKEYS; none for a command without keys). */
async function keysOf(redis: Redis, commands: string[][]): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (const args of commands) pipeline.call("COMMAND", "GETKEYS", ...args);
  const replies = (await pipeline.exec()) ?? [];
  return [...new Set(replies.flatMap(([err, keys]) => (err ? [] : (keys as string[]))))];
}

let cluster: RedisCluster;
let h: DownloadHarness;
let monitor: Redis;

beforeAll(async () => {
  cluster = await startRedisCluster();
  h = await createDownloadHarness({
    hashTaggedPrefix: true,
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 1 } },
    sources: [gallerySource],
  });
  // ioredis's monitor() opens its own connection in monitor mode; the client it came from is not needed after.
  const base = new Redis(TEST_REDIS_URL);
  monitor = await base.monitor();
  base.disconnect();
}, 120_000);

afterAll(async () => {
  monitor?.disconnect();
  await h?.close();
  await cluster?.stop();
});

/** A worker with every role syncs the account and archives every original, and status reads it all, while MONITOR records. */
async function recordWorkerPass(): Promise<{ keys: string[] }[]> {
  const recording = recordOperations(monitor);
  const worker = await startWorker({
    config: testConfig({ ...h.env, DVAULT_WORKER_ROLES: "sync,downloads,digest,maintenance,http", DVAULT_HTTP_PORT: "0" }),
    log: h.log,
    handleSignals: false,
    overrides: { now: () => h.sim.clock.now().getTime(), secretKey: { key: Buffer.from(h.keyHex, "hex"), source: "env", created: false }, pacer: { pollMs: 5 } },
  });
  try {
    const originals = downloadableOwnerDeviations(h.sim.truth).length;
    const done = async () =>
      (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE kind = 'original' AND status = 'done'")).rows[0]?.n;
    await expect.poll(done, { timeout: 60_000, interval: 50 }).toBe(originals);
    const queues = new QueueAdmin(h.redis.redis, h.redis.prefix);
    await collectStatus({ ...worker.services, queues });
    await queues.close();
  } finally {
    await worker.stop("pass done");
    recording.stop();
  }
  const ours = recording.operations.filter((op) => op.commands.some((args) => args.some((a) => a.includes(h.redis.prefix))));
  return Promise.all(ours.map(async (op) => ({ keys: await keysOf(h.redis.redis, op.commands) })));
}

/** The slots of each operation's keys; `rename` changes a key first (the control without the hash tag). */
async function slotsOf(ops: { keys: string[] }[], rename: (key: string) => string = (k) => k) {
  return Promise.all(ops.map(async (op) => ({ keys: op.keys, slots: [...new Set(await Promise.all(op.keys.map((k) => cluster.keySlot(rename(k)))))] })));
}

describe("Redis keys under a hash-tagged prefix", () => {
  it("keeps every key of each script, MULTI and multi-key command of a worker pass in one cluster slot", async () => {
    const multiKey = (await recordWorkerPass()).filter((op) => op.keys.length > 1);
    // Each key family took part: BullMQ's queues, the pacer's scripts, the holder lease and its registry.
    const family = (key: string) => key.slice(h.redis.prefix.length + 1).split(":")[0];
    const families = new Set(multiKey.flatMap((op) => op.keys.map(family)));
    expect([...families]).toEqual(expect.arrayContaining(["sync", "downloads", "maintenance", "pacer", "holders", "holder"]));
    // No operation touches a key outside the install's prefix...
    expect(multiKey.flatMap((op) => op.keys.filter((k) => !k.startsWith(h.redis.prefix)))).toEqual([]);
    // ...and each one's keys share a slot.
    const crossSlot = (await slotsOf(multiKey)).filter((op) => op.slots.length > 1);
    expect(crossSlot).toEqual([]);
    // The control: the same operations under the prefix without its braces would cross slots.
    const bare = h.redis.prefix.slice(1, -1);
    const untagged = (await slotsOf(multiKey, (k) => bare + k.slice(h.redis.prefix.length))).filter((op) => op.slots.length > 1);
    expect(untagged.length).toBeGreaterThan(0);
  }, 90_000);
});
