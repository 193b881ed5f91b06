// Redis Cluster readiness (docs/ARCHITECTURE.md#redis-keys): every key one Lua script, MULTI or multi-key
// command touches must lie in one slot, or the cluster refuses it (CROSSSLOT). A whole worker pass (sync and
// downloads against the simulator, BullMQ's scripts, the pacer's scripts, the locks, the holder lease, the
// heartbeat) runs on the normal Redis under a hash-tagged prefix while MONITOR records every command; the
// keys of each atomic operation are then given to a real 3-node cluster's CLUSTER KEYSLOT.
import { spawn } from "node:child_process";
import readline from "node:readline";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { settleRedisPrefix } from "../../src/queue/redis-prefix.ts";
import { scanKeys } from "../../src/redis-scan.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { testConfig } from "../helpers/config.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { doneOriginals, startHarnessWorker } from "../helpers/harness-worker.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { startRedisCluster, startRedisServer, type RedisCluster, type RedisServer } from "../helpers/redis-cluster.ts";

/** One atomic operation as MONITOR shows it: a script with the commands it ran, a MULTI block, or one command. */
type Operation = { commands: string[][] };

/** A MONITOR line's arguments: double-quoted, with \" \\ \n \r \t and \xHH escaped (sds's repr). */
function monitorArgs(text: string): string[] {
  const args: string[] = [];
  const token = /"((?:[^"\\]|\\.)*)"/g;
  const escapes: Record<string, string> = { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" };
  for (const m of text.matchAll(token)) {
    args.push(
      (m[1] ?? "").replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_, e: string) =>
        e.length === 3 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : (escapes[e] ?? e),
      ),
    );
  }
  return args;
}

/**
 * Records every command the server runs (redis-cli monitor: ioredis's own monitor mode loses lines that
 * arrive with the MONITOR command's reply) and groups them into atomic operations. Redis 7 logs EVAL/EVALSHA
 * before the commands its script runs (source "lua", nothing else runs meanwhile), and a MULTI's queued
 * commands when EXEC runs them, under the client's address, between its MULTI and EXEC lines.
 */
async function recordOperations(url: string): Promise<{ stop(): Promise<Operation[]> }> {
  const operations: Operation[] = [];
  const open = new Map<string, Operation>();
  let script: Operation | undefined;
  const onCommand = (args: string[], source: string) => {
    const name = (args[0] ?? "").toLowerCase();
    if (source === "lua") return void script?.commands.push(args);
    const block = open.get(source);
    if (name === "multi") return void open.set(source, { commands: [] });
    if (name === "exec" || name === "discard") {
      open.delete(source);
      if (block && name === "exec") operations.push(block);
      return;
    }
    const isScript = name === "eval" || name === "evalsha" || name.startsWith("fcall");
    if (block) {
      // A script run by EXEC: what it touches belongs to the MULTI block, which is atomic as a whole.
      block.commands.push(args);
      script = isScript ? block : undefined;
      return;
    }
    const op = { commands: [args] };
    script = isScript ? op : undefined;
    operations.push(op);
  };
  const child = spawn("redis-cli", ["-u", url, "monitor"], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: child.stdout });
  const started = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`redis-cli monitor ended (${code})`)));
    lines.on("line", (line) => {
      if (line === "OK") return resolve();
      const m = /^\S+ \[\d+ ([^\]]+)\] (.*)$/.exec(line);
      if (m) onCommand(monitorArgs(m[2] ?? ""), m[1] ?? "");
    });
  });
  await started;
  return {
    async stop() {
      // Everything before this marker has been read once the marker itself comes back.
      const marker = `monitor-end-${process.pid}-${Date.now()}`;
      const seen = new Promise<void>((resolve) => lines.on("line", (line) => line.includes(marker) && resolve()));
      await h.redis.redis.echo(marker);
      await seen;
      child.kill();
      return operations;
    },
  };
}

/** The keys of each command, as Redis itself reads them (COMMAND GETKEYS; none for a command without keys). */
async function keysOf(redis: Redis, commands: string[][]): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (const args of commands) pipeline.call("COMMAND", "GETKEYS", ...args);
  const replies = (await pipeline.exec()) ?? [];
  return [...new Set(replies.flatMap(([err, keys]) => (err ? [] : (keys as string[]))))];
}

const POLL = { timeout: 60_000, interval: 50 };
let cluster: RedisCluster;
let h: DownloadHarness;

beforeAll(async () => {
  cluster = await startRedisCluster();
  h = await createDownloadHarness({
    hashTaggedPrefix: true,
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 1, favourites: 2, trackedUsers: 1 } },
    sources: [gallerySource],
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await cluster?.stop();
});

