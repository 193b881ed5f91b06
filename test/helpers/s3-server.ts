// A real S3-compatible server on loopback for tests and benches (npm s3rver, no Docker): its own data folder,
// one bucket, and the DVAULT_* variables a dvault process needs to keep its archive there.
//
// Where s3rver 3.7 falls short, and what this helper does about it:
// - AbortMultipartUpload (DELETE ?uploadId=) is answered 405 MethodNotAllowed, so an aborted upload's parts
//   would stay forever: a middleware put in front of its router does what S3 does (drops the upload's parts).
// - ListObjectsV2 fails (InternalError) on any listing longer than one page: its continuation tokens are
//   DES-encrypted, which OpenSSL 3 (Node 18 and later) no longer offers. It also lists in the order of its
//   folders on disk rather than S3's key order, and its paging then skips keys. The helper answers
//   ListObjectsV2 itself from s3rver's store: key order, the last key (base64url) as the token.
// - ListMultipartUploads (GET /<bucket>?uploads) is NotImplemented: the helper answers it from the data folder
//   (each upload's folder holds its key; the key file's time stands for when it was initiated), in key order,
//   one page, as S3 documents the answer. leftovers() reads the same folder.
// - V4 signatures are not checked at all (headers or presigned URLs); a presigned URL's expiry is.
// - A body sent aws-chunked (the AWS SDK's default checksums on a streamed upload) is stored with its chunk
//   framing and CRC trailer as the object's bytes; dvault's client sends checksums only when required.
// - PutObject answers before the object's file is written: its store resolves as soon as the bytes are handed to a
//   write stream, which opens the file later. A DELETE of the same key right after (dvault's preflight puts a probe
//   object and removes it: src/storage/preflight.ts) removes the folder it leaves empty, the late open fails with
//   ENOENT, and the error event, with no listener, ends the process (seen once in CI). The helper's putObject
//   opens the file before it takes the body and answers once the file is written and closed.
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import fs from "node:fs/promises";
import { PassThrough, Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/free-port.ts";

type KoaContext = {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
  type: string;
  store: S3rverStore;
};
type ListedObject = { key: string; size: number; lastModifiedDate: Date; metadata: Record<string, string> };
type StoredObject = { bucket: string; key: string; content: Buffer | NodeJS.ReadableStream; metadata: Record<string, string> };
type S3rverStore = {
  getBucket(bucket: string): Promise<unknown>;
  getResourcePath(bucket: string, key: string, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
  putObject(object: StoredObject): Promise<{ size: number; md5: string }>;
  listObjects(bucket: string, opts: { prefix: string; startAfter: string; maxKeys: number; delimiter: string }): Promise<{ objects: ListedObject[] }>;
};
type KoaMiddleware = (ctx: KoaContext, next: () => Promise<void>) => Promise<void>;
type S3rverInstance = { middleware: KoaMiddleware[]; store: S3rverStore; run(): Promise<unknown>; close(): Promise<void> };
type S3rverClass = new (opts: Record<string, unknown>) => S3rverInstance;

export const S3_TEST_ACCESS_KEY = "S3RVER";
export const S3_TEST_SECRET_KEY = "S3RVER";

/** Where s3rver keeps a bucket's unfinished multipart uploads (FilesystemStore.getResourcePath with no key). */
const UPLOADS_DIR = "._S3rver_uploads";
/** The suffix of the file that holds an object's bytes; its key is the path before it. */
const OBJECT_SUFFIX = "._S3rver_object";

export type S3TestServer = {
  endpoint: string;
  bucket: string;
  /** s3rver's data folder: <dir>/<bucket>/... */
  dir: string;
  /** DVAULT_STORAGE=s3 and the DVAULT_S3_* variables pointing a dvault process at this server. */
  env: Record<string, string>;
  close(): Promise<void>;
};

function loadS3rver(): S3rverClass {
  // s3rver is CommonJS without type declarations: the few members used here are typed above.
  return createRequire(import.meta.url)("s3rver") as S3rverClass;
}

/** AbortMultipartUpload as S3 answers it: the parts are gone, 204. */
function abortMultipartUpload(dir: string): KoaMiddleware {
  return async (ctx, next) => {
    const uploadId = ctx.query.uploadId;
    if (ctx.method !== "DELETE" || typeof uploadId !== "string") return next();
    const bucket = decodeURIComponent(ctx.path.split("/")[1] ?? "");
    if (!/^[0-9a-f]+$/.test(uploadId) || !/^[a-z0-9.-]+$/.test(bucket)) return next();
    await fs.rm(path.join(dir, bucket, UPLOADS_DIR, uploadId), { recursive: true, force: true });
    ctx.status = 204;
    ctx.body = "";
  };
}

const xml = (v: string | number) => String(v).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? "";

/** ListObjectsV2 (GET /<bucket>?list-type=2) from s3rver's own store, with tokens that need no DES. */
function listObjectsV2(): KoaMiddleware {
  return async (ctx, next) => {
    const segments = ctx.path.split("/").filter(Boolean);
    if (ctx.method !== "GET" || one(ctx.query["list-type"]) !== "2" || segments.length !== 1) return next();
    const bucket = decodeURIComponent(segments[0] ?? "");
    if (!(await ctx.store.getBucket(bucket))) return next();
    const prefix = one(ctx.query.prefix);
    const delimiter = one(ctx.query.delimiter);
    const token = one(ctx.query["continuation-token"]);
    const startAfter = token ? Buffer.from(token, "base64url").toString("utf8") : one(ctx.query["start-after"]);
    const maxKeys = Math.min(1000, Number(one(ctx.query["max-keys"]) || 1000));
    // Every key under the prefix, in S3's order (UTF-8 bytes), then the page after startAfter: s3rver's own
    // paging follows its folders' order and skips keys that sort between them.
    const everything = await ctx.store.listObjects(bucket, { prefix, startAfter: "", maxKeys: Number.POSITIVE_INFINITY, delimiter: "" });
    const entries: Array<{ key: string; object?: ListedObject }> = [];
    for (const o of everything.objects.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)))) {
      const cut = delimiter ? o.key.indexOf(delimiter, prefix.length) : -1;
      if (cut < 0) entries.push({ key: o.key, object: o });
      else if (entries.at(-1)?.key !== o.key.slice(0, cut + delimiter.length)) entries.push({ key: o.key.slice(0, cut + delimiter.length) });
    }
    const after = entries.filter((e) => Buffer.compare(Buffer.from(e.key), Buffer.from(startAfter)) > 0);
    const page = after.slice(0, maxKeys);
    const truncated = after.length > page.length;
    const last = page.at(-1)?.key;
    const parts = [
      `<Name>${xml(bucket)}</Name><Prefix>${xml(prefix)}</Prefix><KeyCount>${page.length}</KeyCount><MaxKeys>${maxKeys}</MaxKeys>`,
      `<IsTruncated>${truncated}</IsTruncated>`,
      token ? `<ContinuationToken>${xml(token)}</ContinuationToken>` : "",
      truncated && last !== undefined ? `<NextContinuationToken>${Buffer.from(last).toString("base64url")}</NextContinuationToken>` : "",
      ...page.map(({ key, object: o }) =>
        o
          ? `<Contents><Key>${xml(key)}</Key><LastModified>${o.lastModifiedDate.toISOString()}</LastModified><ETag>${xml(o.metadata.etag ?? "")}</ETag><Size>${o.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`
          : `<CommonPrefixes><Prefix>${xml(key)}</Prefix></CommonPrefixes>`,
      ),
    ];
    ctx.type = "application/xml";
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${parts.join("")}</ListBucketResult>`;
  };
}

/** ListMultipartUploads (GET /<bucket>?uploads): every unfinished upload under the prefix, from the data folder. */
function listMultipartUploads(dir: string): KoaMiddleware {
  return async (ctx, next) => {
    const segments = ctx.path.split("/").filter(Boolean);
    if (ctx.method !== "GET" || !("uploads" in ctx.query) || segments.length !== 1) return next();
    const bucket = decodeURIComponent(segments[0] ?? "");
    if (!/^[a-z0-9.-]+$/.test(bucket) || !(await ctx.store.getBucket(bucket))) return next();
    const prefix = one(ctx.query.prefix);
    const uploadsDir = path.join(dir, bucket, UPLOADS_DIR);
    const uploads: Array<{ key: string; id: string; initiated: Date }> = [];
    for (const u of await fs.readdir(uploadsDir, { withFileTypes: true }).catch(() => [])) {
      if (!u.isDirectory()) continue;
      const keyFile = path.join(uploadsDir, u.name, "key");
      const key = await fs.readFile(keyFile, "utf8").catch(() => undefined);
      const st = await fs.stat(keyFile).catch(() => undefined);
      if (key === undefined || !st || !key.startsWith(prefix)) continue;
      uploads.push({ key, id: u.name, initiated: st.mtime });
    }
    uploads.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)) || (a.id < b.id ? -1 : 1));
    ctx.type = "application/xml";
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xml(bucket)}</Bucket><Prefix>${xml(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>${uploads
      .map(
        (u) =>
          `<Upload><Key>${xml(u.key)}</Key><UploadId>${xml(u.id)}</UploadId><StorageClass>STANDARD</StorageClass><Initiated>${u.initiated.toISOString()}</Initiated></Upload>`,
      )
      .join("")}</ListMultipartUploadsResult>`;
  };
}

