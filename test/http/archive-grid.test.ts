// The archive grid over HTTP (a real server on the mirror of test/helpers/gallery-listing.ts, no browser): the
// filters (type, tag, date range, "not archived in full", "archived only") and their totals, keyset paging by
// cursors there and back with positions, what a bad date or cursor does, each tile's aspect ratio from its stored
// file, and an item's previous/next under the filter it was opened with.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeCursor } from "../../src/http/browse-cursor.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { type GalleryWork, insertGallery } from "../helpers/gallery-listing.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

let h: SyncHarness;
let dash: RunningDashboard;
let works: GalleryWork[];

type Grid = { html: string; ids: string[]; pos: number[]; count?: { from: number; to: number; total: number }; next?: string; prev?: string };

const attr = (html: string, name: string) =>
  /<nav class="pager"[^>]*/
    .exec(html)?.[0]
    .match(new RegExp(`${name}="([^"]+)"`))?.[1]
    ?.replace(/&amp;/g, "&");

async function grid(path: string): Promise<Grid> {
  const res = await fetch(`${dash.url}${path}`);
  expect(res.status).toBe(200);
  const html = await res.text();
  const tiles = [...html.matchAll(/<a class="thumb" href="\/item\/([^"?]+)[^"]*"[^>]*\bdata-pos="(\d+)"/g)];
  const c = /<p class="count" data-from="(\d+)" data-to="(\d+)" data-total="(\d+)"/.exec(html);
  return {
    html,
    ids: tiles.map((m) => decodeURIComponent(m[1]!)),
    pos: tiles.map((m) => Number(m[2])),
    count: c ? { from: Number(c[1]), to: Number(c[2]), total: Number(c[3]) } : undefined,
    next: attr(html, "data-next"),
    prev: attr(html, "data-prev"),
  };
}

const ALL = "/archive?artist=gal-artist";
const ids = (list: GalleryWork[]) => list.map((w) => w.id);

beforeAll(async () => {
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
  works = await insertGallery(h.pool, 130);
  dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
});

afterAll(async () => {
  await dash?.close();
  await h?.close();
});

describe("the archive grid's filters", () => {
  it("filters by type, tag, 'not archived in full' and 'archived only', with the totals of what they keep", async () => {
    const cases: Array<[string, GalleryWork[]]> = [
      [`${ALL}&type=literature`, works.filter((w) => w.type === "literature")],
      [`${ALL}&tag=sea`, works.filter((w) => w.tags.includes("sea"))],
      [`${ALL}&tag=%23sea`, works.filter((w) => w.tags.includes("sea"))],
      [`${ALL}&notfull=1`, works.filter((w) => w.width === null)],
      [`${ALL}&archived=1`, works.filter((w) => w.width !== null)],
      [`${ALL}&archived=1&tag=land&type=image`, works.filter((w) => w.width !== null && w.tags.includes("land") && w.type === "image")],
    ];
    for (const [path, expected] of cases) {
      expect(expected.length, path).toBeGreaterThan(0);
      const g = await grid(path);
      expect(g.ids, path).toEqual(ids(expected).slice(0, 48));
      expect(g.count?.total, path).toBe(expected.length);
    }
  });

  it("filters by a date range of months, days or a year, both ends included, and says when a date does not read", async () => {
    const within = (from: string, to: string) => works.filter((w) => w.published >= from && w.published < to);
    const cases: Array<[string, GalleryWork[]]> = [
      ["from=2023-03&to=2023-04", within("2023-03-01", "2023-05-01")],
      ["from=2023-03-10&to=2023-03-20", within("2023-03-10", "2023-03-21")],
      ["from=2024", within("2024-01-01", "2100-01-01")],
      ["to=2023-02-15", within("2000-01-01", "2023-02-16")],
    ];
    for (const [query, expected] of cases) {
      const g = await grid(`${ALL}&${query}`);
      expect(g.ids, query).toEqual(ids(expected).slice(0, 48));
      expect(g.count?.total, query).toBe(expected.length);
    }
    // Within one month the grid is headed by day, otherwise by month.
    expect((await grid(`${ALL}&from=2023-03&to=2023-03`)).html).toContain('<h2 class="group" data-group="2023-03-02">2 March 2023</h2>');
    expect((await grid(ALL)).html).toContain('<h2 class="group" data-group="2024-10">October 2024</h2>');
    const bad = await grid(`${ALL}&from=March&type=painting`);
    expect(bad.html).toContain("“from” March is not a date like 2024, 2024-03 or 2024-03-15; ignored.");
    expect(bad.html).toContain("Type “painting” is not one of image, journal, literature, video, other; showing every type.");
    expect(bad.count?.total).toBe(works.length);
  });

  it("offers every month in the scrubber as a filter link that keeps the other filters", async () => {
    const g = await grid(`${ALL}&tag=sea&from=2023-03&to=2023-03`);
    expect(g.html).toContain('href="/archive?artist=gal-artist&amp;tag=sea&amp;from=2024-10&amp;to=2024-10"');
    expect(g.html).toMatch(/<a href="[^"]*from=2023-03&amp;to=2023-03" class="on" aria-current="true"/);
    expect(g.html).toContain('href="/archive?artist=gal-artist&amp;tag=sea">all dates</a>');
  });
});

