// What a gallery-dl file says about itself (docs/service-behaviour.md#gallery-dl-layout), gallery-dl's archive
// keys (#gallery-dl-archive), and original-or-rendition without ever asking /deviation/download.
import { describe, expect, it } from "vitest";
import { formatImportReport } from "../../src/cli/import.ts";
import { importCandidate } from "../helpers/import-candidate.ts";
import { parseArchiveKey } from "../../src/import/gallery-dl/archive-keys.ts";
import { classifyFile } from "../../src/import/gallery-dl/classify.ts";
import { nameFacts, pathFacts } from "../../src/import/gallery-dl/file-identity.ts";

describe(nameFacts.name, () => {
  it.each([
    ["deviantart_762707395_Feral Fox.jpg", { index: 762707395, indexFile: null, num: null, via: "default name" }],
    ["deviantart_762707395_123 apples.png", { index: 762707395, indexFile: null, num: null, via: "default name" }],
    ["deviantart_762707404_0_Little Ember_01.jpg", { index: 762707404, indexFile: 0, num: 1, via: "multi-image name" }],
    ["deviantart_762707404_1234567_Little Ember_02.jpg", { index: 762707404, indexFile: 1234567, num: 2, via: "multi-image name" }],
    ["feral_fox_by_simartist-dcm3gsj.jpg", { index: Number.parseInt("cm3gsj", 36), indexFile: null, num: null, via: "base 36" }],
    ["Sunset_by_Some-Artist-d4x9z2k.PNG", { index: Number.parseInt("4x9z2k", 36), indexFile: null, num: null, via: "base 36" }],
    ["Last Fox 51.png", { index: null, indexFile: null, num: null, via: null }],
    ["readme.txt", { index: null, indexFile: null, num: null, via: null }],
  ])("%s", (name, facts) => {
    expect(nameFacts(name)).toEqual(facts);
  });
});

describe(pathFacts.name, () => {
  it.each([
    ["/data/gdl/deviantart/SimArtist/deviantart_1_a.png", { username: "SimArtist", section: "gallery" }],
    ["/data/gdl/deviantart/SimArtist/Favourites/deviantart_1_a.png", { username: "SimArtist", section: "favourites" }],
    ["/data/gdl/deviantart/SimArtist/Favourites/Cats/deviantart_1_a.png", { username: "SimArtist", section: "favourites" }],
    ["/data/gdl/deviantart/SimArtist/Scraps/deviantart_1_a.png", { username: "SimArtist", section: "scraps" }],
    ["/data/gdl/deviantart/SimArtist/My Folder/deviantart_1_a.png", { username: "SimArtist", section: "folder" }],
    ["/data/gdl/deviantart/deviantart_1_a.png", { username: null, section: "gallery" }],
    ["/data/gdl/readme.txt", { username: null, section: "gallery" }],
  ])("%s", (abs, facts) => {
    expect(pathFacts(abs)).toEqual(facts);
  });
});

describe(parseArchiveKey.name, () => {
  it.each([
    ["deviantartg_simartist_762707395.jpg", { section: "g", owner: "simartist", index: 762707395, indexFile: null, extension: "jpg" }],
    ["deviantartf_some_user_12.PNG", { section: "f", owner: "some_user", index: 12, indexFile: null, extension: "png" }],
    ["deviantartg_simartist_762707404_1234567.jpg", { section: "g", owner: "simartist", index: 762707404, indexFile: 1234567, extension: "jpg" }],
    [
      "deviantartC_8C3E1F2A-1111-2222-3333-444455556666_99.gif",
      { section: "C", owner: "8c3e1f2a-1111-2222-3333-444455556666", index: 99, indexFile: null, extension: "gif" },
    ],
    ["deviantart123456.png", { section: "", owner: null, index: 123456, indexFile: null, extension: "png" }],
  ])("%s", (entry, key) => {
    expect(parseArchiveKey(entry)).toEqual(key);
  });

  it("is no hint when a user changed the format", () => {
    expect(parseArchiveKey("pixiv123_p0")).toBeUndefined();
    expect(parseArchiveKey("deviantarta_simartist_1")).toBeUndefined();
  });
});

describe(classifyFile.name, () => {
  const d = importCandidate();
  const name = nameFacts("deviantart_1_t.png");
  const at = (size: number, extra: Partial<Parameters<typeof classifyFile>[0]> = {}) =>
    classifyFile({ size, ext: "png", name, sidecar: undefined, deviation: d, ...extra });

  it("takes a file of the original's size for the original, whatever the sidecar says", () => {
    expect(at(1000)).toMatchObject({ role: "original" });
    expect(at(1000, { sidecar: { isOriginal: false } })).toMatchObject({ role: "original" });
  });

  it("names renditions by their size", () => {
    expect(at(600)).toMatchObject({ role: "rendition", rendition: "content" });
    expect(at(5000)).toMatchObject({ role: "rendition", rendition: "video:720p" });
    expect(at(321)).toMatchObject({ role: "rendition", rendition: "unknown" });
  });

  it("believes is_original only where no size contradicts it", () => {
    expect(at(999, { sidecar: { isOriginal: true } })).toMatchObject({ role: "rendition", evidence: expect.stringMatching(/differ from the original's 1000/) });
    const unknownSize = { ...d, downloadFilesize: null };
    expect(at(999, { sidecar: { isOriginal: true }, deviation: unknownSize })).toMatchObject({ role: "original" });
    expect(at(600, { sidecar: { isOriginal: true }, deviation: unknownSize })).toMatchObject({ role: "rendition", rendition: "content" });
    expect(at(999, { deviation: unknownSize })).toMatchObject({ role: "rendition" });
  });

  it("keeps the further images of a multi-image post apart, and leaves gallery-dl's journal pages", () => {
    expect(at(1000, { name: nameFacts("deviantart_1_77_t_02.png") })).toMatchObject({ role: "extra_image" });
    expect(at(1000, { name: nameFacts("deviantart_1_0_t_01.png") })).toMatchObject({ role: "original" });
    expect(at(1000, { sidecar: { num: 3 } })).toMatchObject({ role: "extra_image" });
    expect(at(40, { ext: "htm", deviation: { ...d, type: "journal" } })).toMatchObject({ role: "skip" });
  });
});

describe(formatImportReport.name, () => {
  it("shows file names with their control characters and direction overrides escaped, never obeyed", () => {
    const text = formatImportReport({
      dir: "/x",
      account: null,
      filesSeen: 1,
      sidecars: 0,
      archiveEntries: null,
      originals: 0,
      renditions: 0,
      extraImages: 0,
      duplicates: 0,
      unmatched: [{ file: "a\u001b[31mred\u202Egnp.exe", reason: "an empty file" }],
      unmatchedByReason: { "an empty file": 1 },
      quotaSaved: 0,
      bytesCopied: 0,
      bytesLinked: 0,
      apiCalls: 0,
      listings: [],
      durationMs: 5,
      phasesMs: { scan: 0, resolve: 0, adopt: 0 },
    });
    expect(text).toContain("unmatched a\\x1b[31mred[U+202E]gnp.exe: an empty file");
    expect([...text].filter((c) => c === "\u001b" || c === "\u202E")).toEqual([]);
  });
});
