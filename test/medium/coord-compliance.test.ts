// The coordination seam's compliance suite (docs/ARCHITECTURE.md#the-coordination-seam): every behaviour dvault
// leans on, run against both drivers, the Redis one (src/coord/redis.ts) and the PostgreSQL one
// (src/coord/postgres.ts). Each test has a namespace of its own: a Redis key prefix, or a PostgreSQL schema of the
// file's database (its keys also under a prefix of their own). Expiry: the PostgreSQL driver takes a clock, which a
// test moves; Redis keeps its own time, so its keys get a short TTL and the test polls until Redis has let them go.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Coordinator } from "../../src/coord/coordinator.ts";
import { acquireLock, dropLock, lockHolder } from "../../src/coord/lock.ts";
import { postgresCoordinator } from "../../src/coord/postgres.ts";
import { COORD_SCHEMA_VERSION, dropCoordSchema } from "../../src/db/coord.repository.ts";
import {
  breakLockOfDeadHolder,
  forgetHolder,
  heldItemsKey,
  holdLease,
  isHolderDead,
  liveHolders,
  registeredHolders,
  thisHolder,
} from "../../src/queue/holder.ts";
import { readPausedFlag, workerHeartbeats, workersWithRoles } from "../../src/status/redis-state.ts";
import { storedDownloadsPausedProbe } from "../../src/digest/alerts.ts";
import type { DownloadsPaused } from "../../src/digest/types.ts";
import { clearDownloadsPause, downloadsPausedKey, legacyDownloadsPausedKey, settleLegacyDownloadsPause } from "../../src/coord/downloads-pause.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { REDIS_IN_RUN } from "../helpers/needs-redis.ts";
import { createTestRedis } from "../helpers/redis.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

/** Long enough that a loaded machine reads a Redis key before it goes, short enough to poll past. */
const TTL_MS = 400;

type Namespace = {
  coord: Coordinator;
  /** Where this test's keys live. */
  prefix: string;
  /** Resolves once `keys`, given TTL_MS or less, have expired. */
  outlive(keys: readonly string[]): Promise<void>;
  /** Milliseconds before the value under `key` expires; negative when it has no expiry or is gone. */
  remainingMs(key: string): Promise<number>;
  cleanup(): Promise<void>;
};

type Driver = { name: string; open(): Promise<Namespace> };

let db: TestDatabase;

const redisDriver: Driver = {
  name: "redis",
  async open() {
    const r = await createTestRedis({ hashTag: true });
    return {
      coord: r.coord,
      prefix: r.prefix,
      async outlive(keys) {
        await expect.poll(async () => (keys.length ? r.redis.exists(...keys) : 0), { timeout: 5_000, interval: 25 }).toBe(0);
      },
      async remainingMs(key) {
        const ms = await r.redis.pttl(key);
        return ms < 0 ? -1 : ms;
      },
      cleanup: () => r.cleanup(),
    };
  },
};

const postgresDriver: Driver = {
  name: "postgres",
  async open() {
    const schema = `coord_t_${randomBytes(5).toString("hex")}`;
    const clock = { now: Date.UTC(2026, 10, 29, 12) };
    const coord = await postgresCoordinator(db.pool, { schema, now: () => clock.now, sweepEveryMs: 0 });
    return {
      coord,
      prefix: `{${schema}}`,
      async outlive() {
        clock.now += TTL_MS + 1;
      },
      async remainingMs(key) {
        const { rows } = await db.pool.query(`SELECT expires_at_ms FROM ${schema}.value WHERE key = $1`, [key]);
        const at = rows[0]?.expires_at_ms;
        return at === undefined || at === null ? -1 : Number(at) - clock.now;
      },
      async cleanup() {
        await coord.close();
        await dropCoordSchema(db.pool, schema);
      },
    };
  },
};

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
});

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
});

