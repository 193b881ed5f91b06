// The weekly quota answered as a bare HTTP 500 (docs/service-behaviour.md#quota-as-500), and the 400 whose
// error_code it shares with "not downloadable" (#quota-weekly): told apart by asking for the deviation (free),
// never by the answer's wording. Over the service's quota, originals wait for next week with a free
// rendition kept now; none fails for good, and status says why the week counts as spent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatStatus } from "../../src/cli/status.ts";
import { nextQuotaWindow } from "../../src/downloads/quota.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

for (const style of ["500", "400"] as const) {
  describe(`the service's quota spent, answered as ${style}`, () => {
    let h: DownloadHarness;
    beforeAll(async () => {
      // dvault's own allowance (10) is larger than what the service grants (3): the service has the last word.
      h = await createDownloadHarness({
        sim: { seed: 12, downloadQuota: 3, quotaExhaustion: style, dataset: { deviations: 30, galleryFolders: 2, favourites: 0, trackedUsers: 0 } },
        sources: [gallerySource],
        quota: 10,
      });
      await h.syncAll(["gallery"]);
    }, 60_000);
    afterAll(async () => {
      await h?.close();
    });

    it("defers the rest to next week with a free rendition, fails none, and says why", async () => {
      const summary = await h.runOnce();
      expect(summary.failures).toEqual([]);
      expect(summary.done).toBeGreaterThanOrEqual(3);
      const { rows } = await h.pool.query<{ status: string; n: number }>(
        "SELECT status::text AS status, count(*)::int AS n FROM downloads WHERE kind = 'original' GROUP BY 1 ORDER BY 1",
      );
      expect(rows.map((r) => r.status).filter((s) => s === "failed")).toEqual([]);
      const { rows: waiting } = await h.pool.query<{ next: Date | null; reason: string | null }>(
        "SELECT next_attempt_at AS next, degraded_reason AS reason FROM downloads WHERE kind = 'original' AND status IN ('degraded', 'deferred_quota')",
      );
      expect(waiting.length).toBeGreaterThan(0);
      const next = nextQuotaWindow(h.sim.clock.now());
      for (const w of waiting) expect(w.next?.toISOString()).toBe(next.toISOString());
      // The service gave 3; dvault stopped asking once it said the week was spent.
      expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(3);
      const queues = new QueueAdmin(h.services.queues);
      try {
        const status = await collectStatus({ ...h.services, queues });
        const quota = status.downloads.quota.find((q) => q.accountId === h.account.id)!;
        expect(quota.exhaustedAt).not.toBeNull();
        // What was really used when the refusal came, of what the service really allowed, not "10 of 10".
        expect(quota).toMatchObject({ used: 3, limit: 3, limitFrom: "service", configuredLimit: 10, remaining: 0 });
        const text = formatStatus(status);
        expect(text).toContain(`quota ${h.account.name}: 3 of 3 used this week, 0 left`);
        expect(text).toContain(
          `the service refused after 3 this week, not the 10 configured: set this account's allowance with dvault account set ${h.account.name} --download-quota N`,
        );
        // The dashboard's overview says the same.
        const page = overviewPage(status);
        expect(page).toContain(`quota ${h.account.name}: 3 of 3 this week`);
        expect(page).toContain("the service refused after 3 this week, not the 10 configured");
        expect(quota.exhaustedReason).toMatch(
          style === "500"
            ? /HTTP 500 to \/deviation\/download while other calls succeeded: probably the weekly download quota/
            : /refused an original it still offers \(HTTP 400 invalid_request error_code 2\)/,
        );
      } finally {
        await queues.close();
      }
    });
  });
}
