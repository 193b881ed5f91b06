// `dvault download --once` where the archive cannot take a file, as a person meets it: an archive folder whose
// parent is immutable (`chattr +i`, which refuses even root), and a bucket that does not exist. Nothing of the
// weekly allowance is spent (0 /deviation/download, 0 CDN fetches), the downloads pause with one line naming the
// place and the fix (exit 2), status and the alerts say so, the rows stay wanted, and once the place takes files
// the next run resumes on its own (src/downloads/disk-guard.ts, src/storage/storage-fault.ts).
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { startS3Server } from "../helpers/s3-server.ts";

const DATASET = { deviations: 12, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0, messages: 0, notes: 0, feedItems: 0 };

/** What the service and its CDN were asked for since `seq`: original downloads (the allowance) and file fetches. */
function spent(h: DownloadHarness, seq: number): { downloads: number; cdn: number } {
  const log = h.sim.log().filter((e) => e.seq > seq);
  return {
    downloads: log.filter((e) => e.route.endsWith("/deviation/download/{deviationid}")).length,
    cdn: log.filter((e) => e.path.startsWith("/_cdn/")).length,
  };
}

async function rowsByStatus(h: DownloadHarness): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY status");
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** A gallery mirrored by `sync --once`, archived into `env`'s store. */
async function syncedInto(env: Record<string, string>, archiveDir?: string): Promise<DownloadHarness> {
  const h = await createDownloadHarness({
    sim: { dataset: DATASET, downloadQuota: 100, startTime: new Date() },
    quota: 100,
    env,
    ...(archiveDir ? { archiveDir } : {}),
  });
  const sync = await runDvault(h, ["sync", "--once", "--only", "gallery"]);
  expect(sync.code, sync.stderr).toBe(0);
  return h;
}

/** Folders made immutable here: writable again whatever happens to a test (a timeout skips its finally). */
const immutable: string[] = [];
afterAll(() => {
  for (const dir of immutable) if (existsSync(dir)) execFileSync("chattr", ["-i", dir]);
});

describe("download --once into an archive that cannot take files", () => {
  it("an immutable parent folder: paused before any download is paid for, named with its fix, and resumed once writable", async () => {
    const parent = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-immutable-"));
    const archiveDir = path.join(parent, "archive");
    const h = await syncedInto({}, archiveDir);
    try {
      immutable.push(parent);
      execFileSync("chattr", ["+i", parent]);
      const seq = h.lastSeq();
      const before = await rowsByStatus(h);
      const run = await runDvault(h, ["download", "--once"]);
      expect(run.code, run.stdout + run.stderr).toBe(2);
      expect(spent(h, seq)).toEqual({ downloads: 0, cdn: 0 });
      // One line with the place and the fix, on stderr; the summary says it too.
      expect(run.stderr).toContain(`dvault may not write to ${archiveDir} (EPERM)`);
      expect(run.stderr).toContain("chattr -i");
      expect(run.stdout).toMatch(/^PAUSED: downloads paused: dvault may not write to /m);
      // Nothing failed and nothing was given up: every row waits as it did.
      expect(await rowsByStatus(h)).toEqual({ ...before, wanted: (before.wanted ?? 0) + (before.queued ?? 0), queued: undefined });

      const status = await runDvault(h, ["status"]);
      expect(status.stdout).toMatch(/^Downloads \(PAUSED: downloads paused: dvault may not write to /m);
      expect(status.stdout).not.toContain("failed on a transient fault");
      const alerts = await runDvault(h, ["digest", "--alerts", "--json"]);
      expect(alerts.code, alerts.stderr).toBe(0);
      const { rows: incidents } = await h.pool.query<{ kind: string; title: string }>("SELECT kind, title FROM alerts WHERE resolved_at IS NULL");
      expect(incidents).toEqual([{ kind: "downloads_paused", title: "downloads are paused: the archive refuses files (a folder or the bucket)" }]);

      // A second run while it is still immutable: still nothing spent.
      const again = await runDvault(h, ["download", "--once"]);
      expect(again.code).toBe(2);
      expect(spent(h, seq)).toEqual({ downloads: 0, cdn: 0 });

      execFileSync("chattr", ["-i", parent]);
      const resumed = await runDvault(h, ["download", "--once"]);
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
      const after = await rowsByStatus(h);
      expect(after.wanted ?? 0).toBe(0);
      expect(after.done ?? 0).toBeGreaterThan(0);
      expect(spent(h, seq).downloads).toBe(after.done! - (await texts(h)));
    } finally {
      execFileSync("chattr", ["-i", parent]);
      await h.close();
      await fs.rm(parent, { recursive: true, force: true });
    }
  }, 90_000);

  it("a bucket that does not exist: paused before any download is paid for, and resumed once it exists", async () => {
    const s3 = await startS3Server();
    const h = await syncedInto({ ...s3.env, DVAULT_S3_BUCKET: "no-such-bucket" });
    try {
      const seq = h.lastSeq();
      const run = await runDvault(h, ["download", "--once"]);
      expect(run.code, run.stdout + run.stderr).toBe(2);
      expect(spent(h, seq)).toEqual({ downloads: 0, cdn: 0 });
      expect(run.stderr).toMatch(/the bucket no-such-bucket does not exist at s3:\/\/no-such-bucket.*: create it, or fix DVAULT_S3_BUCKET/);
      expect(await rowsByStatus(h)).not.toHaveProperty("failed");

      // The bucket is created: the next run proves it takes files, and downloads resume.
      const env = { ...h.env, DVAULT_S3_BUCKET: s3.bucket };
      const resumed = await runDvault({ redis: h.redis, env }, ["download", "--once"]);
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
      expect((await rowsByStatus(h)).done ?? 0).toBeGreaterThan(0);
      expect(spent(h, seq).downloads).toBeGreaterThan(0);
    } finally {
      await h.close();
      await s3.close();
    }
  }, 90_000);

  it("verify against a bucket where nothing answers: one line naming it, exit 3 (the store unreachable)", async () => {
    // Port 1 of the loopback: nothing listens there (a port freed by a server of this test could be taken by another
    // test's server before the command runs).
    const s3 = await startS3Server();
    await s3.close();
    const h = await createDownloadHarness({ sim: { dataset: DATASET }, env: { ...s3.env, DVAULT_S3_ENDPOINT: "http://127.0.0.1:1" } });
    try {
      const run = await runDvault(h, ["verify"]);
      expect(run.code, run.stdout + run.stderr).toBe(3);
      expect(run.stderr.trim().split("\n")).toEqual([
        expect.stringMatching(/^dvault: nothing answers at s3:\/\/.* \(ECONNREFUSED\): start the S3 server, or fix DVAULT_S3_ENDPOINT$/),
      ]);
    } finally {
      await h.close();
    }
  }, 60_000);
});

async function texts(h: DownloadHarness): Promise<number> {
  const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE kind = 'text' AND status = 'done'");
  return rows[0]?.n ?? 0;
}
