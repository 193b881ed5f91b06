// A throwaway 3-node Redis Cluster on loopback (redis-server --cluster-enabled yes, joined by redis-cli
// --cluster create), and a throwaway standalone Redis, no Docker: each server in its own temporary
// directory, nothing saved, all stopped after.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";

const run = promisify(execFile);

export type RedisCluster = {
  /** host:port of each master. */
  nodes: { host: string; port: number }[];
  /** A plain connection to the first node, for CLUSTER KEYSLOT and the like. */
  node: Redis;
  /** The slot Redis Cluster gives `key` (CLUSTER KEYSLOT, asked of the cluster itself). */
  keySlot(key: string): Promise<number>;
  stop(): Promise<void>;
};

/** A port free now whose cluster bus port (port + 10000) is free too. */
async function freePort(taken: ReadonlySet<number>): Promise<number> {
  for (;;) {
    const port = await listenOnce(0);
    if (
      port + 10_000 < 65_536 &&
      !taken.has(port) &&
      (await listenOnce(port + 10_000).then(
        () => true,
        () => false,
      ))
    )
      return port;
  }
}

function listenOnce(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/** Resolves once `ready()` holds, asking every 50 ms for up to `ms` (a cluster takes a moment to agree on its slots). */
async function until(what: string, ready: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts redis-server on a free port with nothing saved; the caller stops it with `child.kill()`. */
function spawnRedisServer(port: number, dir: string, extra: string[] = []): ChildProcess {
  // biome-ignore format: flag and value pairs read best one pair a line
  const args = [
    "--port", String(port),
    "--bind", "127.0.0.1",
    "--dir", dir,
    "--save", "",
    "--appendonly", "no",
    ...extra,
  ];
  return spawn("redis-server", args, { stdio: "ignore" });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", () => resolve());
    child.kill("SIGKILL");
  });
}

function connectTo(port: number): Redis {
  const client = new Redis({ host: "127.0.0.1", port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  client.on("error", () => undefined);
  return client;
}

export type RedisServer = { url: string; redis: Redis; stop(): Promise<void> };

/** A throwaway standalone Redis with an empty keyspace (for what must see no other test's keys). */
export async function startRedisServer(): Promise<RedisServer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-redis-"));
  const port = await freePort(new Set());
  const child = spawnRedisServer(port, dir);
  const redis = connectTo(port);
  const stop = async () => {
    redis.disconnect();
    await killed(child);
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    await until("the server answering", async () => (await redis.ping()) === "PONG");
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${port}`, redis, stop };
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-cluster-"));
  const children: ChildProcess[] = [];
  const clients: Redis[] = [];
  const ports: number[] = [];
  const stop = async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(children.map(killed));
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort(new Set(ports));
      ports.push(port);
      const nodeDir = path.join(dir, String(port));
      await fs.mkdir(nodeDir);
      children.push(spawnRedisServer(port, nodeDir, ["--cluster-enabled", "yes", "--cluster-config-file", path.join(nodeDir, "nodes.conf")]));
      clients.push(connectTo(port));
    }
    await until("the nodes answering", async () => (await Promise.all(clients.map((c) => c.ping()))).every((p) => p === "PONG"));
    await run("redis-cli", ["--cluster", "create", ...ports.map((p) => `127.0.0.1:${p}`), "--cluster-replicas", "0", "--cluster-yes"]);
    await until("the cluster agreeing", async () => {
      const infos = await Promise.all(clients.map((c) => c.cluster("INFO") as Promise<string>));
      return infos.every((info) => info.includes("cluster_state:ok"));
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const node = clients[0] as Redis;
  return {
    nodes: ports.map((port) => ({ host: "127.0.0.1", port })),
    node,
    keySlot: async (key) => Number(await node.cluster("KEYSLOT", key)),
    stop,
  };
}
