// `sync --once`'s runner (jobs/sync-source/run-here.ts) on real Redis, Postgres and the simulator: a source whose
// page fails past the HTTP layer's own retries (docs/service-behaviour.md#server-5xx) runs again in the same run
// and completes; one that keeps failing is given up when its patience is spent, with the setting named.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSyncHere } from "../../jobs/sync-source/run-here.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

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
