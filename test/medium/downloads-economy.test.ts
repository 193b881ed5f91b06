// No call that the listing made unnecessary (issue #16): a simulated gallery, then the collections, synced
// and downloaded through the real runner; every request counted from the simulator's log. A free rendition
// comes from the listing's copy in the mirror while its signed URL holds (docs/service-behaviour.md#signed-url-expiry):
// no /deviation/{id} for it. A stale URL is replaced by /deviation/{id} before the CDN sees it, and a URL
// the CDN refuses by /deviation/{id} after. Calls per stored item stay within a small constant of the paging minimum.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CdnHook } from "../../src/simulator/server.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { pagingMinimum } from "../helpers/paging-minimum.ts";

const API = "/api/v1/oauth2";
const LOOKUP = `${API}/deviation/{deviationid}`;

let h: DownloadHarness;
/** The CDN refuses these once, as it refuses an expired signature (src/simulator/cdn.ts: 403, "Token expired"). */
const refuseOnce = new Set<string>();
const refuse: CdnHook = (_world, _req, d) => {
  if (!refuseOnce.delete(d.deviationid)) return undefined;
  return { status: 403, text: "<Error><Code>AccessDenied</Code><Message>Token expired</Message></Error>", contentType: "application/xml" };
};

type StoredRow = { deviationid: string; status: string; rendition: string; is_partial: boolean; partial_reason: string | null };

// A fresh account per test: each counts the calls and the stored rows of its own sync and downloads.
beforeEach(async () => {
  h = await createDownloadHarness({
    sim: { seed: 9, variance: true, downloadQuota: 10_000, cdnHooks: [refuse], dataset: { deviations: 150, favourites: 60, trackedUsers: 0 } },
    sources: [gallerySource, collectionsSource],
    quota: 10_000,
  });
}, 120_000);

afterEach(async () => {
  await h?.close();
});

function since(seq: number) {
  return h.sim.log().filter((e) => e.seq > seq);
}

/** Ids (lower case) of the /deviation/{id} lookups since `seq`. */
function lookups(seq: number): string[] {
  return since(seq)
    .filter((e) => e.route === LOOKUP)
    .map((e) => (e.path.split("/").pop() ?? "").toLowerCase());
}

async function storedRows(): Promise<StoredRow[]> {
  const { rows } = await h.pool.query<StoredRow>(
    "SELECT deviationid, status, rendition, is_partial, partial_reason FROM downloads WHERE path IS NOT NULL AND status <> 'wanted'",
  );
  return rows;
}

/** Free renditions of locked works: those are asked for anew (what a locked work shows depends on the viewer). */
const restricted = (r: StoredRow) => r.status === "not_downloadable" && /tier-locked|premium folder/.test(r.partial_reason ?? "");

describe("downloads: no call the listing made unnecessary", () => {
  it("archives a gallery within a small constant of the paging minimum, with no lookup for a not-downloadable item", async () => {
    const start = h.lastSeq();
    await h.syncAll(["gallery"]);
    // One item the CDN will refuse once: its listing URL is tried, then a fresh one is asked for.
    const { rows } = await h.pool.query<{ deviationid: string }>(
      `SELECT deviationid FROM deviations WHERE is_downloadable = false AND raw->'content'->>'src' IS NOT NULL
         AND raw->'videos' IS NULL AND tier_access IS NULL ORDER BY deviationid LIMIT 1`,
    );
    const refused = rows[0]!.deviationid;
    refuseOnce.add(refused);
    const summary = await h.runOnce();
    expect(summary.failures).toEqual([]);

    const calls = since(start).filter((e) => e.route.startsWith(API));
    const stored = await storedRows();
    const count = (route: string) => calls.filter((e) => e.route === `${API}${route}` && e.status === 200).length;
    const originals = stored.filter((r) => r.rendition === "original").length;
    const texts = stored.filter((r) => r.rendition === "html").length;
    expect(count("/deviation/download/{deviationid}")).toBe(originals);
    expect(count("/deviation/content")).toBe(texts);

    // Items whose listing gave a usable URL: never looked up, and there are enough of them for that to mean something.
    const free = stored.filter((r) => r.status === "not_downloadable" && !restricted(r) && r.deviationid !== refused);
    expect(free.length).toBeGreaterThan(10);
    const looked = new Set(lookups(start));
    expect(free.filter((r) => looked.has(r.deviationid.toLowerCase()))).toEqual([]);
    // The refused URL: the CDN's 403, one lookup, then the file.
    expect(lookups(start).filter((id) => id === refused.toLowerCase())).toHaveLength(1);
    expect(stored.find((r) => r.deviationid === refused)).toMatchObject({ status: "not_downloadable", rendition: "content" });
    const cdn = since(start).filter((e) => e.route.startsWith("/_cdn/") && e.path.includes(refused.toLowerCase()));
    expect(cdn.map((e) => e.status)).toEqual([403, 200]);

    // The paging minimum, plus one call per original and per text, plus what is left: the placebo before a long
    // job, the refused URL's lookup and one lookup per locked work.
    const min = pagingMinimum(h.sim.truth, "gallery");
    const floor = min.listing + min.metadata + originals + texts;
    const extra = 2 + stored.filter(restricted).length;
    expect(calls.length).toBeLessThanOrEqual(floor + extra);
    expect(extra).toBeLessThanOrEqual(4);
    expect(calls.length / stored.length).toBeLessThanOrEqual((floor + 4) / stored.length);
  });

  it("asks /deviation/{id} for every free rendition whose listing URL went stale before its download, and never hands the CDN a stale one", async () => {
    const start = h.lastSeq();
    await h.syncAll(["collections"]);
    // Past the signature's life (src/simulator/cdn.ts: 600 s) before the downloads start.
    h.sim.clock.advance(11 * 60_000);
    const summary = await h.runOnce();
    expect(summary.failures).toEqual([]);
    const { rows } = await h.pool.query<{ deviationid: string }>(
      "SELECT deviationid FROM downloads WHERE status = 'not_downloadable' AND path IS NOT NULL AND last_attempt_at IS NOT NULL",
    );
    const fresh = since(start).filter((e) => e.route.startsWith("/_cdn/"));
    const freshIds = new Set(lookups(start));
    const stale = rows.filter((r) => fresh.some((e) => e.path.includes(r.deviationid.toLowerCase())));
    expect(stale.length).toBeGreaterThan(5);
    for (const r of stale) expect(freshIds.has(r.deviationid.toLowerCase())).toBe(true);
    expect(fresh.filter((e) => e.status === 401 || e.status === 403)).toEqual([]);
  });
});
