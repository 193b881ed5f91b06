// `dvault engine migrate` (src/engine/move.ts) on one install (its own database and Redis prefix): Redis to
// PostgreSQL alone and back, the learned pace and the pause switch carried both ways, the schedules installed and
// the queued downloads rebuilt on the target from the downloads table, the source's queues left empty, and the
// downloads queued before the moves fetched exactly once afterwards. Refused, with both engines untouched: a live
// holder on the source (a real child process), an unreachable target, a typo'd --to.
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { knownWorkersKey } from "../../src/digest/alerts.ts";
import { freePort } from "../../src/free-port.ts";
import { linksDirtyKey } from "../../src/downloads/after-store.ts";
import { downloadsPausedKey } from "../../src/coord/downloads-pause.ts";
import { inertTextsKey } from "../../src/downloads/inert-texts.ts";
import { paidDownloadsPrefix } from "../../src/downloads/paid-downloads.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { installWork } from "../../src/engine/install-work.ts";
import { type EngineSide, moveEngine } from "../../src/engine/move.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness, downloadTraffic } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { holding, installOn, onEngine, PACE_KEY } from "../helpers/engine-install.ts";
import { startHarnessWorker } from "../helpers/harness-worker.ts";

const SOURCES = new Map([[gallerySource.name, gallerySource]]);
const POLL = { timeout: 60_000, interval: 100 };

/** What an install on Redis has kept there, besides the pace and the pause switch. */
async function keepSomething(h: DownloadHarness, side: EngineSide): Promise<void> {
  await side.coord.put(linksDirtyKey(side.prefix), "1");
  await side.coord.put(inertTextsKey(side.prefix), "0123456789ab:after:42");
  await side.coord.hashPut(knownWorkersKey(side.prefix), { "gone-host:4242": new Date().toISOString() });
  const paid = { accountId: h.account.id, at: h.sim.clock.now().toISOString(), info: { src: `${h.sim.url}/paid-file` } };
  await side.coord.put(`${paidDownloadsPrefix(side.prefix)}DEV-1`, JSON.stringify(paid), { ttlMs: 300_000 });
}

/** Everything either engine holds for the install: its Redis keys and values, and the rows of the engine's schemas. */
async function everything(h: DownloadHarness): Promise<unknown> {
  const redis = h.redis.redis;
  const keys = (await redis.keys(`${h.redis.prefix}*`)).sort();
  const redisValues = await Promise.all(
    keys.map(async (k) => {
      const type = await redis.type(k);
      if (type === "string") return [k, await redis.get(k)];
      if (type === "hash") return [k, await redis.hgetall(k)];
      return [k, type];
    }),
  );
  const tables = ["dvault_coord.value", "dvault_coord.hash_field", "dvault_coord.set_member", "dvault_pacer.pace", "dvault_jobs.job", "dvault_jobs.scheduler"];
  const rows: Record<string, unknown> = {};
  for (const table of tables) {
    const exists = await h.pool.query("SELECT to_regclass($1) AS t", [table]);
    if (exists.rows[0]?.t) rows[table] = (await h.pool.query(`SELECT * FROM ${table} ORDER BY 1, 2`)).rows;
  }
  return { redisValues, rows };
}