describe("paging by cursors", () => {
  it("goes to the next page and back by cursor with positions, to the last page, and keeps the filter", async () => {
    const first = await grid(ALL);
    expect(first.ids).toEqual(ids(works.slice(0, 48)));
    expect(first.prev).toBeUndefined();
    expect(first.next).toMatch(/^\/archive\?artist=gal-artist&after=[\w-]+$/);
    const second = await grid(first.next!);
    expect(second.ids).toEqual(ids(works.slice(48, 96)));
    expect(second.pos).toEqual(Array.from({ length: 48 }, (_, i) => 49 + i));
    expect(second.count).toEqual({ from: 49, to: 96, total: works.length });
    const third = await grid(second.next!);
    expect(third.ids).toEqual(ids(works.slice(96)));
    expect(third.count).toEqual({ from: 97, to: works.length, total: works.length });
    expect(third.next).toBeUndefined();
    const back = await grid(third.prev!);
    expect(back.ids).toEqual(second.ids);
    expect(back.pos).toEqual(second.pos);
    const top = await grid(back.prev!);
    expect(top.ids).toEqual(first.ids);
    expect(top.pos[0]).toBe(1);
    expect(top.prev).toBeUndefined();
    // Under a filter the cursors keep it.
    const land = works.filter((w) => w.tags.includes("land") && w.width !== null);
    expect(land.length).toBeGreaterThan(48);
    const landFirst = await grid(`${ALL}&tag=land&archived=1`);
    expect(landFirst.next).toMatch(/^\/archive\?artist=gal-artist&tag=land&archived=1&after=[\w-]+$/);
    const landNext = await grid(landFirst.next!);
    expect([...landFirst.ids, ...landNext.ids]).toEqual(ids(land));
    expect(landNext.count).toEqual({ from: 49, to: land.length, total: land.length });
  });

  it("numbers a page read back to the newest item from 1, whatever position its cursor carried", async () => {
    const stale = encodeCursor({ key: works[48]!.published, deviationid: works[48]!.id }, 60);
    const top = await grid(`${ALL}&before=${stale}`);
    expect(top.ids).toEqual(ids(works.slice(0, 48)));
    expect(top.pos[0]).toBe(1);
    expect(top.count).toEqual({ from: 1, to: 48, total: works.length });
    expect(top.prev).toBeUndefined();
  });

  it("shows the first page for a cursor that does not read", async () => {
    // The last three are shaped like a time but are none PostgreSQL reads (no 500 for a forged link).
    const forged = ["2024-13-45T25:61:61.000Z", "2024-02-30T00:00:00.000Z", "0000-01-01T00:00:00.000Z"].map((t) => JSON.stringify([t, "a", 1]));
    for (const bad of [
      "garbage",
      Buffer.from('["x","y"]').toString("base64url"),
      Buffer.from('["2024-01-01T00:00:00.000Z","a",-3]').toString("base64url"),
    ].concat(forged.map((j) => Buffer.from(j).toString("base64url")))) {
      expect((await grid(`${ALL}&after=${bad}`)).ids, bad).toEqual(ids(works.slice(0, 48)));
      expect((await grid(`${ALL}&before=${bad}`)).ids, bad).toEqual(ids(works.slice(0, 48)));
    }
  });
});

describe("tiles and items", () => {
  it("gives each tile its stored picture's aspect ratio and size, a square themed placeholder without one", async () => {
    const html = (await grid(ALL)).html;
    const tiles = [...html.matchAll(/<a class="thumb" href="\/item\/([^"?]+)[^"]*" style="--r:([\d.]+)"[\s\S]*?<\/a>/g)];
    expect(tiles).toHaveLength(48);
    for (const [whole, id, r] of tiles) {
      const w = works.find((x) => x.id === id)!;
      if (w.width && w.height) {
        expect(Number(r), id).toBeCloseTo(w.width / w.height, 3);
        expect(whole).toContain(`width="${w.width}" height="${w.height}"`);
      } else {
        expect(r, id).toBe("1.0000");
        expect(whole).toMatch(/<div class="img ph[^"]*" role="img"/);
      }
    }
  });

  it("links an item to its previous and next in the grid's order, under the filter it came with", async () => {
    const sea = works.filter((w) => w.tags.includes("sea"));
    const page = await (await fetch(`${dash.url}/item/${sea[1]!.id}?artist=gal-artist&tag=sea`)).text();
    expect(page).toContain(`<a href="/item/${sea[0]!.id}?artist=gal-artist&amp;tag=sea" rel="prev"`);
    expect(page).toContain(`<a href="/item/${sea[2]!.id}?artist=gal-artist&amp;tag=sea" rel="next"`);
    expect(page).toContain('<a href="/archive?artist=gal-artist&amp;tag=sea">back to the grid</a>');
    const newest = await (await fetch(`${dash.url}/item/${works[0]!.id}`)).text();
    expect(newest).not.toContain('rel="prev"');
    expect(newest).toContain(`<a href="/item/${works[1]!.id}" rel="next"`);
    // The summary the lightbox adopts: artist page, date, tags as filters, what was archived.
    expect(newest).toContain('<a href="/artists/gal-artist">gal-artist</a>');
    expect(newest).toMatch(/<section class="card info" data-info[\s\S]*<dt>archived<\/dt><dd>original \(PNG, [^)]+\)[\s\S]*href="\/archive\?tag=land">#land</);
  });
});
