// The digest's pictures per channel, from a real archive in a temp dir: the webhook gets the dashboard's
// signed /thumb/s/ URL only when DVAULT_PUBLIC_URL is set and the archive holds the file; the file channel gets files;
// SMTP gets cid: parts; a mature work, or a file the archive lacks, gets nothing (render-html's placeholder).
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, writeFileSync } from "node:fs";
import { digestImages } from "../../src/digest/images.ts";
import { linkKeyOf } from "../../src/digest/run-digest.ts";
import { testConfig } from "../helpers/config.ts";
import { thumbSig } from "../../src/storage/thumb-link.ts";
import type { DeviationRef, DigestData } from "../../src/digest/types.ts";
import { Archive } from "../../src/storage/archive.ts";
import { Thumbnails } from "../../src/storage/thumbnails.ts";
import { makeImage } from "../helpers/image-fixtures.ts";

let dir: string;
let thumbs: Thumbnails;
let sha: string;
const LINK_KEY = randomBytes(32);

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-digest-images-"));
  const archive = new Archive({ root: dir, minFreeBytes: 0 });
  thumbs = new Thumbnails(archive.blobs);
  sha = (await archive.storeBytes({ bytes: await makeImage("jpg", 1200, 800, 4), ext: "jpg" })).sha256;
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

function dev(id: string, sha256: string | null, isMature = false): DeviationRef {
  return { deviationid: id, title: id, url: null, sha256, thumbUrl: null, archived: sha256 ? "original" : null, isMature, removedReason: null };
}

/** A digest showing three new deviations: one archived, one mature (archived too), one not archived. */
function digest(): DigestData {
  const items = [dev("kept", sha), dev("mature", sha, true), dev("absent", "f".repeat(64))].map((deviation) => ({
    account: "me",
    artist: "a",
    deviation,
    publishedAt: null,
    type: "image",
  }));
  // Only the sections digestImages walks matter here.
  return { feedback: { faves: [], comments: [] }, mentions: [], deviations: { items, total: 3 }, changes: [] } as unknown as DigestData;
}

const urls = (d: DigestData) => d.deviations.items.map((i) => i.deviation.thumbUrl);

describe(digestImages.name, () => {
  it("gives the webhook the dashboard's signed URL when one is configured, and nothing otherwise", async () => {
    const withUrl = await digestImages(digest(), {
      channel: "webhook",
      thumbs,
      dashboard: { url: "https://dv.example.org", linkKey: () => LINK_KEY },
      filesDir: "x_files",
    });
    expect(urls(withUrl.data)).toEqual([`https://dv.example.org/thumb/s/${sha}.webp?sig=${thumbSig(LINK_KEY, "s", sha)}`, null, null]);
    expect(withUrl.images).toEqual([]);
    const without = await digestImages(digest(), { channel: "webhook", thumbs, dashboard: undefined, filesDir: "x_files" });
    expect(urls(without.data)).toEqual([null, null, null]);
  });

  it("links no picture where the install has no secret key, and makes none (a lost key's return would meet it)", async () => {
    const configDir = path.join(dir, "config-none");
    const config = testConfig({ DVAULT_CONFIG_DIR: configDir, DVAULT_SECRET_KEY: "" });
    const linkKey = linkKeyOf(config);
    expect(linkKey()).toBeUndefined();
    const none = await digestImages(digest(), { channel: "webhook", thumbs, dashboard: { url: "https://dv.example.org", linkKey }, filesDir: "x_files" });
    expect(urls(none.data)).toEqual([null, null, null]);
    expect(existsSync(path.join(configDir, "secret.key"))).toBe(false);
    // The key back in place: the pictures are linked again, under it.
    await fs.mkdir(configDir, { recursive: true });
    writeFileSync(path.join(configDir, "secret.key"), randomBytes(32).toString("hex"), { mode: 0o600 });
    expect(linkKey()).toBeInstanceOf(Buffer);
  });

  it("carries the archived file's thumbnail as a cid: part for SMTP and as a file for the file channel", async () => {
    const smtp = await digestImages(digest(), { channel: "smtp", thumbs, dashboard: undefined, filesDir: "x_files" });
    expect(urls(smtp.data)).toEqual([`cid:thumb-${sha.slice(0, 32)}@dvault`, null, null]);
    expect(smtp.images.map((i) => [i.cid, i.contentType])).toEqual([[`thumb-${sha.slice(0, 32)}@dvault`, "image/jpeg"]]);
    const file = await digestImages(digest(), { channel: "file", thumbs, dashboard: undefined, filesDir: "x_files" });
    expect(urls(file.data)).toEqual([`x_files/${sha}.webp`, null, null]);
    expect(file.images.map((i) => i.fileName)).toEqual([`x_files/${sha}.webp`]);
  });
});
