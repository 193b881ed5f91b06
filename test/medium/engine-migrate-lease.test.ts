// `dvault engine migrate`'s own lease (src/engine/move.ts, ENGINE_MIGRATE_ROLE in src/queue/holder.ts): a worker,
// `dvault download --once` or `sync --once` started while a move is under way, on the engine the install is on or the one it moves to,
// stops with one line and exit code 1, neither engine's queues nor the downloads table touched; a move stopped by an
// error gives its leases back at once, and one killed midway (a real child process) keeps starters out only until
// its leases expire. The starters are real `dvault` processes: a move and a starter in one process are one holder.
import { type ChildProcessByStdio, spawn } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import path from "node:path";
import type { Readable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Engine } from "../../src/config.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { closeSide, type EngineSide, type MoveStep, moveEngine, openSide } from "../../src/engine/move.ts";
import { holdWorkLease, liveHolders } from "../../src/queue/holder.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { type CliRun, collectRun } from "../helpers/dvault-cli.ts";
import { holding, installOn, onEngine, PACE_KEY } from "../helpers/engine-install.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

const SOURCES = new Map([[gallerySource.name, gallerySource]]);
const BIN = path.resolve("bin/dvault.js");

/**
 * `dvault <args>` on the harness's install with DVAULT_ENGINE=`engine`; one that is not refused (a worker runs until
 * stopped) gets SIGTERM after `limitMs`, so a missing refusal fails the test instead of hanging it.
 */
function startOn(h: DownloadHarness, engine: Engine, args: readonly string[], limitMs = 30_000): Promise<CliRun> {
  const child: ChildProcessByStdio<null, Readable, Readable> = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, ...h.env, DVAULT_ENGINE: engine },
    stdio: ["ignore", "pipe", "pipe"],
    timeout: limitMs,
  });
  return collectRun(child, Date.now());
}

/** What a starter must leave as it was: each engine's queues, pace and switches, the downloads table, the service's log. */
async function untouched(h: DownloadHarness): Promise<unknown> {
  const downloads = await h.pool.query("SELECT * FROM downloads ORDER BY id");
  return { redis: await holding(h, "redis"), postgres: await holding(h, "postgres"), downloads: downloads.rows, seq: h.lastSeq() };
}

/** The line a starter prints while the move of process `host:pid` holds its leases. */
const refusal = (mover: string) =>
  `dvault: dvault engine migrate (${mover}) is moving the install between engines: nothing was started; run this again when it has finished`;

