// A person's first `dvault sync --once` then `dvault download --once` on an account with several times more due
// files than one claiming batch (DVAULT_DOWNLOAD_CLAIM_BATCH made small, as a big account makes 500 small):
// the download run works batch after batch until none is due, its summary says what is left and why, and the exit
// code is 0 only when nothing it could have done now is left (src/downloads/run-once.ts, src/errors.ts).
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { collectRun, runDvault } from "../helpers/dvault-cli.ts";

/** A claim takes 4 rows; the account has about 30 due files, so about 8 claims. */
const BATCH = 4;

const dvault = (h: DownloadHarness, args: string[]) => runDvault({ redis: h.redis, env: { ...h.env, DVAULT_DOWNLOAD_CLAIM_BATCH: String(BATCH) } }, args);

async function statusCounts(h: DownloadHarness): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY status");
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A fresh archive whose gallery a `sync --once` has mirrored (no favourites or messages: the gallery makes the due files). */
async function syncedAccount(): Promise<DownloadHarness> {
  // The commands use the wall clock: the simulator's week is this week.
  const h = await createDownloadHarness({
    sim: {
      dataset: { deviations: 32, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 500,
  });
  const sync = await dvault(h, ["sync", "--once", "--only", "gallery"]);
  expect(sync.code, sync.stderr).toBe(0);
  return h;
}

describe("download --once on more due files than one claiming batch", () => {
  it("handles every due file in one run, says nothing is left and exits 0", async () => {
    const h = await syncedAccount();
    try {
      // The sync handed the rows to the (absent) worker's queue: they are queued, not wanted.
      const before = await statusCounts(h);
      const due = (before.queued ?? 0) + (before.wanted ?? 0);
      expect(due).toBeGreaterThan(BATCH * 5);
      expect(before.queued ?? 0).toBeGreaterThan(BATCH);
      // No worker runs: status says the queued rows are due, not done.
      const pending = await dvault(h, ["status"]);
      expect(pending.stdout).toContain(
        `  ${due} due now (${before.queued} queued for a worker that is not running): start the worker, or run dvault download --once`,
      );

      const run = await dvault(h, ["download", "--once"]);
      expect(run.code, run.stderr).toBe(0);
      const after = await statusCounts(h);
      expect(after.queued ?? 0).toBe(0);
      expect(after.wanted ?? 0).toBe(0);
      const handled = (after.done ?? 0) + (after.not_downloadable ?? 0) + (after.degraded ?? 0);
      expect(handled).toBe(due);
      expect(run.stdout).toMatch(new RegExp(`^done\\s+${after.done ?? 0}\\b`, "m"));
      expect(run.stdout).toMatch(/^left\s+nothing: every due file was handled$/m);
      const status = await dvault(h, ["status", "--json"]);
      expect(JSON.parse(status.stdout)).toMatchObject({ downloads: { dueNow: 0, queued: 0 } });
      expect((await dvault(h, ["status"])).stdout).toContain("  done for now: nothing is due");
    } finally {
      await h.close();
    }
  }, 90_000);

  it("lists what waits for the next quota window under left, and still exits 0", async () => {
    const h = await syncedAccount();
    try {
      // The allowance is spent for the week: every original the artist offers waits for the next window.
      await h.pool.query("UPDATE accounts SET download_quota = 0");
      const run = await dvault(h, ["download", "--once", "--json"]);
      expect(run.code, run.stderr).toBe(0);
      const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('deferred_quota', 'degraded')");
      const originals = rows[0]?.n ?? 0;
      expect(originals).toBeGreaterThan(BATCH * 2);
      const summary = JSON.parse(run.stdout) as {
        left: { dueNow: number; queued: number; deferred: number; degradedWaiting: number; nextWindow: string | null };
      };
      expect(summary.left).toMatchObject({ dueNow: 0, queued: 0 });
      expect(summary.left.deferred + summary.left.degradedWaiting).toBe(originals);
      expect(summary.left.nextWindow).not.toBeNull();

      // Run again: nothing is due, the same rows still wait, and the words say so.
      const text = await dvault(h, ["download", "--once"]);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(new RegExp(`^left\\s+${originals} wait for the next quota window \\(\\d{4}-\\d\\d-\\d\\dT`, "m"));
    } finally {
      await h.close();
    }
  }, 90_000);

  it("stopped by Ctrl-C: says so, exits 130, leaves the rest wanted, and the next run finishes it", async () => {
    const h = await syncedAccount();
    try {
      // Every file transfer takes a second: the run is still busy when the signal comes.
      h.sim.faults.add({ route: "/_cdn", kind: "latency", latencyMs: 1000 });
      const started = Date.now();
      const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "download", "--once"], {
        env: {
          PATH: process.env.PATH ?? "",
          HOME: "/nonexistent-home",
          LOG_LEVEL: "warn",
          REDIS_URL: h.redis.url,
          ...h.env,
          DVAULT_DOWNLOAD_CLAIM_BATCH: String(BATCH),
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      const done = collectRun(child, started);
      // Once the first original is paid for and on its way, Ctrl-C.
      await expect.poll(() => h.sim.log().some((e) => e.path.startsWith("/_cdn/")), { timeout: 30_000, interval: 50 }).toBe(true);
      child.kill("SIGINT");
      const run = await done;
      expect(run.code, run.stdout + run.stderr).toBe(130);
      expect(run.stdout).toMatch(/^STOPPED before the end: run dvault download --once again to continue/m);
      expect(run.stderr).toMatch(/stopped before the end; \d+ file\(s\) left: run dvault download --once again to continue/);
      // Nothing was given up: what was not stored waits, wanted or in the (absent) worker's queue.
      const stopped = await statusCounts(h);
      expect(stopped.failed ?? 0).toBe(0);
      expect((stopped.wanted ?? 0) + (stopped.queued ?? 0)).toBeGreaterThan(0);

      h.sim.faults.clear();
      const again = await dvault(h, ["download", "--once"]);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^left\s+nothing: every due file was handled$/m);
      expect((await statusCounts(h)).wanted ?? 0).toBe(0);
    } finally {
      await h.close();
    }
  }, 90_000);
});
