// The archive browser's pure parts: what a stored file is called (original, free rendition, preview) and why,
// which thumbnail stands for it, the page links with totals, and the folder tree.
import { describe, expect, it } from "vitest";
import type { FilterChoices, StoredFileRef } from "../../src/db/archive-browser.repository.ts";
import { archivePage } from "../../src/http/pages/archive.ts";
import { badge, fileKind, thumbUrl } from "../../src/http/pages/files.ts";
import { pager } from "../../src/http/pages/layout.ts";
import { dateBound } from "../../src/http/routes/archive.ts";

const SHA = "a".repeat(64);
const file = (over: Partial<StoredFileRef>): StoredFileRef => ({
  downloadId: "1",
  path: `originals/aa/aa/${SHA}.png`,
  sha256: SHA,
  mime: "image/png",
  status: "done",
  kind: "original",
  size: 10,
  width: 1,
  height: 1,
  rendition: "original",
  why: null,
  ...over,
});

describe("stored files in the gallery", () => {
  it("names originals, free renditions and previews, with why", () => {
    expect(fileKind(file({}))).toEqual({ label: "original", why: null, tone: "ok" });
    expect(fileKind(file({ status: "degraded", rendition: "content", why: "Free download limit reached." }))).toEqual({
      label: "free rendition",
      why: "quota spent: Free download limit reached.",
      tone: "warn",
    });
    expect(badge(file({ status: "not_downloadable", rendition: "preview", why: "the artist disabled downloads" }))).toBe("preview · not downloadable");
    expect(badge(file({}))).toBeNull();
  });

  it("points tiles at the small thumbnail and the lightbox at the medium one, never at the original", () => {
    expect(thumbUrl(file({}), "s")).toBe(`/thumb/s/${SHA}.webp`);
    expect(thumbUrl(file({}), "m")).toBe(`/thumb/m/${SHA}.webp`);
    expect(thumbUrl(file({ sha256: null }), "s")).toBe("/static/placeholder.svg");
    expect(thumbUrl(file({ sha256: "../../etc/passwd" }), "s")).toBe("/static/placeholder.svg");
    expect(thumbUrl(null, "s", "literature")).toBe("/static/text.svg");
  });
});

describe("page links", () => {
  it("shows the first, the last and two around the current page, and the next page for infinite scroll", () => {
    const nav = pager(6, 38, (p) => `/archive?page=${p}`, "pages").text;
    const labels = [...nav.matchAll(/>([^<]+)<\/(?:a|span)>/g)].map((m) => m[1]);
    expect(labels).toEqual(["‹", "1", "…", "4", "5", "6", "7", "8", "…", "38", "›"]);
    expect(nav).toContain('data-next="/archive?page=7"');
    expect(pager(38, 38, (p) => `/p${p}`, "pages").text).not.toContain("data-next");
    expect(pager(1, 1, (p) => `/p${p}`, "pages").text).toBe("");
  });
});

describe("the date filter's bounds", () => {
  it("reads a year, a month or a day as written, years below 100 included, and refuses year 0 and dates that do not exist", () => {
    expect(dateBound("2024-02", false)?.toISOString()).toBe("2024-02-01T00:00:00.000Z");
    expect(dateBound("2024-02", true)?.toISOString()).toBe("2024-03-01T00:00:00.000Z");
    expect(dateBound("0050", false)?.toISOString()).toBe("0050-01-01T00:00:00.000Z");
    expect(dateBound("0099-12-31", true)?.toISOString()).toBe("0100-01-01T00:00:00.000Z");
    for (const bad of ["0000", "2024-02-30", "2024-13", "24-01"]) expect(dateBound(bad, false), bad).toBeUndefined();
  });
});

describe("the folder tree", () => {
  const choices: FilterChoices = {
    artists: [],
    galleries: [
      { folderid: "g1", name: "Sketches", owner: "ann", size: 3, parent: null },
      { folderid: "g2", name: "Studies", owner: "ann", size: 1, parent: "g1" },
      { folderid: "g3", name: "Orphan", owner: "ann", size: 2, parent: "not-mirrored" },
      { folderid: "g4", name: "Sketches", owner: "bob", size: 5, parent: null },
    ],
    collections: [{ folderid: "c1", name: "Faves", owner: "ann", size: 9, parent: null }],
  };
  const page = archivePage({ filter: { archived: false, folder: "g2" }, choices, months: [], items: [], page: 1, pageSize: 48, total: 0 });

  it("nests a folder under its parent, and one whose parent is not mirrored at the top, per owner", () => {
    expect(page).toMatch(/href="\/archive\?folder=g1"[^>]*>Sketches<span class="n">3<\/span><\/a><ul><li><a href="\/archive\?folder=g2" class="on">Studies/);
    expect(page).toMatch(/<summary>ann<\/summary>[\s\S]*folder=g3[\s\S]*<summary>bob<\/summary>[\s\S]*folder=g4/);
    expect(page).toContain('href="/archive?collection=c1"');
  });
});
