// What an import makes of a file's bytes (classify.ts judgeLook, judgeSize, sameProportions; file-identity.ts
// formatOfBytes): the format of its first bytes against its name, a picture's proportions against the work's.
import { describe, expect, it } from "vitest";
import { judgeLook, judgeSize, sameProportions } from "../../src/import/gallery-dl/classify.ts";
import { formatOfBytes } from "../../src/import/gallery-dl/file-identity.ts";
import type { FileLook } from "../../src/import/gallery-dl/file-look.ts";
import { importCandidate } from "../helpers/import-candidate.ts";

const work = importCandidate({ downloadFilesize: 100_000, contentFilesize: 60_000, videos: [], announced: { width: 1920, height: 1280 } });
const original = { role: "original" as const, rendition: null, evidence: "its 100000 bytes are the original's download_filesize" };
const stat = { ino: 1, size: 100_000, mtimeMs: 0 };
const jpeg = { name: "jpeg", picture: true };
const look = (extra: Partial<FileLook>): FileLook => ({
  format: jpeg,
  zeros: false,
  zeroTail: false,
  stat,
  picture: { width: 600, height: 400, decoded: true },
  ...extra,
});
const judge = (l: FileLook, planned: Parameters<typeof judgeLook>[0]["planned"] = original, ext = "jpg") =>
  judgeLook({ planned, ext, look: l, deviation: work });

describe(sameProportions.name, () => {
  it("takes a resize with each side rounded to the pixel for the same picture, at any scale", () => {
    expect(sameProportions({ width: 4000, height: 2667 }, { width: 1920, height: 1280 })).toBe(true);
    expect(sameProportions({ width: 400, height: 37 }, { width: 1920, height: 178 })).toBe(true);
    expect(sameProportions({ width: 150, height: 1 }, { width: 4000, height: 27 })).toBe(true);
  });

  it("tells common proportions apart", () => {
    expect(sameProportions({ width: 1600, height: 1200 }, { width: 1920, height: 1280 })).toBe(false); // 4:3 and 3:2
    expect(sameProportions({ width: 1920, height: 1080 }, { width: 1920, height: 1200 })).toBe(false); // 16:9 and 16:10
    expect(sameProportions({ width: 1000, height: 1000 }, { width: 1000, height: 800 })).toBe(false);
    expect(sameProportions({ width: 1280, height: 1920 }, { width: 1920, height: 1280 })).toBe(false); // turned
  });
});

describe(formatOfBytes.name, () => {
  it("reads the signatures of the formats the service hands out", () => {
    expect(formatOfBytes(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]))?.name).toBe("jpeg");
    expect(formatOfBytes(Buffer.from("RIFF\x10\0\0\0WEBPVP8 ", "latin1"))?.name).toBe("webp");
    expect(formatOfBytes(Buffer.from("\0\0\0\x18ftypmp42", "latin1"))?.name).toBe("mp4");
    expect(formatOfBytes(Buffer.from("\0\0\0\x1cftypavif", "latin1"))).toEqual({ name: "avif", picture: true });
    expect(formatOfBytes(Buffer.from("RIFF\x10\0\0\0WAVEfmt ", "latin1"))).toBeNull();
    expect(formatOfBytes(Buffer.alloc(64))).toBeNull();
  });
});

describe(judgeLook.name, () => {
  it("keeps the original whose bytes are its format and its proportions, and says so", () => {
    expect(judge(look({}))).toEqual({
      ...original,
      evidence: `${original.evidence}; its bytes are a JPEG of 600×400, in the proportions of the announced 1920×1280`,
    });
  });

  it("refuses zeros, a format its name does not say, a picture that does not decode or ends in zeros, and other proportions", () => {
    expect(judge(look({ zeros: true, format: null, picture: undefined }))).toMatchObject({ refused: "notTheWork", detail: expect.stringMatching(/all zeros/) });
    expect(judge(look({ format: null, picture: undefined }))).toMatchObject({ detail: "its bytes are not a JPEG file: no JPEG signature at its start" });
    expect(judge(look({ picture: { error: "VipsJpeg: premature end" } }))).toMatchObject({
      detail: expect.stringMatching(/does not decode as a JPEG picture/),
    });
    expect(judge(look({ zeroTail: true }))).toMatchObject({ detail: expect.stringMatching(/last bytes are all zeros/) });
    expect(judge(look({ picture: { width: 600, height: 450, decoded: true } }))).toMatchObject({
      detail: "its picture is 600×450, not in the proportions of the 1920×1280 the service announces for the work",
    });
    expect(judge(look({ format: { name: "zip", picture: false }, picture: undefined }))).toMatchObject({
      detail: expect.stringMatching(/a ZIP, not the JPEG its name says: not the original/),
    });
  });

  it("keeps the work's picture in another format than its name says as a rendition, not the original", () => {
    expect(judge(look({ format: { name: "png", picture: true } }))).toMatchObject({
      role: "rendition",
      rendition: "unknown",
      evidence: expect.stringMatching(/a PNG, not the JPEG its name says: not the original, kept as a rendition/),
    });
  });

  it("checks a further image of a post for decoding, not proportions; a file too large to decode only when its size is the original's", () => {
    const extra = { role: "extra_image" as const, rendition: null, evidence: "image 2" };
    expect(judge(look({ picture: { width: 300, height: 900, decoded: true } }), extra)).toMatchObject({ role: "extra_image" });
    const header = look({ picture: { width: 6000, height: 4000, decoded: false } });
    expect(judge(header)).toMatchObject({ role: "original", evidence: expect.stringMatching(/its header read/) });
    expect(judge(header, { role: "rendition", rendition: "unknown", evidence: "x" })).toMatchObject({
      refused: "notTheWork",
      detail: expect.stringMatching(/too large to decode here/),
    });
  });

  it("says what it could not check for a format without a known signature", () => {
    expect(judge(look({ format: null, picture: undefined }), original, "abr")).toMatchObject({
      role: "original",
      evidence: expect.stringMatching(/no known signature for \.abr/),
    });
  });
});

describe(judgeSize.name, () => {
  it("refuses a rendition larger than anything announced for its work, never an original", () => {
    expect(judgeSize({ role: "rendition" }, 2 ** 31, work)).toMatchObject({ refused: "oversized" });
    expect(judgeSize({ role: "rendition" }, 100_000, work)).toBeUndefined();
    expect(judgeSize({ role: "original" }, 2 ** 31, work)).toBeUndefined();
    expect(judgeSize({ role: "rendition" }, 2 ** 31, { ...work, downloadFilesize: null, contentFilesize: null })).toBeUndefined();
  });
});
