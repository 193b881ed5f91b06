// The archive grid's numbers over a listing longer than a page (issue 26, item 6): each tile carries its place in
// the whole filtered listing (the lightbox's "99 of 497" on page 3, not "3 of …"), the total is counted by the
// statement that reads the page, and a page past the end says so instead of "nothing matches".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { insertListing } from "../helpers/numbers-listing.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let dash: RunningDashboard;
let ids: string[];

beforeAll(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
  ids = await insertListing(h.pool, 497);
  // Newer work by someone else: in the unfiltered listing it comes first and shifts every position by 10.
  await insertListing(h.pool, 10, { prefix: "zz-newer", artist: "other-artist" });
  await h.pool.query("UPDATE deviations SET published_at = now() WHERE deviationid LIKE 'zz-newer-%'");
  dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await dash?.close();
  await h?.close();
});

type Tile = { id: string; pos: number };

async function grid(query: string): Promise<{ html: string; tiles: Tile[]; count: { from: number; to: number; total: number } | undefined }> {
  const html = await (await fetch(`${dash.url}/archive${query}`)).text();
  const tiles = [...html.matchAll(/<a class="thumb" href="\/item\/([^"?]+)[^"]*"[^>]*\bdata-pos="(\d+)"/g)].map((m) => ({
    id: decodeURIComponent(m[1]!),
    pos: Number(m[2]),
  }));
  const c = /<p class="count" data-from="(\d+)" data-to="(\d+)" data-total="(\d+)"/.exec(html);
  return { html, tiles, count: c ? { from: Number(c[1]), to: Number(c[2]), total: Number(c[3]) } : undefined };
}

describe("the archive grid's positions", () => {
  it("gives the 99th item of an artist's 497 the position 99 of 497 on page 3", async () => {
    const page = await grid("?artist=listing-artist&page=3");
    expect(page.count).toEqual({ from: 97, to: 144, total: 497 });
    expect(page.tiles).toHaveLength(48);
    expect(page.tiles[2]).toEqual({ id: ids[98], pos: 99 });
    expect(page.tiles.map((t) => t.pos)).toEqual(Array.from({ length: 48 }, (_, i) => 97 + i));
    expect(page.tiles.map((t) => t.id)).toEqual(ids.slice(96, 144));
  });

  it("counts positions in the listing as filtered: unfiltered, the same item is 109th of 507", async () => {
    const page = await grid("?page=3");
    expect(page.count).toEqual({ from: 97, to: 144, total: 507 });
    expect(page.tiles.find((t) => t.id === ids[98])).toEqual({ id: ids[98], pos: 109 });
  });

  it("numbers the last, short page to the total", async () => {
    const page = await grid("?artist=listing-artist&page=11");
    expect(page.count).toEqual({ from: 481, to: 497, total: 497 });
    expect(page.tiles.at(-1)).toEqual({ id: ids[496], pos: 497 });
  });

  it("says a page past the end is past the end, with the total, not that nothing matches", async () => {
    const page = await grid("?artist=listing-artist&page=40");
    expect(page.tiles).toEqual([]);
    expect(page.html).not.toContain("Nothing matches these filters");
    expect(page.html).toContain("497 items match these filters; this page is past the last");
    expect(page.html).toContain('href="/archive?artist=listing-artist&amp;page=11"');
    expect((await grid("?artist=nobody")).html).toContain("Nothing matches these filters.");
  });
});
