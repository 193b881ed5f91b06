// Transfers that go wrong on the way, against the simulator's CDN over real sockets: a reset mid-body
// resumes with a Range request, 5xx answers are retried, an expired signed URL is fetched again (one more
// /deviation/download call), a server without ranges or a changed file (new ETag, or a weak one) starts over, a 206 without an
// ETag still leaves the partial file resumable — and
// every stored file's sha256 is the simulator's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CdnHook } from "../../src/simulator/server.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME } from "../../src/simulator/server.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, parkOriginalsOf, type DownloadHarness, downloadTraffic, wantAgain } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 40, galleryFolders: 2, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const SIZE = 3 * 1024 * 1024 + 17;

let h: DownloadHarness;
let ids: string[];
/** A deviation whose file changes (new version, new ETag) right after its next CDN request starts. */
let bumpAfterRequest: string | undefined;

const bump: CdnHook = (_world, _req, d) => {
  if (bumpAfterRequest && d.deviationid === bumpAfterRequest) {
    bumpAfterRequest = undefined;
    setImmediate(() => (d as { version: number }).version++);
  }
  return undefined;
};

beforeAll(async () => {
  ids = downloadableOwnerDeviations(generateDataset(1, DATASET, DEFAULT_START_TIME))
    .slice(0, 8)
    .map((d) => d.deviationid);
  h = await createDownloadHarness({
    sim: { dataset: DATASET, fileSizes: Object.fromEntries(ids.map((id) => [id, SIZE])), downloadQuota: 100, cdnHooks: [bump] },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  await parkOriginalsOf(h.pool, ids);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const want = (id: string) => wantAgain(h, id);

const traffic = (id: string, seq: number) => downloadTraffic(h, id, seq);

async function stored(id: string): Promise<{ status: string; sha256: string | null; size: string | null }> {
  const { rows } = await h.pool.query<{ status: string; sha256: string | null; size: string | null }>(
    "SELECT status, sha256, size FROM downloads WHERE deviationid = $1",
    [id],
  );
  return rows[0]!;
}

describe("transferToArchive", () => {
  it("resumes a transfer reset mid-body with a Range request", async () => {
    const id = ids[0]!;
    const seq = await want(id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset_mid_body", atByte: 1_200_000, times: 1 });
    const summary = await h.runOnce();
    expect(summary).toMatchObject({ done: 1, failed: 0 });
    // The second request asked for the rest only: 206, and the whole file was not sent twice.
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200", "cdn 206"]);
    expect(summary.bytes).toBeLessThan(SIZE + 1_300_000);
    expect(await stored(id)).toMatchObject({ status: "done", sha256: await h.sim.fileSha256(id), size: String(SIZE) });
  });

  it("retries 5xx answers of the CDN", async () => {
    const id = ids[1]!;
    const seq = await want(id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_503", times: 2 });
    const summary = await h.runOnce();
    expect(summary).toMatchObject({ done: 1, failed: 0 });
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 503", "cdn 503", "cdn 200"]);
    expect((await stored(id)).sha256).toBe(await h.sim.fileSha256(id));
  });

  it("fetches a new signed URL when the one it has expired", async () => {
    const id = ids[2]!;
    const seq = await want(id);
    const usedBefore = h.sim.quotaUsed(h.sim.truth.ownerId);
    // The CDN request waits 400 ms; meanwhile 11 simulated minutes pass and the 10-minute URL expires.
    h.sim.faults.add({ route: "/_cdn/original/", kind: "latency", latencyMs: 400, times: 1 });
    const run = h.runOnce();
    await waitFor(() => traffic(id, seq).includes("cdn 0"));
    h.sim.clock.advance(11 * 60_000);
    const summary = await run;
    expect(summary).toMatchObject({ done: 1, failed: 0 });
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 403", "api 200", "cdn 200"]);
    // The second URL cost a second download from the allowance, as the service counts it.
    expect(h.sim.quotaUsed(h.sim.truth.ownerId)).toBe(usedBefore + 2);
    expect((await h.deps.quota.state(h.account.id)).used).toBe(usedBefore + 2);
    expect((await stored(id)).sha256).toBe(await h.sim.fileSha256(id));
  });

  it("starts over when the server ignores Range", async () => {
    const id = ids[3]!;
    const seq = await want(id);
    h.sim.setCdn({ ranges: false });
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset_mid_body", atByte: 1_000_000, times: 1 });
    try {
      const summary = await h.runOnce();
      expect(summary).toMatchObject({ done: 1, failed: 0 });
    } finally {
      h.sim.setCdn({ ranges: true });
    }
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200", "cdn 200"]);
    expect((await stored(id)).sha256).toBe(await h.sim.fileSha256(id));
  });

  it.each([
    { etags: "strong", index: 4 },
    { etags: "weak", index: 7 },
  ] as const)("starts over when the file changed between attempts ($etags ETags), never splicing two versions", async ({ etags, index }) => {
    const id = ids[index]!;
    const seq = await want(id);
    const before = await h.sim.fileSha256(id);
    // A weak ETag (W/"<size>") stays the same for the new version, of the same size, and the server honours a weak
    // If-Range as a string match: only a strong ETag may resume (RFC 9110 forbids a weak one in If-Range).
    h.sim.setCdn({ weakEtags: etags === "weak" });
    bumpAfterRequest = id;
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset_mid_body", atByte: 1_000_000, times: 1 });
    try {
      const summary = await h.runOnce();
      expect(summary).toMatchObject({ done: 1, failed: 0 });
    } finally {
      h.sim.setCdn({ weakEtags: false });
    }
    // If-Range with the old strong ETag, or no Range at all: the server sends the new file whole, which is what is stored.
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200", "cdn 200"]);
    const after = await h.sim.fileSha256(id);
    expect(after).not.toBe(before);
    expect((await stored(id)).sha256).toBe(after);
  });

  it("resumes again after a 206 without an ETag, with the ETag of the version it resumes", async () => {
    const id = ids[6]!;
    const seq = await want(id);
    h.sim.setCdn({ etagOnPartial: false });
    // Cut the first answer and the first resume: the third request resumes what the first two wrote.
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset_mid_body", atByte: 1_000_000, times: 2 });
    try {
      const summary = await h.runOnce();
      expect(summary).toMatchObject({ done: 1, failed: 0 });
    } finally {
      h.sim.setCdn({ etagOnPartial: true });
    }
    expect(traffic(id, seq)).toEqual(["api 200", "cdn 200", "cdn 206", "cdn 206"]);
    expect(await stored(id)).toMatchObject({ status: "done", sha256: await h.sim.fileSha256(id), size: String(SIZE) });
  });

  it("gives up after its attempts and records the failure", async () => {
    const id = ids[5]!;
    await want(id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_500", probability: 1 });
    try {
      const summary = await h.runOnce({ attempts: 2 });
      expect(summary).toMatchObject({ done: 0, failed: 1 });
      expect(summary.failures[0]?.error).toMatch(/HTTP 500/);
    } finally {
      h.sim.faults.clear();
    }
    const { rows } = await h.pool.query<{ status: string; last_error: string; attempts: number }>(
      "SELECT status, last_error, attempts FROM downloads WHERE deviationid = $1",
      [id],
    );
    expect(rows[0]).toMatchObject({ status: "failed", attempts: 2 });
    expect(rows[0]?.last_error).toMatch(/HTTP 500/);
    // A failed row stays failed: the next run leaves it alone.
    expect(await h.runOnce()).toMatchObject({ done: 0, failed: 0 });
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  await expect.poll(check, { timeout: timeoutMs, interval: 10 }).toBe(true);
}