// On a run with no Redis (test/helpers/test-servers.ts, which says so in its first line) only PostgreSQL's driver.
describe.each(REDIS_IN_RUN ? [redisDriver, postgresDriver] : [postgresDriver])("the coordination seam on $name", (driver) => {
  let ns: Namespace;
  let coord: Coordinator;
  let key: (name: string) => string;
  /** The namespace of the test running now, cleaned up after it (even when it failed). */
  let opened: Namespace | undefined;
  afterEach(async () => {
    await opened?.cleanup();
    opened = undefined;
  });
  const open = async () => {
    ns = await driver.open();
    opened = ns;
    coord = ns.coord;
    key = (name) => `${ns.prefix}:${name}`;
  };

  it("keeps values, replaces them, reads several at once and removes them, counting what was there", async () => {
    await open();
    expect(await coord.get(key("a"))).toBeUndefined();
    await coord.put(key("a"), "1");
    await coord.put(key("a"), "2");
    await coord.put(key("b"), "");
    expect(await coord.get(key("a"))).toBe("2");
    expect(await coord.get(key("b"))).toBe("");
    expect(await coord.getMany([key("b"), key("none"), key("a")])).toEqual(["", undefined, "2"]);
    expect(await coord.getMany([])).toEqual([]);
    expect(await coord.exists(key("a"))).toBe(true);
    expect(await coord.remove(key("a"), key("none"))).toBe(1);
    expect(await coord.exists(key("a"))).toBe(false);
    expect(await coord.remove(key("a"))).toBe(0);
    expect(await coord.remove()).toBe(0);
  });

  it("keeps hashes and sets, tells the kinds apart and lists keys by their start", async () => {
    await open();
    await coord.hashPut(key("h"), { x: "1", y: "2" });
    await coord.hashPut(key("h"), { y: "3" });
    await coord.hashPut(key("h"), {});
    expect(await coord.hashGetAll(key("h"))).toEqual({ x: "1", y: "3" });
    expect(await coord.hashGet(key("h"), "y")).toBe("3");
    expect(await coord.hashGet(key("h"), "z")).toBeUndefined();
    await coord.hashRemove(key("h"), ["x", "absent"]);
    expect(await coord.hashGetAll(key("h"))).toEqual({ y: "3" });
    expect(await coord.hashGetAll(key("none"))).toEqual({});

    await coord.setAdd(key("s"), ["a", "b", "a"]);
    await coord.setAdd(key("s"), []);
    await coord.setRemove(key("s"), ["b"]);
    expect((await coord.setMembers(key("s"))).sort()).toEqual(["a"]);
    expect(await coord.setMembers(key("none"))).toEqual([]);

    await coord.put(key("v"), "1");
    expect(await coord.kindOf(key("v"))).toBe("value");
    expect(await coord.kindOf(key("h"))).toBe("other");
    expect(await coord.kindOf(key("s"))).toBe("other");
    expect(await coord.kindOf(key("none"))).toBe("none");
    expect(await coord.exists(key("h"))).toBe(true);

    await coord.put(`${ns.prefix}-other:v`, "1");
    await coord.put(`${ns.prefix}:*:literal`, "1");
    expect((await coord.keysStartingWith(`${ns.prefix}:`)).sort()).toEqual([key("*:literal"), key("h"), key("s"), key("v")].sort());
    // A glob character in the prefix is taken as itself.
    expect(await coord.keysStartingWith(`${ns.prefix}:*`)).toEqual([key("*:literal")]);
    expect(await coord.remove(key("h"), key("s"), key("v"))).toBe(3);
    await coord.remove(`${ns.prefix}-other:v`, key("*:literal"));
  });

  it("applies writes together: a value with its expiry, hash fields set and removed, keys removed", async () => {
    await open();
    await coord.hashPut(key("registry"), { old: "1" });
    await coord.put(key("gone"), "1");
    await coord.writeTogether([
      { hashPut: key("registry"), fields: { me: "entry" } },
      { put: key("lease"), value: "1", ttlMs: 60_000 },
      { hashRemove: key("registry"), fields: ["old"] },
      { remove: [key("gone")] },
    ]);
    expect(await coord.hashGetAll(key("registry"))).toEqual({ me: "entry" });
    expect(await coord.get(key("lease"))).toBe("1");
    expect(await ns.remainingMs(key("lease"))).toBeGreaterThan(50_000);
    expect(await coord.exists(key("gone"))).toBe(false);
  });

  it("forgets a value once its expiry has passed, to every reader, and lets it be taken again", async () => {
    await open();
    await coord.put(key("short"), "1", { ttlMs: TTL_MS });
    await coord.put(key("kept"), "1");
    expect(await coord.get(key("short"))).toBe("1");
    expect(await ns.remainingMs(key("short"))).toBeGreaterThan(0);
    expect(await ns.remainingMs(key("kept"))).toBe(-1);
    await ns.outlive([key("short")]);
    expect(await coord.get(key("short"))).toBeUndefined();
    expect(await coord.getMany([key("short"), key("kept")])).toEqual([undefined, "1"]);
    expect(await coord.exists(key("short"))).toBe(false);
    expect(await coord.kindOf(key("short"))).toBe("none");
    expect(await coord.keysStartingWith(`${ns.prefix}:`)).toEqual([key("kept")]);
    expect(await coord.remove(key("short"))).toBe(0);
    expect(await coord.putIfAbsent(key("short"), "2")).toBe(true);
    expect(await coord.get(key("short"))).toBe("2");
    // A put without an expiry takes the expiry away.
    await coord.put(key("again"), "1", { ttlMs: TTL_MS });
    await coord.put(key("again"), "2");
    expect(await ns.remainingMs(key("again"))).toBe(-1);
  });

  it("lets exactly one of many concurrent callers set a value that is absent, or expired", async () => {
    await open();
    const race = (k: string) => Promise.all(Array.from({ length: 24 }, (_, i) => coord.putIfAbsent(k, `caller-${i}`, { ttlMs: TTL_MS })));
    const first = await race(key("flag"));
    expect(first.filter(Boolean)).toHaveLength(1);
    expect(await coord.get(key("flag"))).toBe(`caller-${first.indexOf(true)}`);
    expect(await coord.putIfAbsent(key("flag"), "late")).toBe(false);
    await ns.outlive([key("flag")]);
    const second = await race(key("flag"));
    expect(second.filter(Boolean)).toHaveLength(1);
    expect(await coord.get(key("flag"))).toBe(`caller-${second.indexOf(true)}`);
  });

  it("removes or extends a value only while it is exactly the one expected, never once it has expired", async () => {
    await open();
    await coord.put(key("lock"), "mine", { ttlMs: TTL_MS });
    expect(await coord.extendIfEquals(key("lock"), "theirs", 60_000)).toBe(false);
    expect(await coord.removeIfEquals(key("lock"), "theirs")).toBe(false);
    expect(await coord.extendIfEquals(key("lock"), "mine", 60_000)).toBe(true);
    expect(await ns.remainingMs(key("lock"))).toBeGreaterThan(50_000);
    expect(await coord.removeIfEquals(key("lock"), "mine")).toBe(true);
    expect(await coord.exists(key("lock"))).toBe(false);
    expect(await coord.removeIfEquals(key("lock"), "mine")).toBe(false);

    await coord.put(key("lapsed"), "mine", { ttlMs: TTL_MS });
    await ns.outlive([key("lapsed")]);
    expect(await coord.extendIfEquals(key("lapsed"), "mine", 60_000)).toBe(false);
    expect(await coord.removeIfEquals(key("lapsed"), "mine")).toBe(false);
    expect(await coord.get(key("lapsed"))).toBeUndefined();
  });

  it("locks: one of many takers wins, a release frees it, a holder is named, and a lock taken over is lost", async () => {
    await open();
    const k = key("lock:source");
    const takers = await Promise.all(Array.from({ length: 12 }, () => acquireLock(coord, k, 60_000)));
    const held = takers.filter((l) => l !== undefined);
    expect(held).toHaveLength(1);
    expect(await acquireLock(coord, k, 60_000)).toBeUndefined();
    expect(await held[0]!.release()).toBe(true);
    expect(await coord.exists(k)).toBe(false);

    // Renewed every second (a third of its TTL, at least a second: src/coord/lock.ts).
    const named = await acquireLock(coord, k, 3_000, { holder: "host:42:abcd" });
    expect(named).toBeDefined();
    const holder = await lockHolder(coord, k);
    expect(holder?.holder).toBe("host:42:abcd");
    expect(await dropLock(coord, k, "host:42:abcd|not-its-token")).toBe(false);
    expect(await dropLock(coord, k, holder!.token)).toBe(true);
    // Someone else took it meanwhile: the next renewal finds out, and the release leaves theirs alone.
    await coord.put(k, "someone-else", { ttlMs: 60_000 });
    await expect.poll(() => named!.lost, { timeout: 5_000, interval: 50 }).toBe(true);
    await named!.release();
    expect(await coord.get(k)).toBe("someone-else");
    expect(await lockHolder(coord, k)).toBeUndefined();
  });

  it("locks: a holder that never releases (killed) frees its lock at the expiry", async () => {
    await open();
    const k = key("lock:file");
    await coord.putIfAbsent(k, "dead-holder", { ttlMs: TTL_MS });
    expect(await acquireLock(coord, k, 60_000)).toBeUndefined();
    await ns.outlive([k]);
    const taken = await acquireLock(coord, k, 60_000);
    expect(taken).toBeDefined();
    await taken!.release();
  });

  it("leases: this process is a live holder with its roles and held items until it stops", async () => {
    await open();
    const lease = await holdLease(coord, ns.prefix, { roles: ["downloads", "sync"] });
    const me = thisHolder();
    try {
      expect(await registeredHolders(coord, ns.prefix)).toEqual([me]);
      const live = await liveHolders(coord, ns.prefix);
      expect(live).toMatchObject([{ holder: me, pid: process.pid, roles: ["downloads", "sync"] }]);
      expect(await isHolderDead(coord, ns.prefix, me)).toBe(false);
      await lease.hold(["dev-1:original", "dev-2:text"]);
      await lease.hold([]);
      await lease.drop(["dev-2:text"]);
      expect(await coord.setMembers(heldItemsKey(ns.prefix, me))).toEqual(["dev-1:original"]);

      // A holder registered elsewhere whose lease lapsed is not live, and is forgotten with its items.
      await coord.hashPut(`${ns.prefix}:holders`, { "elsewhere.invalid:7:0e0e0e0e": "{not json" });
      await coord.setAdd(heldItemsKey(ns.prefix, "elsewhere.invalid:7:0e0e0e0e"), ["x:original"]);
      expect((await liveHolders(coord, ns.prefix)).map((h) => h.holder)).toEqual([me]);
      expect(await isHolderDead(coord, ns.prefix, "elsewhere.invalid:7:0e0e0e0e")).toBe(true);
      await forgetHolder(coord, ns.prefix, "elsewhere.invalid:7:0e0e0e0e");
      expect(await registeredHolders(coord, ns.prefix)).toEqual([me]);
      expect(await coord.setMembers(heldItemsKey(ns.prefix, "elsewhere.invalid:7:0e0e0e0e"))).toEqual([]);
    } finally {
      await lease.stop();
    }
    expect(await registeredHolders(coord, ns.prefix)).toEqual([]);
    expect(await liveHolders(coord, ns.prefix)).toEqual([]);
    expect(await coord.setMembers(heldItemsKey(ns.prefix, me))).toEqual([]);
  });

  it("a lock whose holder is proven dead is broken at once; one of a live holder is left alone", async () => {
    await open();
    const lease = await holdLease(coord, ns.prefix);
    try {
      const ours = JSON.parse((await coord.hashGet(`${ns.prefix}:holders`, thisHolder())) ?? "{}") as { pidns: string };
      const host = thisHolder().split(":").slice(0, -2).join(":");
      const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
      children.push(child);
      const holder = `${host}:${child.pid}:0a0a0a0a`;
      await coord.writeTogether([
        { hashPut: `${ns.prefix}:holders`, fields: { [holder]: JSON.stringify({ pidns: ours.pidns }) } },
        { put: `${ns.prefix}:holder:${holder}`, value: "1", ttlMs: 60_000 },
      ]);
      const k = key("lock:file:dev-1");
      const lock = await acquireLock(coord, k, 60_000, { holder });
      expect(lock).toBeDefined();
      // Stand-in for the child's own lock: its renewals stop here, as they would in a killed process.
      await lock!.release({ patienceMs: 0 }).catch(() => undefined);
      await coord.put(k, `${holder}|token-of-the-child`, { ttlMs: 60_000 });
      expect(await breakLockOfDeadHolder(coord, ns.prefix, k)).toBe(false);
      expect(await acquireLock(coord, k, 60_000)).toBeUndefined();

      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
      expect(await isHolderDead(coord, ns.prefix, holder)).toBe(true);
      expect(await breakLockOfDeadHolder(coord, ns.prefix, k)).toBe(true);
      const taken = await acquireLock(coord, k, 60_000);
      expect(taken).toBeDefined();
      await taken!.release();

      // Elsewhere (another host): only the lease tells; a lock without a holder's name is never broken.
      const remote = "elsewhere.invalid:4242:0c0c0c0c";
      await coord.put(`${ns.prefix}:holder:${remote}`, "1", { ttlMs: TTL_MS });
      await coord.put(k, `${remote}|remote-token`, { ttlMs: 60_000 });
      expect(await breakLockOfDeadHolder(coord, ns.prefix, k)).toBe(false);
      await ns.outlive([`${ns.prefix}:holder:${remote}`]);
      expect(await breakLockOfDeadHolder(coord, ns.prefix, k)).toBe(true);
      await coord.put(k, "no-holder-named", { ttlMs: 60_000 });
      expect(await breakLockOfDeadHolder(coord, ns.prefix, k)).toBe(false);
    } finally {
      await lease.stop();
    }
  });

  it("lists worker heartbeats, read tolerantly, with the roles their leases name, until they expire", async () => {
    await open();
    const now = Date.UTC(2026, 10, 29, 12);
    const at = new Date(now - 5_000).toISOString();
    await coord.put(`${ns.prefix}:heartbeat:nas:4242`, JSON.stringify({ id: "nas:4242", at }), { ttlMs: 60_000 });
    await coord.put(`${ns.prefix}:heartbeat:laptop:77`, "not json", { ttlMs: TTL_MS });
    await coord.put(`${ns.prefix}-other:heartbeat:x:1`, "{}", { ttlMs: 60_000 });
    const beats = await workerHeartbeats(coord, ns.prefix, now);
    expect(beats).toEqual([
      { id: "laptop:77", host: "laptop", pid: 77, lastBeatAt: null, ageS: null, roles: [] },
      { id: "nas:4242", host: "nas", pid: 4242, lastBeatAt: at, ageS: 5, roles: [] },
    ]);

    const lease = await holdLease(coord, ns.prefix, { roles: ["maintenance"] });
    try {
      const self = thisHolder().split(":").slice(0, -1).join(":");
      await coord.put(`${ns.prefix}:heartbeat:${self}`, JSON.stringify({ id: self, at }), { ttlMs: 60_000 });
      const withRoles = await workersWithRoles(coord, ns.prefix, now);
      expect(withRoles.find((w) => w.id === self)?.roles).toEqual(["maintenance"]);
    } finally {
      await lease.stop();
    }
    await ns.outlive([`${ns.prefix}:heartbeat:laptop:77`]);
    expect((await workerHeartbeats(coord, ns.prefix, now)).map((w) => w.id)).not.toContain("laptop:77");
    await coord.remove(`${ns.prefix}-other:heartbeat:x:1`);
  });

  it("reads the downloads' pause switch tolerantly: absent, off, on with a reason, a foreign value or kind", async () => {
    await open();
    const k = downloadsPausedKey(ns.prefix);
    const read = () => readPausedFlag(coord, ns.prefix);
    expect(await read()).toEqual({ paused: false, reason: null });
    for (const off of ["", "0", "false", " NO "]) {
      await coord.put(k, off);
      expect(await read()).toEqual({ paused: false, reason: null });
    }
    await coord.put(k, JSON.stringify({ reason: "downloads paused: 1 GiB free", cause: "disk" }));
    expect(await read()).toEqual({ paused: true, reason: "downloads paused: 1 GiB free" });
    await coord.put(k, "yes please");
    expect(await read()).toEqual({ paused: true, reason: "yes please" });
    await coord.put(k, JSON.stringify({ reason: 42 }));
    expect(await read()).toEqual({ paused: true, reason: null });
    await coord.remove(k);
    await coord.hashPut(k, { reason: "written as a hash by someone else" });
    expect(await read()).toEqual({ paused: true, reason: null });
    await coord.remove(k);
  });

  it("reads the pause switch one way for status and for the digest's alerts (the same paused, reason, cause and since)", async () => {
    await open();
    const k = downloadsPausedKey(ns.prefix);
    const probe = storedDownloadsPausedProbe(coord, ns.prefix);
    const since = "2026-11-20T10:00:00.000Z";
    const values = ["0", " NO ", "", "disk nearly full", "42", JSON.stringify({ paused: false, reason: "resumed" })];
    values.push(JSON.stringify({ reason: "downloads paused: 1 GiB free", cause: "storage", since }), JSON.stringify({ reason: "old", at: since }));
    const seen: DownloadsPaused[] = [];
    for (const value of values) {
      await coord.put(k, value);
      const [flag, alert] = await Promise.all([readPausedFlag(coord, ns.prefix), probe()]);
      expect(flag, value).toEqual({ paused: alert.paused, reason: alert.reason ?? null });
      seen.push(alert);
    }
    await coord.remove(k);
    expect(seen).toEqual([
      { paused: false },
      { paused: false },
      { paused: false },
      { paused: true, reason: "disk nearly full" },
      { paused: true },
      { paused: false },
      { paused: true, reason: "downloads paused: 1 GiB free", cause: "storage", since: new Date(since) },
      { paused: true, reason: "old", since: new Date(since) },
    ]);
  });

  it("reads and clears a pause switch an older version left under BullMQ's paused-list name, and never that list", async () => {
    await open();
    const legacy = legacyDownloadsPausedKey(ns.prefix);
    await coord.put(legacy, JSON.stringify({ reason: "downloads paused: 3 GiB free" }));
    expect(await readPausedFlag(coord, ns.prefix)).toEqual({ paused: true, reason: "downloads paused: 3 GiB free" });
    expect(await clearDownloadsPause(coord, ns.prefix)).toBe(1);
    expect(await coord.kindOf(legacy)).toBe("none");
    // BullMQ's own list (or set, hash…) under that name is neither a switch nor removed.
    await coord.hashPut(legacy, { a: "b" });
    expect(await readPausedFlag(coord, ns.prefix)).toEqual({ paused: false, reason: null });
    expect(await clearDownloadsPause(coord, ns.prefix)).toBe(0);
    expect(await coord.kindOf(legacy)).toBe("other");
    await coord.remove(legacy);
  });

  it("moves an older version's pause switch to its own key, keeping it paused, the current switch winning", async () => {
    await open();
    const legacy = legacyDownloadsPausedKey(ns.prefix);
    const current = downloadsPausedKey(ns.prefix);
    await coord.put(legacy, JSON.stringify({ reason: "downloads paused: 3 GiB free" }));
    await settleLegacyDownloadsPause(coord, ns.prefix);
    expect(await coord.kindOf(legacy)).toBe("none");
    expect(await readPausedFlag(coord, ns.prefix)).toEqual({ paused: true, reason: "downloads paused: 3 GiB free" });
    await coord.put(legacy, JSON.stringify({ reason: "older" }));
    await coord.put(current, JSON.stringify({ reason: "newer" }));
    await settleLegacyDownloadsPause(coord, ns.prefix);
    expect(await coord.kindOf(legacy)).toBe("none");
    expect(await readPausedFlag(coord, ns.prefix)).toEqual({ paused: true, reason: "newer" });
    // BullMQ's own list under that name stays BullMQ's.
    await coord.hashPut(legacy, { a: "b" });
    await settleLegacyDownloadsPause(coord, ns.prefix);
    expect(await coord.kindOf(legacy)).toBe("other");
    await coord.remove(legacy);
    await coord.remove(current);
  });

  it("answers a ping", async () => {
    await open();
    await expect(coord.ping()).resolves.toBeUndefined();
    expect(coord.engine).toBe(driver.name);
  });
});

