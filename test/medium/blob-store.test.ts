// One behaviour suite for every BlobStore driver (src/storage/blob-store.ts): the archive folder, and an
// S3-compatible bucket on a real server on loopback (s3rver, test/helpers/s3-server.ts). Whatever reads or
// writes the archive may count on exactly these answers, whichever store is configured.
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import type { S3StorageConfig } from "../../src/config/storage.ts";
import { UserError } from "../../src/errors.ts";
import { type BlobStore, LocalBlobStore } from "../../src/storage/blob-store.ts";
import { LocalDisk } from "../../src/storage/local-disk.ts";
import { S3BlobStore } from "../../src/storage/s3-blob-store.ts";
import { leftovers, S3_TEST_ACCESS_KEY, S3_TEST_SECRET_KEY, startS3Server } from "../helpers/s3-server.ts";

/** S3's smallest part: the multipart tests use it so that a file of a few parts stays small. */
const PART = 5 * 2 ** 20;

type Opened = {
  store: BlobStore;
  /** Every object, and every unfinished upload, the store's backing holds, by key. */
  leftovers(): Promise<{ objects: string[]; uploads: string[] }>;
};
type Driver = { name: "local" | "s3"; open(opts?: { presign?: boolean }): Promise<Opened> };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tempDir(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-blobs-"));
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
  return dir;
}

const local: Driver = {
  name: "local",
  async open() {
    const root = path.join(await tempDir(), "archive");
    const store = new LocalBlobStore(new LocalDisk({ root, fileMode: 0o600, dirMode: 0o700 }));
    return {
      store,
      async leftovers() {
        // Partial files count: a failed write must not leave one behind either.
        const entries = await fs.readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
        const objects = entries.filter((e) => e.isFile()).map((e) => path.relative(root, path.join(e.parentPath, e.name)));
        return { objects: objects.sort(), uploads: [] };
      },
    };
  },
};

const s3: Driver = {
  name: "s3",
  async open(opts = {}) {
    const server = await startS3Server();
    cleanups.push(() => server.close());
    const config: S3StorageConfig = {
      kind: "s3",
      endpoint: server.endpoint,
      bucket: server.bucket,
      region: "us-east-1",
      prefix: "vault/",
      forcePathStyle: true,
      credentials: { accessKeyId: S3_TEST_ACCESS_KEY, secretAccessKey: S3_TEST_SECRET_KEY },
      presign: opts.presign ?? false,
      presignTtlSeconds: 60,
    };
    const store = new S3BlobStore({ config, partSize: PART, listPageSize: 2 });
    cleanups.push(async () => store.client.destroy());
    return {
      store,
      async leftovers() {
        const found = await leftovers(server.dir);
        const strip = (s: string) => s.slice(`${server.bucket}/vault/`.length);
        return { objects: found.objects.map(strip), uploads: found.multipartUploads };
      },
    };
  },
};

