// Numbers a person reads, tried as a newcomer would (issue 26, item 6), through the real CLI (bin/dvault.js in a
// child process) against the simulator, real Postgres and Redis: the quota line after the service refused at 10
// while dvault was told 300, `auth login --timeout 2` waiting and saying 2 s, and `verify` right after a clean
// `download --once` listing no thumbnail as missing. Each asserts the words, the exit code and the database. The
// three touch nothing the others read, so they run side by side.
import { afterAll, beforeAll, describe, it } from "vitest";
import { freePort } from "../../src/free-port.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

const DATASET = { galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0, notes: 0, messages: 0 };

/** The service allows 10 originals a week; dvault is told 300. */
let refusing: DownloadHarness;
/** The service allows more than the archive holds: a clean run. */
let clean: DownloadHarness;

beforeAll(async () => {
  // The commands use the wall clock: the simulator's week is this week.
  [refusing, clean] = await Promise.all([
    createDownloadHarness({
      sim: { seed: 26, dataset: { ...DATASET, deviations: 24 }, downloadQuota: 10, startTime: new Date() },
      sources: [gallerySource],
      quota: 300,
    }),
    createDownloadHarness({
      sim: { seed: 6, dataset: { ...DATASET, deviations: 8 }, downloadQuota: 100, startTime: new Date() },
      sources: [gallerySource],
      quota: 100,
    }),
  ]);
  await Promise.all([refusing.syncAll(["gallery"]), clean.syncAll(["gallery"])]);
}, 60_000);

afterAll(async () => {
  await Promise.all([refusing?.close(), clean?.close()]);
});

/** The originals' rows per status, e.g. { done: 14 }. */
async function originals(h: DownloadHarness): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<{ status: string; n: number }>(
    "SELECT status::text AS status, count(*)::int AS n FROM downloads WHERE kind = 'original' GROUP BY 1 ORDER BY 1",
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe.concurrent("numbers a person reads", () => {
  it("status after the service refused at 10, with 300 configured: 10 of 10 used, and that the service refused after 10", async ({ expect }) => {
    const h = refusing;
    await runDvault(h, ["download", "--once"]);
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(10);
    const after = await originals(h);
    expect(after.done).toBe(10);
    expect((after.degraded ?? 0) + (after.deferred_quota ?? 0), "originals the service refused, waiting for next week").toBeGreaterThan(0);
    const { rows } = await h.pool.query<{ used: number; exhausted: boolean }>(
      "SELECT used, exhausted_at IS NOT NULL AS exhausted FROM download_quota_usage WHERE account_id = $1",
      [h.account.id],
    );
    expect(rows).toEqual([{ used: 10, exhausted: true }]);

    const status = await runDvault(h, ["status"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`quota ${h.account.name}: 10 of 10 used this week, 0 left`);
    expect(status.stdout).not.toMatch(/\b300 of 300\b/);
    expect(status.stdout).toContain(
      `the service refused after 10 this week, not the 300 configured: set this account's allowance with dvault account set ${h.account.name} --download-quota N`,
    );
  });

  it("auth login --timeout 2 waits 2 s for the redirect and says 2 s", async ({ expect }) => {
    const h = refusing;
    const redirect = `http://127.0.0.1:${await freePort()}/callback`;
    const run = await runDvault({ ...h, env: { ...h.env, DVAULT_REDIRECT_URI: redirect } }, ["auth", "login", "--no-browser", "--timeout", "2"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`Waiting for the redirect to ${redirect} (up to 2 s, --timeout) ...`);
    expect(run.stderr.trim().split("\n").at(-1)).toBe("dvault: no redirect arrived within 2 s; run `dvault auth login` again (or use --paste)");
    // Seconds, not milliseconds or minutes.
    expect(run.ms).toBeGreaterThanOrEqual(2000);
    expect(run.ms).toBeLessThan(12_000);
    // Nothing was stored: the one user account is the harness's own.
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM accounts WHERE kind = 'user'");
    expect(rows[0]!.n).toBe(1);
  });

  it("verify right after a clean download --once lists no thumbnail as missing: not made yet, and exit 0", async ({ expect }) => {
    const h = clean;
    await runDvault(h, ["download", "--once"]);
    const stored = await originals(h);
    expect(
      Object.keys(stored).filter((s) => !["done", "not_downloadable"].includes(s)),
      "a clean run leaves nothing due",
    ).toEqual([]);
    expect(stored.done ?? 0).toBeGreaterThan(0);

    const verify = await runDvault(h, ["verify"]);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^missing {3}0$/m);
    expect(verify.stdout).toMatch(/^thumbnails 0 ok, 0 placeholder\(s\), 0 missing, 0 unreadable, \d+ not made yet of \d+ file\(s\)$/m);
    expect(verify.stdout).not.toMatch(/^ {2}missing {4}thumbnails of/m);
    expect(verify.stdout).toContain("not made yet are made by a running worker");
  });
});
