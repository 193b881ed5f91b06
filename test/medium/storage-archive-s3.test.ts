// The archive with its originals in a bucket (a real S3 server on loopback, test/helpers/s3-server.ts): a
// transfer still streams into this machine's partial file while hashing, so a resume works as on disk; only the
// finished file goes up, deduplicated by its content address, and the partial file is then removed.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Archive } from "../../src/storage/archive.ts";
import { openArchive } from "../../src/storage/store.ts";
import { testConfig } from "../helpers/config.ts";
import { leftovers, startS3Server, type S3TestServer } from "../helpers/s3-server.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function* chunks(data: Buffer, size = 64 * 1024, failAfter?: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; i += size) {
    if (failAfter !== undefined && i >= failAfter) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    yield data.subarray(i, Math.min(i + size, data.length));
  }
}

async function s3Archive(env: Record<string, string> = {}): Promise<{ archive: Archive; server: S3TestServer; root: string }> {
  const server = await startS3Server();
  cleanups.push(() => server.close());
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-archive-s3-"));
  cleanups.push(() => fs.rm(root, { recursive: true, force: true }));
  const archive = openArchive(testConfig({ ...server.env, DVAULT_ARCHIVE_DIR: root, ...env }), { minFreeBytes: 0 });
  return { archive, server, root };
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

describe(`${Archive.name} over a bucket`, () => {
  it("uploads a finished transfer to its content address, byte-exact, and keeps nothing on this machine", async () => {
    const { archive, server, root } = await s3Archive();
    expect(archive.blobs.kind).toBe("s3");
    const bytes = randomBytes(300_000);
    const stored = await archive.storeStream({ key: "d1-original", body: chunks(bytes), ext: "jpg", expectedSize: bytes.length });
    const relPath = `originals/${sha(bytes).slice(0, 2)}/${sha(bytes).slice(2, 4)}/${sha(bytes)}.jpg`;
    expect(stored).toEqual({ sha256: sha(bytes), size: bytes.length, relPath, deduplicated: false });
    expect(sha((await archive.blobs.read(relPath)) ?? Buffer.alloc(0))).toBe(sha(bytes));
    expect(await archive.hashFile(relPath)).toEqual({ sha256: sha(bytes), size: bytes.length });
    expect(await filesUnder(root)).toEqual([]);
    // The same bytes again, under another name and extension: found in the bucket, not uploaded twice.
    const again = await archive.storeStream({ key: "d2-original", body: chunks(bytes), ext: "png" });
    expect(again).toEqual({ ...stored, deduplicated: true });
    expect(await leftovers(server.dir)).toEqual({ objects: [`${server.bucket}/${relPath}`], multipartUploads: [] });
    expect(await filesUnder(root)).toEqual([]);
  });

  it("resumes a transfer cut off mid-body from this machine's partial file", async () => {
    const { archive, server } = await s3Archive();
    const bytes = randomBytes(500_000);
    await expect(archive.storeStream({ key: "d3-original", body: chunks(bytes, 50_000, 200_000), ext: "jpg" })).rejects.toMatchObject({ code: "ECONNRESET" });
    expect((await archive.partialState("d3-original")).size).toBe(200_000);
    expect((await leftovers(server.dir)).objects).toEqual([]);
    const stored = await archive.storeStream({
      key: "d3-original",
      body: chunks(bytes.subarray(200_000)),
      ext: "jpg",
      resumeFrom: 200_000,
      expectedSize: bytes.length,
    });
    expect(stored.sha256).toBe(sha(bytes));
    expect(sha((await archive.blobs.read(stored.relPath)) ?? Buffer.alloc(0))).toBe(sha(bytes));
    expect((await archive.partialState("d3-original")).size).toBe(0);
  });

  it("keeps the whole partial file and leaves the bucket empty when the upload fails", async () => {
    const { archive, server } = await s3Archive({ DVAULT_S3_BUCKET: "not-created" });
    const bytes = randomBytes(100_000);
    await expect(archive.storeStream({ key: "d4-original", body: chunks(bytes), ext: "jpg" })).rejects.toThrow(/the bucket not-created does not exist/);
    expect((await archive.partialState("d4-original")).size).toBe(bytes.length);
    expect(await leftovers(server.dir)).toEqual({ objects: [], multipartUploads: [] });
  });

  it("stores bytes and adopts files into the bucket, never as links", async () => {
    const { archive, server, root } = await s3Archive();
    const html = Buffer.from("<p>a journal</p>");
    const text = await archive.storeBytes({ bytes: html, ext: "html" });
    expect(text.deduplicated).toBe(false);
    expect((await archive.blobs.read(text.relPath))?.toString()).toBe("<p>a journal</p>");
    expect(await archive.storeBytes({ bytes: html, ext: "html" })).toEqual({ ...text, deduplicated: true });

    const outside = path.join(root, "..", `${path.basename(root)}-outside.jpg`);
    const bytes = randomBytes(50_000);
    await fs.writeFile(outside, bytes);
    cleanups.push(() => fs.rm(outside, { force: true }));
    const st = await fs.stat(outside);
    const adopted = await archive.adoptFile({
      from: outside,
      ext: "jpg",
      link: true,
      expected: { sha256: sha(bytes), size: bytes.length, ino: st.ino, mtimeMs: st.mtimeMs },
    });
    expect(adopted).toMatchObject({ sha256: sha(bytes), linked: false, deduplicated: false });
    expect(sha((await archive.blobs.read(adopted.relPath)) ?? Buffer.alloc(0))).toBe(sha(bytes));
    expect(sha(await fs.readFile(outside))).toBe(sha(bytes));
    expect((await leftovers(server.dir)).objects).toHaveLength(2);
    expect(await filesUnder(root)).toEqual([]);
    await expect(archive.hashFile("originals/00/00/none.jpg")).rejects.toMatchObject({ code: "ENOENT" });
  });
});