/** A process's work lease on the side, as the worker and `--once` runs take it: given back at once when granted. */
async function tryStart(side: EngineSide): Promise<string> {
  try {
    const lease = await holdWorkLease(side.coord, side.prefix);
    await lease.stop();
    return "started";
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** An install on Redis of three works, synced, their downloads queued there, with a learned pace. */
async function installWithQueuedDownloads(): Promise<DownloadHarness> {
  const h = await createDownloadHarness({
    sim: { dataset: { deviations: 3, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 20 },
    sources: [gallerySource],
    quota: 20,
    env: { DVAULT_ENGINE: "redis" },
  });
  await h.syncAll(["gallery"]);
  await onEngine(h, "redis", async (side) => {
    await side.pace.restore(PACE_KEY, { fields: { rate: 1.5, learned: 1.5 }, ttlMs: 3_600_000 });
    await enqueueDueDownloads(side.services, side.queues.producer);
  });
  // PostgreSQL's tables made once, as by an install that ran there before.
  await onEngine(h, "postgres", async () => undefined);
  return h;
}

/** The describe block's own install (installWithQueuedDownloads), closed after its tests. */
function blockInstall(): { h: DownloadHarness } {
  const box = {} as { h: DownloadHarness };
  beforeAll(async () => void (box.h = await installWithQueuedDownloads()), 120_000);
  afterAll(async () => box.h?.close());
  return box;
}

describeNeedingRedis("a worker or --once run started during dvault engine migrate", () => {
  const install = blockInstall();

  it("is refused with one line while the move is at a step, on the source and on the target, both engines untouched", async () => {
    const { h } = install;
    let reached: () => void = () => undefined;
    const atStep = new Promise<void>((resolve) => (reached = resolve));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const moving = moveEngine({
      ...installOn(h, "redis"),
      to: "postgres",
      sources: SOURCES,
      onStep: async (step: MoveStep) => {
        if (step !== "work-installed") return;
        reached();
        await held;
      },
    });
    try {
      await atStep;
      const was = await untouched(h);
      expect((await holding(h, "postgres")).downloads).toBeGreaterThan(0);
      const runs = await Promise.all([
        startOn(h, "redis", ["download", "--once"]),
        startOn(h, "redis", ["sync", "--once"]),
        startOn(h, "postgres", ["worker"]),
      ]);
      const line = refusal(`${os.hostname()}:${process.pid}`);
      expect(runs.map((r) => ({ code: r.code, stderr: r.stderr.trim() }))).toEqual(runs.map(() => ({ code: 1, stderr: line })));
      expect(await untouched(h)).toEqual(was);
    } finally {
      // Finished before the install is closed, also when a check above failed.
      release();
      await moving.catch(() => undefined);
    }
    expect(await moving).toMatchObject({ from: "redis", to: "postgres" });
    // Given back with the move's end: a starter on either engine is not refused.
    for (const engine of ["redis", "postgres"] as const) {
      expect(await onEngine(h, engine, (side) => liveHolders(side.coord, side.prefix)), engine).toEqual([]);
    }
    await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
  }, 120_000);

  it("after the move, a worker, a --once run, a hand-off to the worker or dvault jobs still set to the old engine is refused with the engine the install went to; moving back lifts it", async () => {
    const { h } = install;
    await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
    try {
      const was = await untouched(h);
      // As a process that read DVAULT_ENGINE before the switch, or whose environment still says redis: the starters,
      // and the commands that would queue work or act on the queues there (which no worker reads any more).
      const commands: Array<[string[], string]> = [
        [["download", "--once"], "nothing was started"],
        [["worker"], "nothing was started"],
        [["download"], "nothing was queued"],
        [["sync", "--only", "gallery"], "nothing was queued"],
        [["jobs", "resume", "downloads"], "nothing was read or changed"],
        [["jobs", "failed"], "nothing was read or changed"],
      ];
      const runs = await Promise.all(commands.map(([args]) => startOn(h, "redis", args)));
      for (const [i, run] of runs.entries()) {
        const [args, done] = commands[i]!;
        expect(run.code, args.join(" ")).toBe(1);
        expect(run.stdout, args.join(" ")).toBe("");
        expect(run.stderr.trim(), args.join(" ")).toMatch(
          new RegExp(
            `^dvault: this install was moved to postgres by dvault engine migrate \\(\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\), but this process was set to run on redis: ${done}; set DVAULT_ENGINE=postgres where it is set \\(the settings file or the environment\\), or run DVAULT_ENGINE=postgres dvault engine migrate --to redis to move it back$`,
          ),
        );
      }
      expect(await untouched(h)).toEqual(was);
      expect(await onEngine(h, "postgres", tryStart)).toBe("started");
    } finally {
      await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    }
    // Back on Redis: its note is gone, and the one now on PostgreSQL says where the install went.
    expect(await onEngine(h, "redis", tryStart)).toBe("started");
    expect(await onEngine(h, "postgres", tryStart)).toMatch(/^this install was moved to redis by dvault engine migrate/);
  }, 120_000);

  it("the refused starter's way back works as printed: the move back it names runs from where it was refused", async () => {
    const { h } = install;
    await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
    let back: CliRun | undefined;
    try {
      // Refused, as a starter whose environment still says redis is (the setting the person cannot or did not change).
      const refused = await startOn(h, "redis", ["download", "--once"]);
      expect(refused.code).toBe(1);
      const advice = /or run (?:DVAULT_ENGINE=(redis|postgres) )?dvault engine migrate --to (redis|postgres) to move it back$/.exec(refused.stderr.trim());
      expect(advice, refused.stderr).not.toBeNull();
      // The command as printed, in the same environment (DVAULT_ENGINE=redis) unless the line sets it.
      back = await startOn(h, (advice?.[1] as Engine | undefined) ?? "redis", ["engine", "migrate", "--to", advice?.[2] ?? ""]);
      expect({ code: back.code, stderr: back.stderr.trim() }).toEqual({ code: 0, stderr: "" });
      expect(back.stdout).toMatch(/^moved from postgres to redis:/);
    } finally {
      if (back?.code !== 0) await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    }
    expect(await onEngine(h, "redis", tryStart)).toBe("started");
  }, 120_000);

  it("a move from the engine the install left (the printed move back run twice) is refused, the live engine untouched", async () => {
    const { h } = install;
    await moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES });
    try {
      // What the operator did on the engine the install is on: a queue paused, a source run asked for.
      await onEngine(h, "postgres", (side) => side.queues.admin.pause("downloads"));
      const was = await untouched(h);
      await expect(moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES })).rejects.toThrow(
        /^this install was moved to postgres by dvault engine migrate \(.*\), but this process was set to run on redis: nothing was changed; /,
      );
      expect(await untouched(h)).toEqual(was);
      expect((await onEngine(h, "postgres", (side) => side.queues.admin.counts())).find((q) => q.name === "downloads")?.paused).toBe(true);
    } finally {
      await onEngine(h, "postgres", (side) => side.queues.admin.resume("downloads"));
      await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    }
  }, 120_000);

  it("a move whose setting switch fails leaves the note: a starter still set to the old engine is refused, not run beside the new one", async () => {
    const { h } = install;
    const moving = moveEngine({
      ...installOn(h, "redis"),
      to: "postgres",
      sources: SOURCES,
      switchSetting: () => {
        throw new Error("EACCES: permission denied, open 'dvault.env'");
      },
    });
    await expect(moving).rejects.toThrow(/EACCES/);
    try {
      // The work is on PostgreSQL (steps 1 to 5 done); the source was emptied.
      expect((await holding(h, "redis")).downloads).toBe(0);
      expect(await onEngine(h, "redis", tryStart)).toMatch(/^this install was moved to postgres by dvault engine migrate/);
    } finally {
      await moveEngine({ ...installOn(h, "postgres"), to: "redis", sources: SOURCES });
    }
    expect(await onEngine(h, "redis", tryStart)).toBe("started");
  }, 120_000);

  it("a move stopped by an error at a step gives its leases back, so nothing keeps a worker or --once run out", async () => {
    const { h } = install;
    class Crash extends Error {}
    const stop = (step: MoveStep) => {
      if (step === "pace-carried") throw new Crash("stopped after pace-carried");
    };
    await expect(moveEngine({ ...installOn(h, "redis"), to: "postgres", sources: SOURCES, onStep: stop })).rejects.toBeInstanceOf(Crash);
    // Read as another process's start reads them: this process's own lease would not keep it out.
    for (const engine of ["redis", "postgres"] as const) {
      expect(await onEngine(h, engine, (side) => liveHolders(side.coord, side.prefix)), engine).toEqual([]);
    }
  }, 60_000);
});