async function text(body: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

async function all(it: AsyncIterable<{ key: string; size: number }>): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of it) keys.push(`${b.key}:${b.size}`);
  return keys;
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("BlobStore", () => {
  describe.each([local, s3])("$name", (driver) => {
    it("answers undefined for a missing object, and removing one is no error", async () => {
      const { store } = await driver.open();
      expect(await store.read("originals/00/00/none.jpg")).toBeUndefined();
      expect(await store.stat("originals/00/00/none.jpg")).toBeUndefined();
      expect(await store.openRead("originals/00/00/none.jpg")).toBeUndefined();
      expect(await store.openRead("originals/00/00/none.jpg", { start: 0 })).toBeUndefined();
      await expect(store.remove("originals/00/00/none.jpg")).resolves.toBeUndefined();
      expect(await all(store.list("originals/"))).toEqual([]);
    });

    it("writes, reads, overwrites and removes whole objects", async () => {
      const { store, leftovers } = await driver.open();
      await store.write("thumbnails/ab/cd/x.webp", Buffer.from("first version"));
      expect((await store.read("thumbnails/ab/cd/x.webp"))?.toString()).toBe("first version");
      await store.write("thumbnails/ab/cd/x.webp", new Uint8Array(Buffer.from("second")));
      expect((await store.read("thumbnails/ab/cd/x.webp"))?.toString()).toBe("second");
      expect(await store.stat("thumbnails/ab/cd/x.webp")).toEqual({ key: "thumbnails/ab/cd/x.webp", size: 6 });
      await store.write("empty.bin", new Uint8Array(0));
      expect(await store.stat("empty.bin")).toEqual({ key: "empty.bin", size: 0 });
      expect((await store.read("empty.bin"))?.length).toBe(0);
      await store.remove("thumbnails/ab/cd/x.webp");
      await store.remove("empty.bin");
      expect(await store.read("thumbnails/ab/cd/x.webp")).toBeUndefined();
      expect(await leftovers()).toEqual({ objects: [], uploads: [] });
    });

    it("lists in key order under a folder or a partial name, across pages", async () => {
      const { store } = await driver.open();
      const keys = ["a/b/c2.txt", "a/b/c10.txt", "a/b-c.txt", "a/b/d/e.txt", "a/b/c1.txt", "z.txt", "a/bc.txt"];
      for (const key of keys) await store.write(key, Buffer.from(key));
      const sized = (k: string) => `${k}:${Buffer.byteLength(k)}`;
      // Byte order, as a bucket lists: "-" (0x2d) before "/" (0x2f) before letters.
      expect(await all(store.list(""))).toEqual(["a/b-c.txt", "a/b/c1.txt", "a/b/c10.txt", "a/b/c2.txt", "a/b/d/e.txt", "a/bc.txt", "z.txt"].map(sized));
      expect(await all(store.list("a/b/"))).toEqual(["a/b/c1.txt", "a/b/c10.txt", "a/b/c2.txt", "a/b/d/e.txt"].map(sized));
      expect(await all(store.list("a/b/c1"))).toEqual(["a/b/c1.txt", "a/b/c10.txt"].map(sized));
      expect(await all(store.list("a/b"))).toEqual(["a/b-c.txt", "a/b/c1.txt", "a/b/c10.txt", "a/b/c2.txt", "a/b/d/e.txt", "a/bc.txt"].map(sized));
      expect(await all(store.list("q/"))).toEqual([]);
    });

    it("reads a range of an object, and refuses one past its end", async () => {
      const { store } = await driver.open();
      await store.write("r.txt", Buffer.from("hello world"));
      const mid = await store.openRead("r.txt", { start: 2, end: 4 });
      expect(mid && { size: mid.size, range: mid.range, text: await text(mid.body) }).toEqual({ size: 11, range: { start: 2, end: 4 }, text: "llo" });
      const tail = await store.openRead("r.txt", { start: 6 });
      expect(tail && { range: tail.range, text: await text(tail.body) }).toEqual({ range: { start: 6, end: 10 }, text: "world" });
      const clipped = await store.openRead("r.txt", { start: 9, end: 99 });
      expect(clipped && { range: clipped.range, text: await text(clipped.body) }).toEqual({ range: { start: 9, end: 10 }, text: "ld" });
      const whole = await store.openRead("r.txt");
      expect(whole && { size: whole.size, range: whole.range, text: await text(whole.body) }).toEqual({ size: 11, range: undefined, text: "hello world" });
      await expect(store.openRead("r.txt", { start: 11 })).rejects.toBeInstanceOf(RangeError);
    });

    it("puts a file of several parts byte-exact, leaving the file and no upload behind", async () => {
      const { store, leftovers } = await driver.open();
      const dir = await tempDir();
      const bytes = randomBytes(2 * PART + 12_345);
      const file = path.join(dir, "big.bin");
      await fs.writeFile(file, bytes);
      await store.putFile("originals/ab/cd/big.bin", file, { contentType: "application/octet-stream" });
      expect(await store.stat("originals/ab/cd/big.bin")).toEqual({ key: "originals/ab/cd/big.bin", size: bytes.length });
      expect(sha((await store.read("originals/ab/cd/big.bin")) ?? Buffer.alloc(0))).toBe(sha(bytes));
      expect(sha(await fs.readFile(file))).toBe(sha(bytes));
      // A small file is one request: the same answer.
      await fs.writeFile(path.join(dir, "small.txt"), "small");
      await store.putFile("originals/ab/cd/small.txt", path.join(dir, "small.txt"));
      expect((await store.read("originals/ab/cd/small.txt"))?.toString()).toBe("small");
      expect(await leftovers()).toEqual({ objects: ["originals/ab/cd/big.bin", "originals/ab/cd/small.txt"], uploads: [] });
    });

    it("leaves nothing when putFile fails or is aborted before it starts", async () => {
      const { store, leftovers } = await driver.open();
      const dir = await tempDir();
      await expect(store.putFile("originals/00/11/missing.bin", path.join(dir, "missing.bin"))).rejects.toMatchObject({ code: "ENOENT" });
      await fs.writeFile(path.join(dir, "f.bin"), "bytes");
      const aborted = new AbortController();
      aborted.abort(new Error("stopped by the test"));
      await expect(store.putFile("originals/00/11/f.bin", path.join(dir, "f.bin"), { signal: aborted.signal })).rejects.toThrow("stopped by the test");
      expect(await leftovers()).toEqual({ objects: [], uploads: [] });
    });

    it("refuses keys that are not relative paths", async () => {
      const { store } = await driver.open();
      const file = path.join(await tempDir(), "f");
      await fs.writeFile(file, "x");
      for (const key of ["", "/abs", "../up", "a/../b", "a//b", "a/./b", "a/", "a\\b", "a\0b"]) {
        await expect(store.read(key), key).rejects.toBeInstanceOf(RangeError);
        await expect(store.stat(key), key).rejects.toBeInstanceOf(RangeError);
        await expect(store.openRead(key), key).rejects.toBeInstanceOf(RangeError);
        await expect(store.write(key, Buffer.from("x")), key).rejects.toBeInstanceOf(RangeError);
        await expect(store.putFile(key, file), key).rejects.toBeInstanceOf(RangeError);
        await expect(store.remove(key), key).rejects.toBeInstanceOf(RangeError);
      }
      await expect(all(store.list("../"))).rejects.toBeInstanceOf(RangeError);
    });

    it("hands out a presigned URL only when the store is a bucket configured to", async () => {
      const { store } = await driver.open();
      await store.write("p.txt", Buffer.from("presigned"));
      expect(await store.presignGet("p.txt", { ttlSeconds: 60 })).toBeUndefined();
      if (driver.name === "local") return;
      const { store: signing } = await driver.open({ presign: true });
      await signing.write("originals/ab/cd/p.txt", Buffer.from("presigned bytes"));
      const url = await signing.presignGet("originals/ab/cd/p.txt", { ttlSeconds: 60, contentType: "text/plain", filename: "Ünïcode name.txt" });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dvault-test\/vault\/originals\/ab\/cd\/p\.txt\?/);
      const res = await fetch(url ?? "");
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/plain");
      expect(res.headers.get("content-disposition")).toBe(`inline; filename="_n_code name.txt"; filename*=UTF-8''${encodeURIComponent("Ünïcode name.txt")}`);
      expect(await res.text()).toBe("presigned bytes");
      expect(new URL(url ?? "").searchParams.get("X-Amz-Expires")).toBe("60");
      // Past its lifetime the URL is refused. (s3rver checks a presigned URL's expiry, not its V4 signature:
      // that the signature covers the key and the secret is left to real servers.)
      const signed = new URL(url ?? "");
      signed.searchParams.set("X-Amz-Date", new Date(Date.now() - 3_600_000).toISOString().replace(/[-:]|\.\d+/g, ""));
      expect((await fetch(signed)).status).toBe(403);
    });
  });

  // What only a bucket has: checksums, a bucket of its own to be missing, multipart uploads to abort.
  describe(S3BlobStore.name, () => {
    it("sends checksums only where required: a streamed body arrives as its bytes", async () => {
      const { store } = await s3.open();
      if (!(store instanceof S3BlobStore)) throw new Error("the s3 driver opens an S3BlobStore");
      // With the SDK's default (WHEN_SUPPORTED) a streamed PutObject goes out aws-chunked with a CRC32 trailer,
      // and s3rver stores that framing as the object: "6\r\nhello \r\n...x-amz-checksum-crc32:...".
      const body = Readable.from([Buffer.from("hello "), Buffer.from("stream")]);
      await store.client.send(new PutObjectCommand({ Bucket: "dvault-test", Key: "vault/streamed.txt", Body: body, ContentLength: 12 }));
      expect((await store.read("streamed.txt"))?.toString()).toBe("hello stream");
    });

    it("says in one line when the bucket is missing or the key refused, never that an object is missing", async () => {
      const server = await startS3Server();
      cleanups.push(() => server.close());
      const base: S3StorageConfig = {
        kind: "s3",
        endpoint: server.endpoint,
        bucket: "no-such-bucket",
        region: "us-east-1",
        prefix: "",
        forcePathStyle: true,
        credentials: { accessKeyId: S3_TEST_ACCESS_KEY, secretAccessKey: S3_TEST_SECRET_KEY },
        presign: false,
        presignTtlSeconds: 60,
      };
      const noBucket = new S3BlobStore({ config: base });
      const wrongKey = new S3BlobStore({
        config: { ...base, bucket: server.bucket, credentials: { accessKeyId: "NOT-A-KEY", secretAccessKey: "whatever-secret" } },
      });
      cleanups.push(async () => {
        noBucket.client.destroy();
        wrongKey.client.destroy();
      });
      await expect(noBucket.stat("a.txt")).rejects.toThrow(
        /^the bucket no-such-bucket does not exist at s3:\/\/no-such-bucket\/ at 127\.0\.0\.1:\d+: create it/,
      );
      await expect(noBucket.openRead("a.txt")).rejects.toBeInstanceOf(UserError);
      await expect(noBucket.write("a.txt", Buffer.from("x"))).rejects.toBeInstanceOf(UserError);
      await expect(wrongKey.read("a.txt")).rejects.toThrow(/refused dvault's credentials \(InvalidAccessKeyId\)/);
      const refused = await wrongKey.stat("a.txt").catch((err: unknown) => err as Error);
      expect(refused).toBeInstanceOf(UserError);
      expect((refused as Error).message).toMatch(/refused dvault's credentials \(403\): check DVAULT_S3_ACCESS_KEY_ID/);
      expect((refused as Error).message).not.toContain("whatever-secret");
    });

    it("aborts a multipart upload cut off mid-file: no object, no unfinished upload", async () => {
      const { store, leftovers } = await s3.open();
      // A named pipe as the file: the test decides when bytes arrive, so the abort lands mid-upload for sure.
      const fifo = path.join(await tempDir(), "pipe");
      execFileSync("mkfifo", [fifo]);
      const aborted = new AbortController();
      const put = store.putFile("originals/ab/cd/cut.bin", fifo, { signal: aborted.signal });
      const outcome = put.then(
        () => "stored",
        (err: unknown) => (err as Error).message,
      );
      const writer = await fs.open(fifo, "w");
      await writer.write(randomBytes(PART + 1024));
      // The first part has arrived in an upload begun on the server.
      await expect.poll(async () => (await leftovers()).uploads.length, { timeout: 10_000 }).toBe(1);
      aborted.abort(new Error("cut off by the test"));
      // The stream's read of the pipe ends (and with it the stream) once the writer's end is closed.
      await writer.close();
      expect(await outcome).toBe("cut off by the test");
      expect(await leftovers()).toEqual({ objects: [], uploads: [] });
    });
  });
});
