// The commands as a user runs them (bin/dvault.js in a child process, real Postgres, Redis and the
// simulator): `dvault account set --download-quota`, `dvault download --once` with its summary, and
// `dvault verify [--fix]` finding a missing, a corrupt and an orphaned file and re-queueing what it can.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { writtenPartialKey } from "../../src/storage/layout.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { writerOfChild } from "../helpers/writer-child.ts";

let h: DownloadHarness;

const dvault = (args: string[]) => runDvault(h, args);

beforeAll(async () => {
  // The commands use the wall clock: the simulator's week is this week.
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 14, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0 }, downloadQuota: 100, startTime: new Date() },
    sources: [gallerySource],
    quota: 10,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function originalRows() {
  const { rows } = await h.pool.query<{ deviationid: string; status: string; path: string | null; sha256: string | null }>(
    "SELECT deviationid, status, path, sha256 FROM downloads WHERE kind = 'original' ORDER BY deviationid",
  );
  return rows;
}

// One user's session: the allowance set first limits the download, whose files verify then checks and
// --fix re-queues, and the next download fetches again. Each step needs the previous one, so it is one test.
describe("dvault download / verify / account", () => {
  it("sets the allowance, downloads, verifies and re-queues with --fix, and fetches the re-queued files again", async () => {
    // Step 1: the account's weekly allowance is set.
    const run = await dvault(["account", "set", h.account.name, "--download-quota", "3"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/weekly download allowance set to 3; this week 0 used, 3 left, next window \d{4}-/);
    const bad = await dvault(["account", "set", h.account.name, "--download-quota", "lots"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--download-quota expects a whole number/);
    const nobody = await dvault(["account", "set", "nobody", "--download-quota", "3"]);
    expect(nobody.stderr).toMatch(/no account named "nobody"/);

    // Step 2: download --once. First with less free space than DVAULT_MIN_FREE_BYTES: the downloads pause before
    // anything is paid for, exit 2.
    const seq = h.lastSeq();
    const full = await runDvault({ redis: h.redis, env: { ...h.env, DVAULT_MIN_FREE_BYTES: "1000TiB" } }, ["download", "--once"]);
    expect(full.code, full.stdout + full.stderr).toBe(2);
    expect(full.stdout).toMatch(/^PAUSED: /m);
    expect(h.sim.log().filter((e) => e.seq > seq && e.route.endsWith("/deviation/download/{deviationid}"))).toEqual([]);
    expect((await originalRows()).filter((r) => r.status === "done")).toEqual([]);

    // Then with the space there: the pause lifts, and the run prints a summary.
    const once = await dvault(["download", "--once"]);
    expect(once.code).toBe(0);
    const { rows } = await h.pool.query<{ status: string; n: number }>("SELECT status, count(*)::int AS n FROM downloads GROUP BY status");
    const n = (status: string) => rows.find((r) => r.status === status)?.n ?? 0;
    // Three originals (the account's allowance), the journals' texts; the rest degraded until next week.
    const { rows: originals } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE kind = 'original' AND status = 'done'");
    expect(originals[0]?.n).toBe(3);
    expect(n("degraded")).toBeGreaterThan(0);
    expect(once.stdout).toMatch(new RegExp(`^done\\s+${n("done")}\\b`, "m"));
    expect(once.stdout).toMatch(new RegExp(`^degraded\\s+${n("degraded")} \\(a free rendition stored`, "m"));
    expect(once.stdout).toMatch(/^deferred\s+0 \(next quota window \d{4}-\d\d-\d\dT00:00:00\.000Z\)/m);
    expect(once.stdout).toMatch(new RegExp(`^not downloadable\\s+${n("not_downloadable")}\\b`, "m"));
    expect(once.stdout).toMatch(/^failed\s+0/m);
    expect(once.stdout).toMatch(/^bytes\s+[\d.]+ (KiB|MiB)/m);
    expect(once.stdout).toMatch(/^readable links\s+\d+/m);

    // Step 3: verify finds the missing, corrupt and orphaned files, and --fix re-queues what it can.
    const clean = await dvault(["verify"]);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/^missing\s+0/m);
    expect(clean.stdout).toMatch(/^corrupt\s+0/m);

    const done = (await originalRows()).filter((r) => r.status === "done");
    const [lost, damaged] = done;
    await fs.rm(path.join(h.archiveDir, lost!.path!));
    const damagedFile = path.join(h.archiveDir, damaged!.path!);
    const bytes = await fs.readFile(damagedFile);
    bytes[100] = (bytes[100]! + 1) % 256;
    await fs.writeFile(damagedFile, bytes);
    const orphan = path.join(h.archiveDir, "originals", "ff", "ee", `ffee${"0".repeat(60)}.jpg`);
    await fs.mkdir(path.dirname(orphan), { recursive: true });
    await fs.writeFile(orphan, "stray");

    // A temp copy a killed `verify --fix` left in .partial/, and one of a writer still running (this process).
    const partialDir = path.join(h.archiveDir, ".partial");
    const dead = writtenPartialKey("copy", (await writerOfChild("exited")).tag);
    const live = writtenPartialKey("copy", thisWriterTag());
    await fs.mkdir(partialDir, { recursive: true });
    for (const name of [dead, live]) await fs.writeFile(path.join(partialDir, name), "left");
    const copiesLeft = async () => (await fs.readdir(partialDir)).filter((n) => n.startsWith("copy-")).sort();

    const report = await dvault(["verify"]);
    expect(report.code).toBe(2);
    expect(report.stdout).toMatch(/^missing\s+1\n\s+originals\/\S+ \(/m);
    expect(report.stdout).toContain(lost!.deviationid);
    expect(report.stdout).toMatch(/^corrupt\s+1/m);
    expect(report.stdout).toContain(damaged!.deviationid);
    expect(report.stdout).toMatch(/^orphaned\s+1 /m);
    expect(report.stdout).toContain("run dvault verify --fix");
    // Without --fix nothing changed, the partial files included.
    expect((await originalRows()).filter((r) => r.status === "done")).toHaveLength(3);
    expect(await copiesLeft()).toEqual([dead, live].sort());

    const fix = await dvault(["verify", "--fix"]);
    expect(fix.code).toBe(0);
    expect(fix.stdout).toMatch(/^re-queued 2 row\(s\)/m);
    // --fix first removed the dead writer's copy, as a worker's start does.
    expect(await copiesLeft()).toEqual([live]);
    const after = await originalRows();
    expect(after.find((r) => r.deviationid === lost!.deviationid)).toMatchObject({ status: "wanted", path: null });
    expect(after.find((r) => r.deviationid === damaged!.deviationid)).toMatchObject({ status: "wanted", path: null });
    // The corrupt bytes were moved aside, not left under their (wrong) content address.
    await expect(fs.stat(damagedFile)).rejects.toThrow();
    expect((await fs.readdir(path.join(h.archiveDir, ".corrupt"))).length).toBe(1);
    const { rows: history } = await h.pool.query<{ change: string }>("SELECT change FROM download_history ORDER BY change");
    expect(history.map((x) => x.change)).toEqual(["corrupt", "missing"]);

    // Step 4: the next download fetches the re-queued files again.
    await h.pool.query("UPDATE accounts SET download_quota = 10");
    const again = await dvault(["download", "--once"]);
    expect(again.code).toBe(0);
    const refetched = await originalRows();
    for (const r of refetched.filter((x) => x.status === "done")) expect(r.sha256).toBe(await h.sim.fileSha256(r.deviationid));
    const verify = await dvault(["verify"]);
    expect(verify.code).toBe(0);
    expect(verify.stdout).toMatch(/^ok\s+\d+/m);
    expect(verify.stdout).toMatch(/^orphaned\s+1 /m);

    // Step 5: "default" gives the account back the configured allowance.
    const reset = await dvault(["account", "set", h.account.name, "--download-quota", "default"]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain("weekly download allowance set to the default (DVAULT_DOWNLOAD_QUOTA=10)");
    const { rows: quota } = await h.pool.query<{ download_quota: number | null }>("SELECT download_quota FROM accounts WHERE id = $1", [h.account.id]);
    expect(quota).toEqual([{ download_quota: null }]);
  }, 240_000);
});

describe("dvault download without --once", () => {
  it("refuses --account and --concurrency, which only a run here uses, in one line before it opens anything", async () => {
    // No database or Redis is needed (nor reached: the port below refuses); handing the due files of every account
    // to the worker while --account named one said nothing of the flag left unused.
    const nowhere = { redis: { url: "redis://127.0.0.1:1" }, env: {} };
    const account = await runDvault(nowhere, ["download", "--account", "alice"]);
    expect(account.stderr).toBe(
      "dvault: --account goes with --once: without it the due downloads of every account are handed to the worker, which runs DVAULT_DOWNLOAD_CONCURRENCY at once; add --once to run them here\n",
    );
    expect(account.code).toBe(1);
    const both = await runDvault(nowhere, ["download", "--concurrency", "2", "--account", "alice"]);
    expect(both.stderr).toMatch(/^dvault: --account and --concurrency go with --once: /);
    expect(both.code).toBe(1);
  }, 30_000);
});