// Its own install: the --once run at the end downloads what the other tests need queued.
describeNeedingRedis("a worker or --once run started after dvault engine migrate was killed", () => {
  const install = blockInstall();

  it("a move killed at a step keeps starters out until its leases expire, then a --once run goes ahead", async () => {
    const { h } = install;
    const env = JSON.stringify({ ...h.env, REDIS_URL: h.redis.url, DVAULT_ENGINE: "redis" });
    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/engine-move-child.ts"), env, "postgres", "pace-carried", "6000"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    // Both engines opened before the kill, so the first look comes well inside the leases' 6 s.
    const sides = await Promise.all((["redis", "postgres"] as const).map((e) => openSide(installOn(h, e).opener, e)));
    try {
      const [said] = (await once(child.stdout, "data")) as [Buffer];
      expect(said.toString()).toBe("at pace-carried\n");
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
      const mover = `${os.hostname()}:${child.pid}`;
      for (const side of sides) expect(await tryStart(side), side.engine).toBe(refusal(mover).slice("dvault: ".length));
      // No one gives them back: they expire, 6 s after the last renewal.
      for (const side of sides) await expect.poll(() => tryStart(side), { timeout: 30_000, interval: 100 }).toBe("started");
    } finally {
      child.kill("SIGKILL");
      await Promise.all(sides.map((side) => closeSide(side)));
    }
    const run = await startOn(h, "redis", ["download", "--once"]);
    expect(run.stderr).not.toContain("dvault engine migrate");
    expect(run.code).toBe(0);
  }, 120_000);
});
