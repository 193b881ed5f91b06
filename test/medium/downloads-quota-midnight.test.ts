// A call made in one service week and refused in the next (its answer, or its retries, ran past Monday 00:00 UTC):
// the refusal closes the week the call was counted in, not the new one, whose allowance the next originals spend.
// The service's own allowance (3) is below dvault's (10), so the week ends with a refusal; the clock dvault's
// quota reads moves past midnight while the refused call is answered, and the simulator's with it.
import { afterAll, describe, expect, it } from "vitest";
import { DownloadQuota, nextQuotaWindow, serviceWeekStart } from "../../src/downloads/quota.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

let h: DownloadHarness | undefined;

afterAll(async () => {
  await h?.close();
});

describe("a quota refusal answered after Monday 00:00 UTC", () => {
  it("closes the week the call was counted in, and the new week's allowance is spent", async () => {
    const sim = { downloadQuota: 3, quotaExhaustion: "400" as const, dataset: { deviations: 14, galleryFolders: 1, favourites: 0, trackedUsers: 0 } };
    const w = await createDownloadHarness({ sim, sources: [gallerySource], quota: 10 });
    h = w;
    await w.syncAll(["gallery"]);
    const monday = nextQuotaWindow(w.sim.clock.now());
    const sunday = serviceWeekStart(w.sim.clock.now().getTime() - 1);
    w.sim.clock.set(new Date(monday.getTime() - 60_000));
    const calls = () => w.sim.log().filter((e) => e.route.endsWith("/deviation/download/{deviationid}")).length;
    // Once the fourth call (the one the service refuses) has been made, the clock reads past midnight.
    const now = () => {
      if (calls() > 3 && w.sim.clock.now() < monday) w.sim.clock.set(new Date(monday.getTime() + 1000));
      return w.sim.clock.now().getTime();
    };
    const quota = new DownloadQuota({ repo: w.deps.quotaRepo, defaultAllowance: 10, now });
    const summary = await w.runOnce({ deps: { ...w.deps, quota }, concurrency: 1 });
    expect(summary.failures).toEqual([]);

    const { rows: weeks } = await w.pool.query<{ week: string; used: number; refused: boolean }>(
      "SELECT to_char(week_start, 'YYYY-MM-DD') AS week, used, exhausted_at IS NOT NULL AS refused FROM download_quota_usage WHERE account_id = $1 ORDER BY 1",
      [w.account.id],
    );
    // Before: the refusal closed the new week with nothing of it spent ({used: 0, refused: true}), and the old
    // week stayed open; every original then waited for the Monday after.
    expect(weeks).toEqual([
      { week: sunday.toISOString().slice(0, 10), used: 3, refused: true },
      { week: monday.toISOString().slice(0, 10), used: 3, refused: true },
    ]);
    // The service counted the new week's three as its own.
    expect(w.sim.quotaUsed(w.sim.truth.ownerId)).toBe(3);
  }, 60_000);
});
