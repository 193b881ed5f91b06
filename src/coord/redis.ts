// The coordination seam on Redis (src/coord/coordinator.ts): each operation is the command today's installs have
// always run, under the keys they have always used (every caller builds its key from config.redisPrefix), so an
// existing install keeps its locks, leases, heartbeats and switches. Works on a single Redis and on a Redis Cluster,
// where all of an install's keys share one slot (src/queue/redis-prefix.ts) and listing scans every master.
import type { Redis } from "ioredis";
import { globEscaped, scanKeys } from "../redis-scan.ts";
import type { Coordinator, CoordWrite, KeyKind } from "./coordinator.ts";

const REMOVE_IF_EQUALS = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;
const EXTEND_IF_EQUALS = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`;

/** `redis`: a command connection (src/queue/redis.ts#createRedis), left to its maker to close. */
export function redisCoordinator(redis: Redis): Coordinator {
  return {
    engine: "redis",
    async get(key) {
      return (await redis.get(key)) ?? undefined;
    },
    async getMany(keys) {
      if (keys.length === 0) return [];
      return (await redis.mget(...keys)).map((v) => v ?? undefined);
    },
    async put(key, value, { ttlMs } = {}) {
      if (ttlMs === undefined) await redis.set(key, value);
      else await redis.set(key, value, "PX", ttlMs);
    },
    async putIfAbsent(key, value, { ttlMs } = {}) {
      const ok = ttlMs === undefined ? await redis.set(key, value, "NX") : await redis.set(key, value, "PX", ttlMs, "NX");
      return ok === "OK";
    },
    async remove(...keys) {
      return keys.length === 0 ? 0 : redis.del(...keys);
    },
    async exists(key) {
      return (await redis.exists(key)) === 1;
    },
    async kindOf(key): Promise<KeyKind> {
      const type = await redis.type(key);
      return type === "none" ? "none" : type === "string" ? "value" : "other";
    },
    keysStartingWith: (prefix) => scanKeys(redis, `${globEscaped(prefix)}*`, 500),
    async removeIfEquals(key, expected) {
      return (await redis.eval(REMOVE_IF_EQUALS, 1, key, expected)) === 1;
    },
    async extendIfEquals(key, expected, ttlMs) {
      return (await redis.eval(EXTEND_IF_EQUALS, 1, key, expected, String(ttlMs))) === 1;
    },
    async hashPut(key, fields) {
      if (Object.keys(fields).length > 0) await redis.hset(key, fields);
    },
    async hashGet(key, field) {
      return (await redis.hget(key, field)) ?? undefined;
    },
    hashGetAll: (key) => redis.hgetall(key),
    async hashRemove(key, fields) {
      if (fields.length > 0) await redis.hdel(key, ...fields);
    },
    async setAdd(key, members) {
      if (members.length > 0) await redis.sadd(key, ...members);
    },
    async setRemove(key, members) {
      if (members.length > 0) await redis.srem(key, ...members);
    },
    setMembers: (key) => redis.smembers(key),
    async writeTogether(writes) {
      const multi = redis.multi();
      for (const w of writes) queueWrite(multi, w);
      const failed = ((await multi.exec()) ?? []).find(([err]) => err);
      if (failed?.[0]) throw failed[0];
    },
    async ping() {
      await redis.ping();
    },
    onReconnect(listener) {
      redis.on("ready", listener);
      return () => void redis.off("ready", listener);
    },
    async close() {
      // The connection is its maker's (src/services.ts closes it).
    },
  };
}

type Multi = ReturnType<Redis["multi"]>;

function queueWrite(multi: Multi, w: CoordWrite): void {
  if ("put" in w) {
    if (w.ttlMs === undefined) multi.set(w.put, w.value);
    else multi.set(w.put, w.value, "PX", w.ttlMs);
  } else if ("remove" in w) {
    if (w.remove.length > 0) multi.del(...w.remove);
  } else if ("hashPut" in w) {
    if (Object.keys(w.fields).length > 0) multi.hset(w.hashPut, w.fields);
  } else if (w.fields.length > 0) multi.hdel(w.hashRemove, ...w.fields);
}
