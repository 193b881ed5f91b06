// A `--once` run runs its jobs on queues of its own (src/queue/backend.ts#scratch), removed when the run ends: a
// scratch schema of BullMQ's tables on DVAULT_ENGINE=postgres (dvault_jobs_once_<random>), a scratch prefix of keys
// on Redis (<prefix>:once-<random>). A run killed outright (SIGKILL, the OOM killer, a power cut) never removed them:
// each kill left a schema of some 50 tables and indexes, or its queues' keys, with the run's jobs for good, since
// nothing else ever removed one.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisQueueBackend } from "../../src/queue/backend.ts";
import { livenessKey, SCRATCH_LIVENESS, scratchRegistryKey, sweepDeadScratchPrefixes } from "../../src/queue/redis-scratch.ts";
import { scanKeys } from "../../src/redis-scan.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { REDIS_IN_RUN } from "../helpers/needs-redis.ts";

let h: DownloadHarness;
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
  await h?.close();
});

/** The scratch schemas in the database, or the scratch prefixes that hold keys in Redis. */
async function scratches(): Promise<string[]> {
  if (TEST_ENGINE === "postgres") {
    const { rows } = await h.pool.query<{ nspname: string }>("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dvault\\_jobs\\_once\\_%' ORDER BY 1");
    return rows.map((r) => r.nspname);
  }
  const base = `${h.redis.prefix}:once-`;
  const keys = await scanKeys(h.redis.redis, `${base}*`);
  return [...new Set(keys.map((k) => k.slice(0, base.length + 12)))].sort();
}

describe(`a --once run killed outright (engine ${TEST_ENGINE})`, () => {
  it("leaves no scratch queues once the next run has ended", async () => {
    expect(await scratches()).toEqual([]);
    // Slow files, so that the run is mid-transfer when it is killed.
    h.sim.setCdn({ bytesPerSecond: 64 * 1024 });
    const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "download", "--once"], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env },
      stdio: ["ignore", "ignore", "ignore"],
    });
    children.push(child);
    await expect.poll(scratches, { timeout: 30_000, interval: 50 }).toHaveLength(1);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
    const [killed] = await scratches();
    expect(killed).toBeDefined();
    if (TEST_ENGINE === "redis") {
      // Its liveness key lapses with its TTL, no later than SCRATCH_LIVENESS.ttlMs after the kill: lapsed here at once.
      const ttl = await h.redis.redis.pttl(livenessKey(killed!));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(SCRATCH_LIVENESS.ttlMs);
      await h.redis.redis.del(livenessKey(killed!));
    }

    h.sim.setCdn({ bytesPerSecond: null });
    const again = await runDvault(h, ["download", "--once"]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(await scratches()).toEqual([]);
  }, 120_000);
});

describe.runIf(REDIS_IN_RUN && TEST_ENGINE === "redis")("the sweep of dead scratch prefixes on Redis", () => {
  it("keeps a live run's keys and every key outside the dead runs' scratch prefixes", async () => {
    const redis = h.redis.redis;
    const prefix = `${h.redis.prefix}:sweep`;
    const backend = redisQueueBackend({ redis, url: h.redis.url, prefix, liveness: { ttlMs: 60_000, everyMs: 20 } });
    const live = await backend.scratch();
    await live.queue("sync").add("live", {});
    // Its mark would lapse in a second unless the run renews it.
    await redis.pexpire(livenessKey(live.namespace), 1000);
    await expect.poll(() => redis.pttl(livenessKey(live.namespace))).toBeGreaterThan(1000);
    // A run killed outright: listed, its mark lapsed.
    const dead = [`${prefix}:once-0123456789ab:sync:1`, `${prefix}:once-0123456789ab:sync:events`];
    await redis.sadd(scratchRegistryKey(prefix), "0123456789ab");
    const outside = [`${prefix}:once-not-a-run:sync:1`, `${prefix}:oncefedcba987654:sync:1`, `${prefix}:sync:1`, `${prefix}x:once-0123456789ab:sync:1`];
    for (const key of [...dead, ...outside]) await redis.set(key, "x");
    const liveKeys = (await scanKeys(redis, `${live.namespace}:*`)).sort();
    expect(liveKeys).toContain(livenessKey(live.namespace));

    const next = await backend.scratch();
    await next.discard();
    expect(await redis.exists(...dead)).toBe(0);
    expect(await redis.exists(...outside)).toBe(outside.length);
    expect((await scanKeys(redis, `${live.namespace}:*`)).sort()).toEqual(liveKeys);
    expect(await scanKeys(redis, `${next.namespace}:*`)).toEqual([]);

    await live.discard();
    expect(await scanKeys(redis, `${live.namespace}:*`)).toEqual([]);
    // Nobody listed: nothing left to sweep.
    expect(await redis.smembers(scratchRegistryKey(prefix))).toEqual([]);
  });

  it("scans the keyspace only when a listed run died, and once for the runs of versions before the list", async () => {
    const redis = h.redis.redis;
    const prefix = `${h.redis.prefix}:sweep-scans`;
    // A run of a version before the registry, killed outright: never listed.
    const unlisted = `${prefix}:once-00000000000a:sync:1`;
    await redis.set(unlisted, "x");
    const scans = await countScans(async () => {
      expect(await sweepDeadScratchPrefixes(redis, prefix)).toBe(1);
      expect(await redis.exists(unlisted)).toBe(0);
      // Done once: later sweeps read the list alone while nobody listed died.
      await redis.set(unlisted, "x");
      expect(await sweepDeadScratchPrefixes(redis, prefix)).toBe(0);
      expect(await redis.exists(unlisted)).toBe(1);
      const backend = redisQueueBackend({ redis, url: h.redis.url, prefix });
      const run = await backend.scratch();
      await run.queue("sync").add("job", {});
      await run.discard();
    });
    expect(scans).toEqual(1);
    expect(await redis.smembers(scratchRegistryKey(prefix))).toEqual([]);
    await redis.del(unlisted);
  });
});

/** The scans of the keyspace (a SCAN from cursor 0) this process's command connection sends while `work` runs, as MONITOR sees them. */
async function countScans(work: () => Promise<void>): Promise<number> {
  const redis = h.redis.redis;
  const [, me] = /(?:^| )addr=(\S+)/.exec(await redis.client("INFO")) ?? [];
  const monitor = await redis.monitor();
  let scans = 0;
  let seenEnd: () => void = () => undefined;
  const end = new Promise<void>((resolve) => (seenEnd = resolve));
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    if (source !== me) return;
    if (args[0]?.toLowerCase() === "scan" && args[1] === "0") scans++;
    if (args[0]?.toLowerCase() === "ping" && args[1] === "scans-counted") seenEnd();
  });
  try {
    await work();
    // MONITOR's stream lags the replies: a PING through it marks the end of what came before.
    await redis.ping("scans-counted");
    await end;
  } finally {
    monitor.disconnect();
  }
  return scans;
}
