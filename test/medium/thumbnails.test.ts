// Thumbnails on a real archive in a temp dir: each format the service hands out becomes two WebP sizes, what
// cannot be decoded a placeholder tile naming it, and both are made once and kept beside the originals.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Archive } from "../../src/storage/archive.ts";
import { MAX_TILE_BYTES } from "../../src/storage/thumbnail-render.ts";
import { backfillThumbnails, placeholderKey, thumbKey, Thumbnails } from "../../src/storage/thumbnails.ts";
import { type ImageFormat, makeImage } from "../helpers/image-fixtures.ts";

let dir: string;
let archive: Archive;
let thumbs: Thumbnails;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-thumbs-"));
  archive = new Archive({ root: path.join(dir, "archive"), minFreeBytes: 0 });
  thumbs = new Thumbnails(archive.blobs);
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function store(bytes: Buffer, ext: string) {
  const stored = await archive.storeBytes({ bytes, ext });
  const original = await thumbs.findOriginal(stored.sha256);
  if (!original) throw new Error("stored file not found by its sha256");
  return original;
}

describe(Thumbnails.name, () => {
  it.each<[ImageFormat, number, number]>([
    ["jpg", 2400, 1600],
    ["png", 900, 1400],
    ["gif", 640, 480],
    ["webp", 2000, 2000],
  ])("makes a small and a medium WebP of a %s, once", async (format, width, height) => {
    const o = await store(await makeImage(format, width, height, 3), format);
    expect(await thumbs.ensure(o)).toBe("generated");
    const s = await thumbs.get(o.sha256, "s");
    const m = await thumbs.get(o.sha256, "m");
    expect(s?.type).toBe("webp");
    expect(m?.type).toBe("webp");
    const sm = await sharp(s?.bytes).metadata();
    const mm = await sharp(m?.bytes).metadata();
    expect(sm.format).toBe("webp");
    expect(Math.max(sm.width ?? 0, sm.height ?? 0)).toBe(Math.min(320, Math.max(width, height)));
    expect(Math.max(mm.width ?? 0, mm.height ?? 0)).toBe(Math.min(1280, Math.max(width, height)));
    expect(s?.bytes.length).toBeLessThanOrEqual(MAX_TILE_BYTES);
    // Content-addressed beside the originals, keyed by sha256 and size.
    await expect(fs.stat(archive.resolveInside(thumbKey(o.sha256, o.size, "s")))).resolves.toBeTruthy();
    expect(await thumbs.ensure(o)).toBe("present");
  });

  it("gives a file sharp cannot decode a placeholder tile naming its type, and keeps it", async () => {
    const o = await store(Buffer.from("this is not a JPEG at all, only its name says so"), "jpg");
    expect(await thumbs.ensure(o)).toBe("placeholder");
    const t = await thumbs.get(o.sha256, "s");
    expect(t?.type).toBe("svg");
    expect(t?.bytes.toString()).toContain("JPG · file");
    await expect(fs.stat(archive.resolveInside(placeholderKey(o.sha256, o.size)))).resolves.toBeTruthy();
    expect(await thumbs.ensure(o)).toBe("present");
  });

  it("labels a video without decoding it", async () => {
    const o = await store(Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from("ftypmp42"), Buffer.alloc(2000, 7)]), "mp4");
    expect(await thumbs.ensure(o)).toBe("placeholder");
    const svg = (await thumbs.get(o.sha256, "m"))?.bytes.toString() ?? "";
    expect(svg).toContain("MP4 · video");
    expect(svg).toMatch(/^<svg /);
  });

  it("shows a text's first lines, as escaped text", async () => {
    const o = await store(Buffer.from("<p>Chapter One</p>\n<p>It was a dark <b>and</b> stormy night &amp; more</p><script>alert(1)</script>"), "html");
    expect(await thumbs.ensure(o)).toBe("placeholder");
    const svg = (await thumbs.get(o.sha256, "s"))?.bytes.toString() ?? "";
    expect(svg).toContain("Chapter One");
    expect(svg).toContain("It was a dark and stormy night &amp; …");
    expect(svg).not.toContain("<script");
    expect(svg).toContain("HTML · text");
  });

  it("makes many tiles asked for at once, a few at a time, each once", async () => {
    const files = await Promise.all([1, 2, 3, 4, 5, 6].map(async (seed) => store(await makeImage("jpg", 900, 700, seed), "jpg")));
    const asked = [...files, ...files].map((o) => thumbs.get(o.sha256, "s"));
    const got = await Promise.all(asked);
    expect(got.map((t) => t?.type)).toEqual(Array(12).fill("webp"));
    expect(await backfillThumbnails(thumbs)).toMatchObject({ files: 6, present: 6 });
  });

  it("answers nothing for a sha256 the archive does not hold", async () => {
    expect(await thumbs.get("0".repeat(64), "s")).toBeUndefined();
    expect(await thumbs.get("../../etc/passwd", "s")).toBeUndefined();
  });

  it("backfills every original, then finds nothing left to do", async () => {
    await store(await makeImage("jpg", 800, 600, 1), "jpg");
    await store(await makeImage("png", 300, 200, 2), "png");
    await store(Buffer.from("broken"), "png");
    expect(await backfillThumbnails(thumbs)).toMatchObject({ files: 3, generated: 2, placeholders: 1, failed: 0 });
    expect(await backfillThumbnails(thumbs)).toMatchObject({ files: 3, present: 3, placeholders: 0, generated: 0 });
  });

  it("stops at its time budget with the rest left for the next run", async () => {
    for (const seed of [1, 2, 3]) await store(await makeImage("png", 200, 200, seed), "png");
    // A clock that moves 10 s each time it is read: the budget of 15 s is spent after the first file.
    let t = 0;
    const now = () => (t += 10_000);
    const first = await backfillThumbnails(thumbs, { budgetMs: 15_000, now });
    expect(first).toMatchObject({ files: 1, generated: 1, more: true });
    expect(await backfillThumbnails(thumbs)).toMatchObject({ files: 3, present: 1, generated: 2, more: false });
  });

  it("two at a time: every file once, and a budget spent mid-way leaves a last key every file before which is done", async () => {
    for (const seed of [7, 8, 9, 10, 11]) await store(await makeImage("png", 200, 200, seed), "png");
    const all = await backfillThumbnails(thumbs, { parallel: 2 });
    expect(all).toMatchObject({ files: 5, generated: 5, failed: 0, more: false });
    // Rebuilt two at a time under a budget that ends after the first pair: the pair is done, the rest is left.
    let t = 0;
    const now = () => (t += 10_000);
    const first = await backfillThumbnails(thumbs, { parallel: 2, force: true, budgetMs: 15_000, now });
    expect(first).toMatchObject({ files: 2, generated: 2, more: true });
    const keys: string[] = [];
    for await (const o of thumbs.originals()) keys.push(o.key);
    expect(first.lastKey).toBe(keys[1]);
    const rest = await backfillThumbnails(thumbs, { parallel: 2, force: true, ...(first.lastKey ? { after: first.lastKey } : {}) });
    expect(rest).toMatchObject({ files: 3, generated: 3, more: false });
  });

  it("a continuation goes on after the last file its predecessor looked at, not from the start", async () => {
    for (const seed of [4, 5, 6]) await store(await makeImage("png", 200, 200, seed), "png");
    let t = 0;
    const now = () => (t += 10_000);
    const first = await backfillThumbnails(thumbs, { budgetMs: 15_000, now });
    expect(first).toMatchObject({ files: 1, generated: 1, more: true });
    expect(first.lastKey).toBeDefined();
    // Every budget covers one file: each continuation makes one new thumbnail, none is looked at twice.
    t = 0;
    const second = await backfillThumbnails(thumbs, { budgetMs: 15_000, now, ...(first.lastKey ? { after: first.lastKey } : {}) });
    expect(second).toMatchObject({ files: 1, generated: 1, present: 0, more: true });
    expect(second.lastKey! > first.lastKey!).toBe(true);
    t = 0;
    const third = await backfillThumbnails(thumbs, { budgetMs: 15_000, now, ...(second.lastKey ? { after: second.lastKey } : {}) });
    expect(third).toMatchObject({ files: 1, generated: 1, present: 0 });
  });
});
