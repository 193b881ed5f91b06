// `dvault archive --once` (src/cli/archive.ts) as a person runs it: one process doing what `sync --once` then
// `download --once` do. It stores the same files the two commands store on the same gallery, with one summary
// and exit 0; when a source fails, the download step still runs for what did sync, the summary shows both, and
// the exit code says the run failed (the worse of the two steps'); an account that must log in again exits 4.
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { collectRun, runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE } from "../helpers/env.ts";

async function account(options: { minFreeBytes?: string } = {}): Promise<DownloadHarness> {
  // The commands use the wall clock: the simulator's week is this week.
  return createDownloadHarness({
    ...options,
    sim: {
      seed: 32,
      dataset: { deviations: 10, galleryFolders: 1, collectionFolders: 1, favourites: 3, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 500,
  });
}

const dvault = (h: DownloadHarness, args: string[]) => runDvault({ redis: h.redis, env: { ...h.env, DVAULT_RUN_ITEM_PATIENCE: "0s" } }, args);

/** What the archive holds: one line per stored file (deviation, kind, checksum). */
async function stored(h: DownloadHarness): Promise<string[]> {
  const { rows } = await h.pool.query<{ line: string }>(
    "SELECT deviationid || ' ' || kind::text || ' ' || sha256 AS line FROM downloads WHERE sha256 IS NOT NULL ORDER BY 1",
  );
  return rows.map((r) => r.line);
}

describe("dvault archive --once", () => {
  it("stores what sync --once then download --once store, in one process, and exits 0", async () => {
    const [one, two] = await Promise.all([account(), account()]);
    try {
      const archive = await dvault(one, ["archive", "--once", "--only", "gallery,collections"]);
      expect(archive.code, archive.stderr).toBe(0);
      const sync = await dvault(two, ["sync", "--once", "--only", "gallery,collections"]);
      expect(sync.code, sync.stderr).toBe(0);
      const download = await dvault(two, ["download", "--once"]);
      expect(download.code, download.stderr).toBe(0);
      const files = await stored(one);
      expect(files.length).toBeGreaterThan(5);
      expect(files).toEqual(await stored(two));
      // One summary: the sources' table, then the downloads' lines.
      expect(archive.stdout).toMatch(/^SimArtist\s+gallery\s+ok/m);
      expect(archive.stdout).toMatch(/^SimArtist\s+collections\s+ok/m);
      expect(archive.stdout).toMatch(/^left\s+nothing: every due file was handled$/m);
      const done = Number(/^done\s+(\d+)/m.exec(archive.stdout)?.[1]);
      expect(done).toBe(Number(/^done\s+(\d+)/m.exec(download.stdout)?.[1]));
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  }, 90_000);

  it("fetches beside the sync only what cannot spend the allowance; the rest once every source has listed", async () => {
    const h = await account();
    try {
      // The sync's tags and descriptions take a second to come, after its gallery page is saved: it is still running
      // while that page's files are due.
      h.sim.faults.add({ kind: "latency", latencyMs: 1000, route: "/deviation/metadata", times: 1000 });
      const free = [...h.sim.truth.deviations.values()].filter((d) => d.authorId === h.sim.truth.ownerId && d.image && d.isDownloadable === false);
      expect(free.length, "the gallery has works the artist does not offer for download").toBeGreaterThan(0);
      const run = await dvault(h, ["archive", "--once", "--only", "gallery"]);
      expect(run.code, run.stderr).toBe(0);
      const log = h.sim.log();
      const paid = log.filter((e) => e.route.includes("/deviation/download"));
      const lastSyncCall = Math.max(...log.filter((e) => e.route.startsWith("/api/") && !paid.includes(e)).map((e) => e.seq));
      expect(paid.length).toBeGreaterThan(0);
      // No call that spends the allowance before the sync's last call: they go in priority order over all it found.
      expect(paid.filter((e) => e.seq < lastSyncCall)).toEqual([]);
      // Files that spend nothing were fetched while it was still running.
      expect(log.filter((e) => e.route.startsWith("/_cdn/") && e.seq < lastSyncCall).length).toBeGreaterThan(0);
      expect(run.stdout).toMatch(/^left\s+nothing: every due file was handled$/m);
    } finally {
      await h.close();
    }
  }, 90_000);

  it("downloads what did sync when a source fails, reports both steps and exits 1", async () => {
    const h = await account();
    try {
      // The collections' folder list answers 500 through every retry, and the run's patience is none: that source fails.
      h.sim.faults.add({ kind: "status_500", route: "/collections/folders", times: 1000 });
      const run = await dvault(h, ["archive", "--once", "--only", "gallery,collections", "--json"]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toMatch(/^dvault: 1 source\(s\) failed: SimArtist\/collections/m);
      const out = JSON.parse(run.stdout) as {
        sync: Array<{ source: string; result: string }>;
        download: { done: number; failed: number };
        downloadNotRun: unknown;
      };
      expect(out.sync.map((s) => [s.source, s.result === "failed" ? "failed" : "ran"])).toEqual([
        ["gallery", "ran"],
        ["collections", "failed"],
      ]);
      // The gallery's files were downloaded in the same run, and counted in its summary.
      const files = await stored(h);
      expect(out.download.done).toBeGreaterThan(0);
      expect(files.length).toBeGreaterThanOrEqual(out.download.done);
      expect(out.download.failed).toBe(0);
      expect(out.downloadNotRun).toBeNull();
    } finally {
      await h.close();
    }
  }, 90_000);

  it("exits 4 when the account must log in again: the sync's table names it and the download step does not start", async () => {
    const h = await account();
    try {
      await h.pool.query("UPDATE accounts SET state = 'needs_reauth', state_reason = 'the service refused the refresh token' WHERE id = $1", [h.account.id]);
      const run = await dvault(h, ["archive", "--once", "--only", "gallery"]);
      expect(run.code, run.stderr).toBe(4);
      expect(run.stdout).toMatch(/^SimArtist\s+gallery\s+FAILED/m);
      expect(run.stdout).toMatch(/^download: not started$/m);
      expect(run.stderr).toMatch(/^dvault: sync: .*; download: .*dvault auth login/m);
      expect(await stored(h)).toEqual([]);
    } finally {
      await h.close();
    }
  }, 60_000);

  it("prints the sync's table when the download step fails mid-run, then the failure in one line, and exits 1", async () => {
    const h = await account();
    try {
      // The database refuses, as a full disk would, the claim that queues due rows: the download step's first write.
      // The sync step's hand-off of the rows it wanted meets it too, and logs it as a warning (the source stays ok).
      await h.pool.query(`CREATE FUNCTION refuse_claims() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`);
      await h.pool.query(
        "CREATE TRIGGER refuse_claims BEFORE UPDATE ON downloads FOR EACH ROW WHEN (NEW.status = 'queued' AND OLD.status <> 'queued') EXECUTE FUNCTION refuse_claims()",
      );
      const run = await dvault(h, ["archive", "--once", "--only", "gallery"]);
      expect(run.code, run.stderr).toBe(1);
      // What the sync did is still said: its table, then the download step's line.
      expect(run.stdout).toMatch(/^SimArtist\s+gallery\s+ok/m);
      expect(run.stdout).toMatch(/^download: stopped by an error before its summary \(the error is below\)$/m);
      const failure =
        "dvault: the download step stopped on an unexpected error: could not extend file: No space left on device (LOG_LEVEL=debug shows where); what it stored is kept: run dvault archive --once again";
      const lines = run.stderr.trimEnd().split("\n");
      expect(lines.filter((line) => line.startsWith("dvault:"))).toEqual([failure]);
      expect(lines.at(-1)).toBe(failure);
      expect(await stored(h)).toEqual([]);
      const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'wanted'");
      expect(rows[0]?.n).toBeGreaterThan(5);
      // --json tells a failed step from one never started, as the exit code does.
      const asJson = await dvault(h, ["archive", "--once", "--only", "gallery", "--json"]);
      expect(asJson.code, asJson.stderr).toBe(1);
      const printed = JSON.parse(asJson.stdout) as { download: unknown; downloadNotRun: unknown };
      expect(printed.download).toBeNull();
      expect(printed.downloadNotRun).toEqual({ why: "failed", message: failure.slice("dvault: ".length) });
    } finally {
      await h.close();
    }
  }, 60_000);

  it("paused by the disk guard while the sources still list: what is left counts every file the sync found, exit 2", async () => {
    // No disk has this much free: the download step pauses at its first file, beside the gallery's listing.
    const h = await account({ minFreeBytes: "1000TB" });
    try {
      // The collections list after the download step has paused.
      h.sim.faults.add({ kind: "latency", latencyMs: 1500, route: "/collections/folders", times: 1000 });
      const run = await dvault(h, ["archive", "--once", "--only", "gallery,collections", "--json"]);
      expect(run.code, run.stderr).toBe(2);
      const out = JSON.parse(run.stdout) as { download: { paused: unknown; left: { dueNow: number } } };
      expect(out.download.paused).toBeTruthy();
      const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'wanted' AND kind <> 'degraded'");
      expect(rows[0]?.n).toBeGreaterThan(10);
      expect(out.download.left.dueNow).toBe(rows[0]?.n);
    } finally {
      await h.close();
    }
  }, 60_000);

  it("stopped by Ctrl-C during the sync: exit 130, both steps STOPPED, nothing of the allowance spent", async () => {
    const h = await account();
    try {
      // Every API answer takes a second: the run is still walking the gallery when the signal comes.
      h.sim.faults.add({ kind: "latency", latencyMs: 1000 });
      const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "archive", "--once", "--only", "gallery"], {
        env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, DVAULT_ENGINE: TEST_ENGINE, ...h.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const done = collectRun(child, Date.now());
      await expect.poll(() => h.sim.log().some((e) => e.route.includes("/gallery")), { timeout: 30_000, interval: 50 }).toBe(true);
      child.kill("SIGINT");
      const run = await done;
      expect(run.code, run.stdout + run.stderr).toBe(130);
      expect(run.stdout).toMatch(/^SimArtist\s+gallery\s+STOPPED\s/m);
      // The download step ran beside the sync and was stopped with it; it names the command that continues.
      expect(run.stdout).toMatch(/^STOPPED before the end: run dvault archive --once again to continue/m);
      expect(run.stderr).toMatch(/^dvault: sync: stopped before the end: .*; download: stopped before the end; .*run dvault archive --once again/m);
      // Originals that may spend the weekly allowance wait for the end of the sync, which never came.
      expect(h.sim.log().filter((e) => e.route.includes("/deviation/download"))).toEqual([]);
    } finally {
      await h.close();
    }
  }, 60_000);

  it("says in --help which files it fetches while the sources list: never the texts, whose body comes at the end", async () => {
    const run = await runDvault({ redis: { url: "redis://127.0.0.1:1" }, env: {} }, ["archive", "--help"]);
    expect(run.code).toBe(0);
    const help = run.stdout.replace(/\s+/g, " ");
    expect(help).toContain("the free renditions of originals the artist does not offer, deleted works");
    expect(help).toContain("the texts (their full body comes at the end of their source's run), wait until every source has listed");
  }, 30_000);

  it("refuses to run without --once, in one line, before it opens anything", async () => {
    // No database, Redis or simulator is needed (nor reached: the port below refuses).
    const run = await runDvault({ redis: { url: "redis://127.0.0.1:1" }, env: {} }, ["archive"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("dvault: dvault archive runs in this process only: add --once (a running worker already syncs and downloads on its schedule)\n");
  }, 30_000);
});