// Every move here is between Redis and PostgreSQL alone, from an install on Redis: on a run without Redis, skipped.
describeNeedingRedis("dvault engine migrate", () => {
  let h: DownloadHarness;
  let originals: string[];

  beforeAll(async () => {
    h = await createDownloadHarness({
      sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 20 },
      sources: [gallerySource],
      quota: 20,
      env: { DVAULT_ENGINE: "redis" },
    });
    await h.syncAll(["gallery"]);
    const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM downloads WHERE kind = 'original'");
    originals = rows.map((r) => r.deviationid);
    expect(originals.length).toBeGreaterThanOrEqual(3);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it("moves to PostgreSQL and back with the pace, the pause switch and the queued downloads, each fetched once afterwards", async () => {
    // The install as a Redis worker left it: its schedules, its downloads queued, a pace learned, downloads paused.
    await onEngine(h, "redis", async (side) => {
      await installWork({
        services: side.services,
        producer: side.queues.producer,
        sources: SOURCES,
        schedules: side.services.config.schedules,
        parts: { sync: true, downloads: true, maintenance: true },
      });
      await side.pace.restore(PACE_KEY, {
        fields: { rate: 2.5, learned: 2.5, refusedRate: 5, lastSend: Date.now(), holdMs: 1000, lostMs: 4000 },
        ttlMs: 3_600_000,
      });
      await side.coord.put(downloadsPausedKey(side.prefix), JSON.stringify({ reason: "disk nearly full", since: new Date().toISOString() }));
      await keepSomething(h, side);
    });
    const before = await holding(h, "redis");
    expect(before.kept).toMatchObject({ markers: ["1", "0123456789ab:after:42"], paid: { ":downloads:paid:DEV-1": expect.any(String) } });
    const paceKeys = await onEngine(h, "redis", (side) => side.pace.keys());
    expect(paceKeys).toContain(PACE_KEY);
    const queued = await h.pool.query("SELECT count(*)::int AS n FROM downloads WHERE status = 'queued'");
    expect(before.downloads).toBe(queued.rows[0].n);
    expect(before.downloads).toBeGreaterThanOrEqual(originals.length);
    expect(before.schedulers).toBeGreaterThan(0);

    const there = await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
    expect(there).toMatchObject({ from: "redis", to: "postgres", paceKeys, sourceEmptied: before.jobs });
    expect(there.values.paused).toBe(true);
    const onPostgres = await holding(h, "postgres");
    expect(onPostgres).toEqual({ ...before, paused: { paused: true, reason: "disk nearly full" } });
    expect(await holding(h, "redis")).toMatchObject({ jobs: 0, schedulers: 0 });

    // PostgreSQL's keys: those carried, and any the sync made there (the harness's own engine, DVAULT_TEST_ENGINE).
    const paceKeysThere = await onEngine(h, "postgres", (side) => side.pace.keys());
    expect(paceKeysThere).toEqual(expect.arrayContaining(paceKeys));
    const back = await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    expect(back).toMatchObject({ from: "postgres", to: "redis", paceKeys: paceKeysThere, targetCleared: 0 });
    expect(await holding(h, "redis")).toEqual(onPostgres);
    expect(await holding(h, "postgres")).toMatchObject({ jobs: 0, schedulers: 0 });

    // The switch lifted, a downloads worker on Redis fetches each queued original once: one paid call, one CDN fetch.
    await onEngine(h, "redis", (side) => side.coord.remove(downloadsPausedKey(side.prefix)));
    const seq = h.lastSeq();
    const worker = await startHarnessWorker(h, { DVAULT_ENGINE: "redis", DVAULT_WORKER_ROLES: "downloads" });
    try {
      const done = async () => (await h.pool.query("SELECT count(*)::int AS n FROM downloads WHERE kind = 'original' AND status = 'done'")).rows[0].n;
      await expect.poll(done, POLL).toBe(originals.length);
    } finally {
      await worker.stop("test done");
    }
    for (const id of originals) expect(downloadTraffic(h, id, seq)).toEqual(["api 200", "cdn 200"]);
  }, 120_000);
});

/** An install on Redis of three works, synced, with a learned pace. */
async function smallInstallOnRedis(): Promise<DownloadHarness> {
  const h = await createDownloadHarness({
    sim: { dataset: { deviations: 3, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
    env: { DVAULT_ENGINE: "redis" },
  });
  await h.syncAll(["gallery"]);
  await onEngine(h, "redis", (side) => side.pace.restore(PACE_KEY, { fields: { rate: 1.5, learned: 1.5 }, ttlMs: 3_600_000 }));
  return h;
}

describeNeedingRedis("dvault engine migrate refuses, leaving both engines untouched", () => {
  let h: DownloadHarness;

  beforeAll(async () => {
    h = await smallInstallOnRedis();
    await onEngine(h, "redis", (side) => enqueueDueDownloads(side.services, side.queues.producer));
    // PostgreSQL's tables made once, as by an install that ran there before.
    await onEngine(h, "postgres", async () => undefined);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it("while a worker holds a lease on the source: names its host and pid", async () => {
    const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/engine-holder-child.ts"), h.redis.url, h.redis.prefix], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await once(child.stdout!, "data");
      const was = await everything(h);
      const run = await runDvault(h, ["engine", "migrate", "--to", "postgres"]);
      expect(run.stderr.trim()).toBe(
        `dvault: ${os.hostname()}:${child.pid} (a worker or a dvault --once run) runs on the source engine (redis): stop it first, then run dvault engine migrate again`,
      );
      expect(run.code).toBe(1);
      expect(await everything(h)).toEqual(was);
    } finally {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  }, 60_000);

  it("when the target does not answer: names the engine and exits 3", async () => {
    // A port nothing listens on: taken from the kernel and closed again.
    const port = await freePort();
    const was = await everything(h);
    const env = { ...h.env, DVAULT_ENGINE: "postgres", REDIS_URL: `redis://127.0.0.1:${port}` };
    const run = await runDvault({ ...h, env }, ["engine", "migrate", "--to", "redis"]);
    expect(run.stderr).toMatch(
      /^dvault: the target engine \(redis, to move to\) cannot be used, nothing was changed: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/,
    );
    expect(run.stderr.trim().split("\n")).toHaveLength(1);
    expect(run.code).toBe(3);
    expect(await everything(h)).toEqual(was);
  }, 60_000);

  it("engine status with Redis out of reach: every engine's line, and exit 3 only when Redis is the chosen engine", async () => {
    // A port nothing listens on: taken from the kernel and closed again.
    const port = await freePort();
    const status = (engine: string, ...flags: string[]) =>
      runDvault({ ...h, env: { ...h.env, DVAULT_ENGINE: engine, REDIS_URL: `redis://127.0.0.1:${port}` } }, ["engine", "status", ...flags]);

    // The three side by side: each waits out Redis's connection attempts (about 3.5 s).
    const [onRedis, asJson, onPostgres] = await Promise.all([status("redis"), status("redis", "--json"), status("postgres")]);
    expect(onRedis.stdout).toMatch(/^engine: redis \(DVAULT_ENGINE\)\n {2}redis \(chosen\): cannot be opened: .*\n {2}postgres: \d+ jobs, /);
    expect(onRedis.code).toBe(3);
    // A script reading --json gets the same answer: the whole document, and the exit code.
    expect(asJson.code).toBe(3);
    expect(JSON.parse(asJson.stdout)).toMatchObject({
      chosen: "redis",
      engines: [
        { engine: "redis", reachable: false },
        { engine: "postgres", reachable: true },
      ],
    });
    // PostgreSQL alone: Redis out of reach is how such an install runs.
    expect(onPostgres.stdout).toMatch(/^engine: postgres \(DVAULT_ENGINE\)\n {2}redis: cannot be opened: .*\n {2}postgres \(chosen\): \d+ jobs, /);
    expect(onPostgres.code).toBe(0);
  }, 60_000);

  it("a typo'd --to: says what it expects", async () => {
    const was = await everything(h);
    const run = await runDvault(h, ["engine", "migrate", "--to", "postgress"]);
    expect(run.stderr.trim()).toBe('dvault: --to expects redis or postgres, not "postgress": nothing was changed');
    expect(run.code).toBe(1);
    expect(await everything(h)).toEqual(was);
  }, 60_000);
});

describeNeedingRedis("dvault engine migrate with no settings file to write", () => {
  it("says DVAULT_ENGINE must be set before the worker starts (a bare dvault worker would run on the old engine), counts each download it queued once, and engine status exits 1 until it is set", async () => {
    const own = await smallInstallOnRedis();
    try {
      // No --config, and no settings file where dvault looks (HOME is a folder that does not exist).
      const moved = await runDvault({ ...own, env: { ...own.env, DVAULT_ENGINE: "" } }, ["engine", "migrate", "--to", "postgres"]);
      expect(moved.code, moved.stderr).toBe(0);
      expect(moved.stdout).toContain("moved from redis to postgres:\n");
      expect(moved.stdout).not.toContain("wrote DVAULT_ENGINE");
      // The works synced and not yet handed to a queue: the move claims them and then meets them again among the queued
      // rows; the summary counts each job once, as many as the new engine holds.
      const queued = (await own.pool.query("SELECT count(*)::int AS n FROM downloads WHERE status = 'queued'")).rows[0].n;
      expect(queued).toBeGreaterThan(0);
      expect((await holding(own, "postgres")).downloads).toBe(queued);
      expect(moved.stdout).toContain(`, ${queued} downloads queued from the downloads table\n`);
      expect(moved.stdout.trimEnd().split("\n").at(-1)).toBe(
        "next: once DVAULT_ENGINE=postgres is set, start the worker (dvault worker); it runs on the new engine",
      );
      // Until it is set, the settings still choose Redis, where a worker is refused: engine status says so, exit 1.
      const status = await runDvault({ ...own, env: { ...own.env, DVAULT_ENGINE: "" } }, ["engine", "status"]);
      expect(status.stdout).toMatch(
        /^engine: redis \(DVAULT_ENGINE\)\n {2}redis \(chosen\): .*the install was moved to postgres .*: a worker set to redis is refused\n/,
      );
      expect(status.code).toBe(1);
    } finally {
      await own.close();
    }
  }, 120_000);
});

describeNeedingRedis("dvault engine status and migrate, as a person runs them with a settings file", () => {
  let h: DownloadHarness;
  let dir: string;
  let file: string;
  /** The settings file decides the engine: the environment's DVAULT_ENGINE empty, which counts as unset. */
  const run = (args: string[]) => runDvault({ ...h, env: { ...h.env, DVAULT_ENGINE: "" } }, ["--config", file, ...args]);

  beforeAll(async () => {
    h = await smallInstallOnRedis();
    dir = mkdtempSync(path.join(os.tmpdir(), "dvault-engine-cli-"));
    file = path.join(dir, "dvault.env");
    writeFileSync(file, "# where queues, locks and the pace live\n# DVAULT_ENGINE=redis\n", { mode: 0o600 });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  it("status names the chosen engine and what each holds; migrate moves, writes DVAULT_ENGINE into the file and says what it did", async () => {
    const before = await run(["engine", "status"]);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(
      /^engine: redis \(DVAULT_ENGINE\)\n {2}redis \(chosen\): 0 jobs, 0 schedulers, \d+ pace keys, no live worker\n {2}postgres: 0 jobs, 0 schedulers, \d+ pace keys, no live worker\n$/,
    );

    const moved = await run(["engine", "migrate", "--to", "postgres"]);
    expect(moved.stderr).toBe("");
    expect(moved.code).toBe(0);
    expect(moved.stdout).toContain("moved from redis to postgres:\n");
    expect(moved.stdout).toContain(`\nwrote DVAULT_ENGINE=postgres to ${file}\n`);
    expect(readFileSync(file, "utf8")).toBe("# where queues, locks and the pace live\nDVAULT_ENGINE=postgres\n");
    expect(moved.stdout.trimEnd().split("\n").at(-1)).toBe("next: start the worker (dvault worker); it runs on the new engine");

    const after = await run(["engine", "status"]);
    expect(after.stdout).toMatch(
      /^engine: postgres \(DVAULT_ENGINE\)\n {2}redis: 0 jobs, 0 schedulers, \d+ pace keys, no live worker; the install was moved to postgres \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\): a worker set to redis is refused\n {2}postgres \(chosen\): [1-9]\d* jobs, [1-9]\d* schedulers, [1-9]\d* pace keys, no live worker\n$/,
    );

    // Back, for a script: one JSON document on stdout, the setting written.
    const back = await run(["engine", "migrate", "--to", "redis", "--json"]);
    expect(back.code).toBe(0);
    expect(JSON.parse(back.stdout)).toMatchObject({
      from: "postgres",
      to: "redis",
      schedules: expect.any(Number),
      sourceEmptied: expect.any(Number),
      setting: { written: file, line: `wrote DVAULT_ENGINE=redis to ${file}` },
    });
    expect(readFileSync(file, "utf8")).toBe("# where queues, locks and the pace live\nDVAULT_ENGINE=redis\n");
    // The note moves with the install: gone from Redis, now on PostgreSQL, and in the JSON document too.
    const again = await run(["engine", "status", "--json"]);
    expect(JSON.parse(again.stdout).engines).toMatchObject([
      { engine: "redis", movedTo: null },
      { engine: "postgres", movedTo: { to: "redis", at: expect.any(String) } },
    ]);
  }, 120_000);
});
