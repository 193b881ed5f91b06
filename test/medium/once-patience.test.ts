// The patience of `--once` runs (src/queue/run-patience.ts) on real Redis, Postgres and the simulator. `sync
// --once`'s runner (jobs/sync-source/run-here.ts): a source whose page fails past the HTTP layer's own retries
// (docs/service-behaviour.md#server-5xx) runs again in the same run and completes; one that keeps failing is given
// up when its patience is spent, with the setting named. `download --once` (src/downloads/run-once.ts): a file is
// tried until it is stored, well past the 3 attempts it once had; one that keeps failing is left failed for the
// schedule's first delay (15 minutes), not for good.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSyncHere } from "../../jobs/sync-source/run-here.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { RETRY_DELAYS_MS } from "../../src/downloads/retry.ts";
import { createDownloadHarness, downloadTraffic, parkOriginalsOf, wantAgain, type DownloadHarness } from "../helpers/download-harness.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 12, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
  });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const run = (patience: { itemMs: number; runMs: number; baseMs: number }) =>
  runSyncHere({ services: h.services, log: h.log, runs: [{ accountId: h.account.id, source: "gallery", key: "" }], full: true, patience });

const galleryAllCalls = (since: number) => h.sim.log().filter((e) => e.seq > since && e.route.endsWith("/gallery/all"));

describe("sync --once's runner", () => {
  it("runs a source again when a page fails past the HTTP layer's retries, and completes it", async () => {
    // The HTTP layer tries a call 4 times (DEFAULT_RETRY.serverRetries + 1): a fifth 500 reaches the source.
    h.sim.faults.add({ route: "/gallery/all", kind: "status_500", times: 5 });
    const seq = h.lastSeq();
    try {
      const [outcome] = await run({ itemMs: 10_000, runMs: 10_000, baseMs: 50 });
      expect(outcome).toMatchObject({ value: { status: "done", result: "ok" } });
    } finally {
      h.sim.faults.clear();
    }
    const statuses = galleryAllCalls(seq).map((e) => e.status);
    expect(statuses.slice(0, 5)).toEqual([500, 500, 500, 500, 500]);
    expect(statuses.slice(5).every((s) => s === 200)).toBe(true);
    expect(statuses.length).toBeGreaterThan(5);
  }, 60_000);

  it("gives a source up when it still fails after its patience, naming the setting", async () => {
    h.sim.faults.add({ route: "/gallery/all", kind: "status_502", probability: 1 });
    const started = Date.now();
    try {
      const [outcome] = await run({ itemMs: 400, runMs: 10_000, baseMs: 50 });
      expect(outcome).toHaveProperty("error");
      const error = (outcome as { error: string }).error;
      expect(error).toMatch(/502/);
      expect(error).toMatch(/still failing after 0.4 s of tries \(DVAULT_RUN_ITEM_PATIENCE\)/);
    } finally {
      h.sim.faults.clear();
    }
    // Given up soon after the patience, not after the schedule's 15 minutes.
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 60_000);
});

describe("download --once", () => {
  let ids: string[];

  beforeAll(async () => {
    // The gallery's rows in the downloads table, whether or not the runner's tests above ran first.
    await h.syncAll(["gallery"]);
    const { rows } = await h.pool.query<{ deviationid: string }>(
      "SELECT d.deviationid FROM downloads d WHERE d.kind = 'original' ORDER BY d.deviationid LIMIT 2",
    );
    ids = rows.map((r) => r.deviationid);
    await parkOriginalsOf(h.pool, ids);
  });

  it("tries a file until it is stored, past the three attempts it once had", async () => {
    const id = ids[0]!;
    const seq = await wantAgain(h, id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_500", times: 6 });
    try {
      const summary = await h.runOnce();
      expect(summary).toMatchObject({ done: 1, failed: 0 });
    } finally {
      h.sim.faults.clear();
    }
    const cdn = downloadTraffic(h, id, seq).filter((t) => t.startsWith("cdn"));
    expect(cdn).toEqual([...Array(6).fill("cdn 500"), "cdn 200"]);
  }, 30_000);

  it("leaves a file that still fails after its patience for the schedule's first delay, naming the setting", async () => {
    const id = ids[1]!;
    await wantAgain(h, id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_500", probability: 1 });
    const at = h.sim.clock.now().getTime();
    try {
      const summary = await h.runOnce({ patience: { itemMs: 300, runMs: 10_000, baseMs: 20 } });
      expect(summary).toMatchObject({ done: 0, failed: 1 });
      expect(summary.failures[0]?.error).toMatch(/HTTP 500.*\(still failing after 0.3 s of tries \(DVAULT_RUN_ITEM_PATIENCE\)\)/);
      expect(summary.failures[0]?.nextAttemptAt?.getTime()).toBe(at + RETRY_DELAYS_MS[0]!);
    } finally {
      h.sim.faults.clear();
    }
    const { rows } = await h.pool.query<{ status: string; failures: number }>("SELECT status::text, failures FROM downloads WHERE deviationid = $1", [id]);
    expect(rows[0]).toEqual({ status: "failed", failures: 1 });
  }, 30_000);
});