/** s3rver's PutObject in the store's own layout (the object's file, then its metadata), resolved once the file is closed. */
function putWhenWritten(store: S3rverStore): S3rverStore["putObject"] {
  return async (object) => {
    const file = store.getResourcePath(object.bucket, object.key, "object");
    // The folder made, then the file opened before any byte is taken: a DELETE of another key in between may remove
    // the folder it emptied (s3rver's deleteObject), so it is made again.
    let handle: fs.FileHandle | undefined;
    for (let tries = 1; !handle; tries++) {
      await fs.mkdir(path.dirname(file), { recursive: true });
      handle = await fs.open(file, "w").catch((err: NodeJS.ErrnoException) => {
        if (err.code !== "ENOENT" || tries >= 5) throw err;
        return undefined;
      });
    }
    // The object's md5 and size, taken from the bytes on their way to the file (a second reader of the same stream).
    const md5 = createHash("md5");
    let size = 0;
    const tap = new PassThrough().on("data", (chunk: Buffer) => {
      md5.update(chunk);
      size += chunk.length;
    });
    const body = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
    await pipeline(body, tap, handle.createWriteStream());
    const digest = md5.digest("hex");
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}

export async function startS3Server(opts: { bucket?: string } = {}): Promise<S3TestServer> {
  const bucket = opts.bucket ?? "dvault-test";
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-s3rver-"));
  const port = await freePort();
  const S3rver = loadS3rver();
  const server = new S3rver({
    address: "127.0.0.1",
    port,
    directory: dir,
    silent: true,
    vhostBuckets: false,
    configureBuckets: [{ name: bucket }],
  });
  server.store.putObject = putWhenWritten(server.store);
  // Koa composes its middleware when the server starts listening, so these run before s3rver's router.
  server.middleware.unshift(abortMultipartUpload(dir), listObjectsV2(), listMultipartUploads(dir));
  await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    dir,
    env: {
      DVAULT_STORAGE: "s3",
      DVAULT_S3_ENDPOINT: endpoint,
      DVAULT_S3_BUCKET: bucket,
      DVAULT_S3_REGION: "us-east-1",
      DVAULT_S3_ACCESS_KEY_ID: S3_TEST_ACCESS_KEY,
      DVAULT_S3_SECRET_ACCESS_KEY: S3_TEST_SECRET_KEY,
      DVAULT_S3_FORCE_PATH_STYLE: "true",
    },
    async close() {
      await server.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

async function walkFiles(root: string): Promise<string[]> {
  const entries = await fs.readdir(root, { withFileTypes: true, recursive: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/**
 * What the server's data folder holds, read from disk (s3rver cannot list unfinished uploads): every object's
 * key as "<bucket>/<key>", and every multipart upload begun and neither completed nor aborted as
 * "<bucket>/<uploadId> <key>".
 */
export async function leftovers(dir: string): Promise<{ objects: string[]; multipartUploads: string[] }> {
  const objects: string[] = [];
  const multipartUploads: string[] = [];
  const buckets = await fs.readdir(dir, { withFileTypes: true });
  for (const b of buckets.filter((e) => e.isDirectory())) {
    const bucketDir = path.join(dir, b.name);
    for (const file of await walkFiles(bucketDir)) {
      const rel = path.relative(bucketDir, file).split(path.sep).join("/");
      if (rel.startsWith(`${UPLOADS_DIR}/`)) continue;
      if (rel.endsWith(OBJECT_SUFFIX)) objects.push(`${b.name}/${rel.slice(0, -OBJECT_SUFFIX.length)}`);
    }
    const uploads = await fs.readdir(path.join(bucketDir, UPLOADS_DIR), { withFileTypes: true }).catch(() => []);
    for (const u of uploads.filter((e) => e.isDirectory())) {
      const key = await fs.readFile(path.join(bucketDir, UPLOADS_DIR, u.name, "key"), "utf8").catch(() => "?");
      multipartUploads.push(`${b.name}/${u.name} ${key}`);
    }
  }
  return { objects: objects.sort(), multipartUploads: multipartUploads.sort() };
}
