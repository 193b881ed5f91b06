// The weekly allowance: with 10 allowed and 40 downloadable originals wanted, 10 originals (the newest of
// the own gallery first) and 30 degraded renditions are stored and the 30 wait for the next window; when
// the simulated week rolls over, the next 10 are upgraded in place — the degraded file replaced, the
// readable links pointing at the original, the change recorded — and the allowance is counted in
// Postgres exactly as the service counts it.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DownloadQuota, nextQuotaWindow } from "../../src/downloads/quota.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

let h: DownloadHarness;
let wanted: string[];

type Row = {
  deviationid: string;
  status: string;
  rendition: string | null;
  path: string | null;
  sha256: string | null;
  next_attempt_at: Date | null;
  degraded_reason: string | null;
  upgraded_at: Date | null;
};

async function rows(): Promise<Map<string, Row>> {
  const { rows } = await h.pool.query<Row>(
    "SELECT deviationid, status, rendition, path, sha256, next_attempt_at, degraded_reason, upgraded_at FROM downloads WHERE kind = 'original'",
  );
  return new Map(rows.map((r) => [r.deviationid, r]));
}

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 70, galleryFolders: 3, collectionFolders: 1, favourites: 0, trackedUsers: 0 }, downloadQuota: 10 },
    sources: [gallerySource],
    quota: 10,
  });
  await h.syncAll(["gallery"]);
  // Exactly 40 downloadable originals wanted: the newest 40 of the own gallery.
  wanted = downloadableOwnerDeviations(h.sim.truth)
    .slice(0, 40)
    .map((d) => d.deviationid);
  expect(wanted).toHaveLength(40);
  await h.pool.query("DELETE FROM downloads WHERE NOT (kind = 'original' AND deviationid = ANY($1))", [wanted]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe("DownloadQuota", () => {
  it("never overspends under concurrent reservations and honours an account's own allowance", async () => {
    const quota = new DownloadQuota({ repo: h.deps.quotaRepo, defaultAllowance: 3, now: () => Date.parse("2020-01-08T00:00:00Z") });
    const taken = await Promise.all(Array.from({ length: 12 }, () => quota.tryReserve(h.account.id)));
    expect(taken.filter(Boolean)).toHaveLength(3);
    await quota.release(taken.find(Boolean)!);
    expect((await quota.state(h.account.id)).remaining).toBe(1);
    await h.pool.query("UPDATE accounts SET download_quota = 5 WHERE id = $1", [h.account.id]);
    expect((await quota.state(h.account.id)).remaining).toBe(3);
    await quota.markExhausted(
      { accountId: h.account.id, weekStart: new Date("2020-01-06T00:00:00Z"), used: 2, allowance: 5 },
      "the service refused an original it still offers (HTTP 400 invalid_request error_code 2): the weekly download quota is spent",
    );
    // The refusal closes the week without inflating the count: 2 were used, so the service allowed 2, not the 5 configured.
    expect(await quota.state(h.account.id)).toMatchObject({ used: 2, allowance: 2, allowanceFrom: "service", configured: 5, remaining: 0, exhausted: true });
    expect((await quota.state(h.account.id)).exhaustedReason).toContain("weekly download quota is spent");
    expect(await quota.tryReserve(h.account.id)).toBeUndefined();
    expect((await quota.state(h.account.id)).used).toBe(2);
    // Refused exactly at the configured allowance, the configured number stands.
    await h.pool.query("UPDATE accounts SET download_quota = 2 WHERE id = $1", [h.account.id]);
    expect(await quota.state(h.account.id)).toMatchObject({ used: 2, allowance: 2, allowanceFrom: "configured", configured: 2, remaining: 0 });
    await h.pool.query("UPDATE accounts SET download_quota = NULL WHERE id = $1", [h.account.id]);
    await h.pool.query("DELETE FROM download_quota_usage WHERE week_start = '2020-01-06'");
  });
});

// One week after another: each step starts from the rows the previous one left, so they run as one test.
describe("runDownloadsOnce", () => {
  it("spends the allowance, degrades and defers the rest, then upgrades the next 10 in place after the week rolls over", async () => {
    // Step 1: 10 originals and 30 degraded renditions; the 30 are deferred to the next window.
    const summary = await h.runOnce();
    expect(summary).toMatchObject({ done: 10, degraded: 30, deferred: 0, failed: 0, notDownloadable: 0 });
    const next = nextQuotaWindow(h.sim.clock.now());
    expect(summary.nextWindow?.toISOString()).toBe(next.toISOString());
    const byId = await rows();
    // The newest 10 of the own gallery spent the allowance.
    for (const id of wanted.slice(0, 10)) {
      const r = byId.get(id)!;
      expect(r).toMatchObject({ status: "done", rendition: "original" });
      expect(r.sha256).toBe(await h.sim.fileSha256(id));
    }
    for (const id of wanted.slice(10)) {
      const r = byId.get(id)!;
      expect(r.status).toBe("degraded");
      expect(r.rendition).toBe("content");
      expect(r.degraded_reason).toMatch(/allowance of 10/);
      expect(r.next_attempt_at?.toISOString()).toBe(next.toISOString());
      await expect(fs.stat(path.join(h.archiveDir, r.path!))).resolves.toBeTruthy();
    }
    // Counted like the service counts: 10 successful /deviation/download calls, no more were tried.
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(10);
    expect((await h.deps.quota.state(h.account.id)).used).toBe(10);
    const calls = h.sim.log().filter((e) => e.route.endsWith("/deviation/download/{deviationid}"));
    expect(calls).toHaveLength(10);
    // Every file has its readable link.
    const links = await listLinks(h.archiveDir);
    expect(new Set(links.map((l) => l.target)).size).toBe(40);

    // Step 2: deferred rows are left alone until the window comes.
    const idle = await h.runOnce();
    expect(idle).toMatchObject({ done: 0, degraded: 0, deferred: 0, skipped: 0 });

    // Step 3: the next 10 are upgraded in place after the week rolls over.
    const before = await rows();
    h.sim.clock.set(nextQuotaWindow(h.sim.clock.now()));
    h.sim.clock.advance(3600_000);
    const rolled = await h.runOnce();
    expect(rolled).toMatchObject({ done: 10, upgraded: 10, failed: 0 });
    expect(rolled.deferred + rolled.degraded).toBe(20);
    const after = await rows();
    const upgraded = wanted.filter((id) => after.get(id)?.upgraded_at);
    expect(upgraded).toEqual(wanted.slice(10, 20));
    const linksAfter = await listLinks(h.archiveDir);
    for (const id of upgraded) {
      const old = before.get(id)!;
      const now = after.get(id)!;
      expect(now).toMatchObject({ status: "done", rendition: "original", next_attempt_at: null });
      expect(now.sha256).toBe(await h.sim.fileSha256(id));
      // The degraded file is gone, the links point at the original.
      await expect(fs.stat(path.join(h.archiveDir, old.path!))).rejects.toThrow();
      const mine = linksAfter.filter((l) => l.link.includes(`[${id}]`));
      expect(mine.length).toBeGreaterThan(0);
      for (const l of mine) expect(l.target).toBe(now.path);
    }
    const { rows: history } = await h.pool.query<{
      deviationid: string;
      change: string;
      old_rendition: string;
      new_rendition: string;
      old_path: string;
      new_path: string;
    }>("SELECT deviationid, change, old_rendition, new_rendition, old_path, new_path FROM download_history ORDER BY id");
    expect(history.map((x) => x.deviationid).sort()).toEqual([...upgraded].sort());
    for (const x of history) {
      expect(x).toMatchObject({ change: "upgraded", old_rendition: "content", new_rendition: "original" });
      expect(x.old_path).toBe(before.get(x.deviationid)?.path);
      expect(x.new_path).toBe(after.get(x.deviationid)?.path);
    }
    // The remaining 20 keep their degraded files and wait for the following window.
    const following = nextQuotaWindow(h.sim.clock.now());
    for (const id of wanted.slice(20)) expect(after.get(id)).toMatchObject({ status: "degraded", next_attempt_at: following });
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(10);
  }, 180_000);
});

/** Every readable link under by-user/, with its target relative to the archive root. */
async function listLinks(root: string): Promise<{ link: string; target: string }[]> {
  const out: { link: string; target: string }[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) await walk(abs);
      else if (e.isSymbolicLink()) {
        const target = path.relative(root, path.resolve(dir, await fs.readlink(abs)));
        out.push({ link: path.relative(root, abs), target });
      }
    }
  };
  await walk(path.join(root, "by-user"));
  return out;
}