describe("the PostgreSQL driver's schema", () => {
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await dropCoordSchema(db.pool, schema);
  });

  it("is created once by concurrent starters, under the advisory lock, at the version this code knows", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    const drivers = await Promise.all(Array.from({ length: 4 }, () => postgresCoordinator(db.pool, { schema, sweepEveryMs: 0 })));
    const { rows } = await db.pool.query(`SELECT version FROM ${schema}.version`);
    expect(rows).toEqual([{ version: COORD_SCHEMA_VERSION }]);
    await drivers[0]!.put("k", "v");
    expect(await drivers[3]!.get("k")).toBe("v");
    for (const d of drivers) await d.close();
  });

  it("judges expiry by the server's clock, so hosts whose clocks disagree by a minute see the same lock", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    const right = await postgresCoordinator(db.pool, { schema, sweepEveryMs: 0 });
    const ahead = await postgresCoordinator(db.pool, { schema, sweepEveryMs: 0, hostClock: () => Date.now() + 60_000 });
    const behind = await postgresCoordinator(db.pool, { schema, sweepEveryMs: 0, hostClock: () => Date.now() - 60_000 });
    try {
      expect(await right.putIfAbsent("lock", "right", { ttlMs: 30_000 })).toBe(true);
      // By its own clock the host ahead would find the lock expired half a minute ago and take it.
      expect(await ahead.get("lock")).toBe("right");
      expect(await ahead.putIfAbsent("lock", "ahead", { ttlMs: 30_000 })).toBe(false);
      // The host behind sets a lock that, by its own clock, would last a minute and a half for everyone else.
      expect(await behind.putIfAbsent("short", "behind", { ttlMs: 1 })).toBe(true);
      await expect.poll(() => right.get("short"), { timeout: 5_000, interval: 20 }).toBeUndefined();
      expect(await right.putIfAbsent("short", "right", { ttlMs: 30_000 })).toBe(true);
    } finally {
      for (const d of [right, ahead, behind]) await d.close();
    }
  });

  it("reads the server's clock on a connection of its own: a wait for the pool does not put it ahead", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    const pool = createPgPool(db.url, 1, { connectionTimeoutMs: 20_000 });
    try {
      const coord = await postgresCoordinator(pool, { schema, sweepEveryMs: 0 });
      // The pool's one connection busy for 2 s while the sweep measures the clock again.
      await Promise.all([pool.query("SELECT pg_sleep(2)"), coord.sweep()]);
      await coord.put("probe", "x", { ttlMs: 0 });
      const { rows } = await db.pool.query(
        `SELECT expires_at_ms - (extract(epoch FROM clock_timestamp()) * 1000) AS ahead FROM ${schema}.value WHERE key = 'probe'`,
      );
      // Half the wait (1 s) when the clock was read before the connection was had.
      expect(Math.abs(Number(rows[0].ahead))).toBeLessThan(400);
      await coord.close();
    } finally {
      await pool.end();
    }
  }, 30_000);

  it("refuses a schema of a newer version, with a line that says so", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    await (await postgresCoordinator(db.pool, { schema, sweepEveryMs: 0 })).close();
    await db.pool.query(`UPDATE ${schema}.version SET version = version + 1`);
    await expect(postgresCoordinator(db.pool, { schema })).rejects.toThrow(/newer than this dvault knows/);
  });

  it("sweeps expired values away; readers never saw them after their expiry anyway", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    const clock = { now: 1_000_000 };
    const coord = await postgresCoordinator(db.pool, { schema, now: () => clock.now, sweepEveryMs: 0 });
    await coord.put("a", "1", { ttlMs: 10 });
    await coord.put("b", "1");
    clock.now += 10;
    expect(await coord.get("a")).toBeUndefined();
    expect(await coord.sweep()).toBe(1);
    const { rows } = await db.pool.query(`SELECT key FROM ${schema}.value ORDER BY key`);
    expect(rows).toEqual([{ key: "b" }]);
    await coord.close();
  });

  it("tells its listeners once a statement works again after the connection was lost", async () => {
    const schema = `coord_m_${randomBytes(5).toString("hex")}`;
    schemas.push(schema);
    // The server behind a relay this test cuts and restores, as a restart or a network cut would.
    const target = new URL(withDatabase(TEST_PG_URL, db.name));
    const relay = await startRelay(target.hostname, Number(target.port || 5432));
    const via = new URL(target.href);
    via.hostname = "127.0.0.1";
    via.port = String(relay.port);
    const pool = createPgPool(via.href, 2);
    try {
      const coord = await postgresCoordinator(pool, { schema, sweepEveryMs: 0 });
      let reconnects = 0;
      const stop = coord.onReconnect(() => reconnects++);
      await coord.ping();
      expect(reconnects).toBe(0);
      await relay.cut();
      await expect(coord.ping()).rejects.toThrow();
      expect(reconnects).toBe(0);
      await relay.restore();
      await expect
        .poll(
          async () =>
            await coord
              .ping()
              .then(() => reconnects)
              .catch(() => -1),
          { timeout: 10_000, interval: 50 },
        )
        .toBe(1);
      await coord.ping();
      expect(reconnects).toBe(1);
      stop();
      await coord.close();
    } finally {
      await pool.end().catch(() => undefined);
      await relay.close();
    }
  });
});

/** A TCP relay to PostgreSQL: cut() drops every connection and refuses new ones, restore() listens again on the same port. */
async function startRelay(host: string, port: number): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const serve = () =>
    net.createServer((client) => {
      const upstream = net.connect(port, host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("error", () => undefined);
        s.on("close", () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
  let server = serve();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const relayPort = (server.address() as net.AddressInfo).port;
  const stopServing = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    port: relayPort,
    cut: stopServing,
    async restore() {
      server = serve();
      await new Promise<void>((resolve) => server.listen(relayPort, "127.0.0.1", resolve));
    },
    close: () => stopServing().catch(() => undefined),
  };
}