/** A worker with every role syncs the account and archives every original, and status reads it all, while MONITOR records. */
async function recordWorkerPass(): Promise<{ keys: string[] }[]> {
  const recording = await recordOperations(TEST_REDIS_URL);
  let recorded: Operation[] = [];
  const worker = await startHarnessWorker(h, { DVAULT_WORKER_ROLES: "sync,downloads,digest,maintenance,http", DVAULT_HTTP_PORT: "0" });
  try {
    await expect.poll(() => doneOriginals(h), POLL).toBe(downloadableOwnerDeviations(h.sim.truth).length);
    const queues = new QueueAdmin(h.redis.queues);
    await collectStatus({ ...worker.services, queues });
    await queues.close();
  } finally {
    await worker.stop("pass done");
    recorded = await recording.stop();
  }
  const ours = recorded.filter((op) => op.commands.some((args) => args.some((a) => a.includes(h.redis.prefix))));
  return Promise.all(ours.map(async (op) => ({ keys: await keysOf(h.redis.redis, op.commands) })));
}

/** The slots of each operation's keys; `rename` changes a key first (the control without the hash tag). */
async function slotsOf(ops: { keys: string[] }[], rename: (key: string) => string = (k) => k) {
  return Promise.all(ops.map(async (op) => ({ keys: op.keys, slots: [...new Set(await Promise.all(op.keys.map((k) => cluster.keySlot(rename(k)))))] })));
}

describeNeedingRedis("Redis keys under a hash-tagged prefix", () => {
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

describeNeedingRedis("a worker on Redis Cluster", () => {
  it("syncs and archives every original through the cluster client (REDIS_URL=redis+cluster://)", async () => {
    const h2 = await createDownloadHarness({
      hashTaggedPrefix: true,
      sim: { dataset: { deviations: 5, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
      sources: [gallerySource],
    });
    const seed = cluster.nodes[0];
    const clusterUrl = `redis+cluster://${seed?.host}:${seed?.port}`;
    const onCluster = createRedis(clusterUrl);
    const worker = await startHarnessWorker(h2, { REDIS_URL: clusterUrl });
    try {
      const originals = downloadableOwnerDeviations(h2.sim.truth).length;
      expect(originals).toBeGreaterThan(0);
      await expect.poll(() => doneOriginals(h2), POLL).toBe(originals);
      // The queues, the pace and the lease live in the cluster, all in the prefix's slot.
      await onCluster.connect();
      const keys = await scanKeys(onCluster, `${h2.redis.prefix}:*`);
      expect(keys).toEqual(expect.arrayContaining([`${h2.redis.prefix}:holders`, `${h2.redis.prefix}:downloads:meta`]));
      expect(new Set(await Promise.all(keys.map((k) => cluster.keySlot(k)))).size).toBe(1);
      expect(await h2.redis.redis.exists(`${h2.redis.prefix}:holders`)).toBe(0);
    } finally {
      await worker.stop("test done");
      onCluster.disconnect();
      await h2.close();
    }
  }, 90_000);
});

// On a server of its own: which prefix an install without DVAULT_REDIS_PREFIX settles on depends on the whole keyspace.
describeNeedingRedis(settleRedisPrefix.name, () => {
  it("takes {dvault} on a fresh server, keeps an older install's dvault with its keys, and leaves a configured prefix alone", async () => {
    const fresh = await startRedisServer();
    const older = await startRedisServer();
    try {
      const settle = (server: RedisServer, env: Record<string, string> = {}) => settleRedisPrefix(server.redis, testConfig({ REDIS_URL: server.url, ...env }));
      expect((await settle(fresh)).redisPrefix).toBe("{dvault}");
      // Once settled it stays, even when keys of the older layout turn up later (another tool's, say).
      await fresh.redis.set("dvault:somebody-else", "1");
      expect((await settle(fresh)).redisPrefix).toBe("{dvault}");

      // An older install: its queued job and its learned API pace are under "dvault:", and stay in use.
      await older.redis.hset("dvault:downloads:42", "name", "download.file");
      await older.redis.hset("dvault:pacer:1001:abc", "learned", "1.7");
      const kept = await settle(older);
      expect(kept).toMatchObject({ redisPrefix: "dvault", redisPrefixSet: false });
      expect(await older.redis.hget("dvault:pacer:1001:abc", "learned")).toBe("1.7");
      // The marker keeps the choice after those keys are gone (a drained queue must not move the install).
      await older.redis.del("dvault:downloads:42", "dvault:pacer:1001:abc");
      expect((await settle(older)).redisPrefix).toBe("dvault");

      expect((await settle(older, { DVAULT_REDIS_PREFIX: "{home}" })).redisPrefix).toBe("{home}");
      expect(await older.redis.exists("{home}:keyspace")).toBe(0);
    } finally {
      await fresh.stop();
      await older.stop();
    }
  });
});
