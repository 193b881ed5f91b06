// The /deviation/download answer an attempt paid for is kept until the file is stored (src/downloads/paid-downloads.ts),
// so that the attempt after a failure spends no second original of the week's allowance. On DVAULT_ENGINE=postgres that
// answer lives in the mirror's own database: when PostgreSQL goes away (a restart, a failover, the disk full) right
// after the service answered, the answer cannot be written, the job meets the outage and runs again in seconds — and
// before the fix that next attempt found no paid answer and called /deviation/download a second time: one file,
// two of the week's originals spent, upstream and in the ledger. The same holds for Redis going away on that engine.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Coordinator } from "../../src/coord/coordinator.ts";
import { setDownloadTuning } from "../../src/downloads/deps.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import type { Services } from "../../src/services.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness, downloadTraffic, parkOriginalsOf, wantAgain } from "../helpers/download-harness.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
    quota: 10,
  });
  await h.syncAll(["gallery"]);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

/** A store whose next write of a paid answer fails as a PostgreSQL shutting down does (57P01: an outage, not the job's fault). */
function failingPaidWrites(coord: Coordinator, times: number): Coordinator & { failed: number } {
  const wrapped = Object.create(coord) as Coordinator & { failed: number };
  wrapped.failed = 0;
  wrapped.put = async (key, value, options) => {
    if (key.includes(":downloads:paid:") && wrapped.failed < times) {
      wrapped.failed++;
      throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01", severity: "FATAL" });
    }
    return coord.put(key, value, options);
  };
  return wrapped;
}

describe("a paid download answer the store could not keep", () => {
  it("is not paid for twice when the store goes away right after the service answered", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>(
      `SELECT d.deviationid FROM downloads d JOIN deviations v USING (deviationid)
        WHERE d.kind = 'original' AND v.is_downloadable AND NOT v.is_deleted ORDER BY d.deviationid LIMIT 1`,
    );
    const id = rows[0]!.deviationid;
    await parkOriginalsOf(h.pool, [id]);
    const seq = await wantAgain(h, id);
    const coord = failingPaidWrites(h.services.coord, 1);
    const services: Services = { ...h.services, coord };
    const deps = setDownloadTuning(services, { lockTtlMs: 3000 });
    const summary = await runDownloadsOnce({
      services,
      deps,
      log: h.log,
      progressEveryMs: 60_000,
      patience: { itemMs: 5000, runMs: 10_000, baseMs: 20, capMs: 200 },
    });
    expect(coord.failed).toBe(1);
    expect(summary.failures).toEqual([]);
    const { rows: after } = await h.pool.query<{ status: string; sha256: string | null }>(
      "SELECT status, sha256 FROM downloads WHERE kind = 'original' AND deviationid = $1",
      [id],
    );
    expect(after[0]?.status).toBe("done");
    expect(after[0]?.sha256).toBe(await h.sim.fileSha256(id));
    // One /deviation/download for one file: the attempt after the outage used the answer it had paid for.
    expect(downloadTraffic(h, id, seq).filter((t) => t.startsWith("api"))).toEqual(["api 200"]);
    const { rows: used } = await h.pool.query<{ used: number }>("SELECT coalesce(sum(used), 0)::int AS used FROM download_quota_usage");
    expect(used[0]?.used).toBe(1);
  }, 60_000);
});
