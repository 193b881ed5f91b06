// The pure parts of the downloads: the service's week, job priorities, which free rendition stands in
// for an original and when it is only part of the work, byte sizes in the config.
import { describe, expect, it } from "vitest";
import type { Deviation } from "../../src/api/types.ts";
import { loadConfig, parseByteSize } from "../../src/config.ts";
import { downloadJobPriority, nextQuotaWindow, serviceWeekStart, weekKey } from "../../src/downloads/quota.ts";
import { bestFreeRendition, partialityOf } from "../../src/downloads/renditions.ts";

const img = (name: string, w: number, h: number, extra: Record<string, unknown> = {}) => ({
  src: `https://cdn.example/${name}/w_${w},h_${h}/f.jpg?token=secret`,
  width: w,
  height: h,
  transparency: false,
  ...extra,
});

function deviation(fields: Record<string, unknown>): Deviation {
  return { deviationid: "D1", is_deleted: false, ...fields } as Deviation;
}

describe(serviceWeekStart.name, () => {
  it("starts the week on Monday 00:00 UTC, whatever the day", () => {
    for (const [at, monday] of [
      ["2026-11-02T00:00:00Z", "2026-11-02"],
      ["2026-11-04T13:00:00Z", "2026-11-02"],
      ["2026-11-08T23:59:59.999Z", "2026-11-02"],
      ["2026-11-09T00:00:00Z", "2026-11-09"],
      ["2027-01-03T10:00:00Z", "2026-12-28"],
    ] as const) {
      expect(weekKey(serviceWeekStart(new Date(at)))).toBe(monday);
    }
    expect(nextQuotaWindow(Date.parse("2026-11-08T23:59:59Z")).toISOString()).toBe("2026-11-09T00:00:00.000Z");
  });
});

describe(downloadJobPriority.name, () => {
  const now = new Date("2026-11-02T12:00:00Z");
  it("puts the configured class order first, then newest first, within BullMQ's range", () => {
    const gallerySameDay = downloadJobPriority(1, new Date("2026-11-02T10:00:00Z"), now);
    const galleryOld = downloadJobPriority(1, new Date("2016-01-01T00:00:00Z"), now);
    const collectionNew = downloadJobPriority(2, new Date("2026-11-02T11:00:00Z"), now);
    const unknownAge = downloadJobPriority(3, null, now);
    expect(gallerySameDay).toBeLessThan(galleryOld);
    expect(galleryOld).toBeLessThan(collectionNew);
    expect(collectionNew).toBeLessThan(unknownAge);
    expect(downloadJobPriority(9, new Date(0), now)).toBeLessThanOrEqual(2 ** 21);
    expect(gallerySameDay).toBeGreaterThanOrEqual(1);
  });
});

describe(bestFreeRendition.name, () => {
  it("prefers the best video, then the fullview, then the largest thumb or preview", () => {
    expect(
      bestFreeRendition(
        deviation({
          videos: [
            { src: "https://v/360", quality: "360p", filesize: 1 },
            { src: "https://v/1080", quality: "1080p", filesize: 9 },
          ],
          content: img("c", 10, 10),
        }),
      ),
    ).toMatchObject({ name: "video:1080p", src: "https://v/1080" });
    expect(bestFreeRendition(deviation({ content: img("c", 1920, 1080, { filesize: 100 }), preview: img("p", 3000, 3000) }))).toMatchObject({
      name: "content",
      filesize: 100,
    });
    expect(bestFreeRendition(deviation({ thumbs: [img("t1", 150, 100), img("t2", 300, 400)], preview: img("p", 200, 200) }))?.src).toContain("/t2/");
    expect(bestFreeRendition(deviation({ thumbs: [] }))).toBeUndefined();
  });
});

describe(partialityOf.name, () => {
  it("marks blurred, tier-locked and multi-image renditions partial", () => {
    const c = (extra: Record<string, unknown>) => ({ name: "content", src: img("c", 10, 10).src, ...extra });
    expect(partialityOf(deviation({}), c({}))).toEqual({ partial: false, reason: null });
    expect(partialityOf(deviation({ tier_access: "locked" }), c({})).reason).toMatch(/tier-locked/);
    expect(partialityOf(deviation({ premium_folder_data: { has_access: false } }), c({})).reason).toMatch(/premium folder/);
    expect(partialityOf(deviation({}), c({ src: "https://cdn.example/x/w_150,h_150,q_80,blur_30/f.jpg?token=t" })).reason).toMatch(/blurred/);
    expect(partialityOf(deviation({ is_multi_media: true }), "original").reason).toMatch(/first image only/);
    // The query (the signature) is never what decides.
    expect(partialityOf(deviation({}), c({ src: "https://cdn.example/x/f.jpg?token=blur_30" })).partial).toBe(false);
  });
});

describe(parseByteSize.name, () => {
  it("reads bytes and sizes with units", () => {
    expect(parseByteSize("2147483648")).toBe(2 ** 31);
    expect(parseByteSize("2GiB")).toBe(2 ** 31);
    expect(parseByteSize("500 MB")).toBe(500_000_000);
    expect(parseByteSize("1.5kib")).toBe(1536);
    expect(parseByteSize("lots")).toBeUndefined();
    expect(parseByteSize("5 parsecs")).toBeUndefined();
  });

  it("gives the downloads' configuration defaults and refuses bad values in one error", () => {
    const config = loadConfig({ HOME: "/nonexistent" });
    expect(config).toMatchObject({ downloadQuota: 10, downloadConcurrency: 4, minFreeBytes: 2 ** 31, downloadPriority: ["gallery", "collections", "tracked"] });
    expect(loadConfig({ HOME: "/x", DVAULT_DOWNLOAD_PRIORITY: "tracked, gallery" }).downloadPriority).toEqual(["tracked", "gallery"]);
    expect(() => loadConfig({ HOME: "/x", DVAULT_DOWNLOAD_QUOTA: "-1", DVAULT_MIN_FREE_BYTES: "much", DVAULT_DOWNLOAD_PRIORITY: "favourites" })).toThrow(
      /DVAULT_DOWNLOAD_QUOTA .*DVAULT_MIN_FREE_BYTES .*DVAULT_DOWNLOAD_PRIORITY/,
    );
  });
});
