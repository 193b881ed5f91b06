// The archive's objects in an S3-compatible bucket (AWS, Garage, MinIO's forks, Ceph, s3rver in tests): the
// BlobStore of blob-store.ts over the AWS SDK v3. Keys are the same relative paths as on disk, under an optional
// prefix. Big files go up in parts (lib-storage's Upload), and an upload that fails or is aborted is aborted on
// the server too, so it leaves neither an object nor an unfinished multipart upload.
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import type { Readable } from "node:stream";
import type { ListMultipartUploadsCommandOutput, S3Client } from "@aws-sdk/client-s3";
import { describeBucket, type S3StorageConfig } from "../config/storage.ts";
import { StorageFaultError } from "./storage-fault.ts";
import { registerSecret } from "../redact.ts";
import { storeErrorOf } from "./store-error.ts";
import { type BlobDownload, type BlobInfo, type BlobRange, type BlobStore, checkKey, isBlobKey } from "./blob-store.ts";

const require = createRequire(import.meta.url);

type Sdk = {
  s3: typeof import("@aws-sdk/client-s3");
  storage: typeof import("@aws-sdk/lib-storage");
  presigner: typeof import("@aws-sdk/s3-request-presigner");
};
let loaded: Sdk | undefined;

/**
 * The AWS SDK, loaded when a process first uses a bucket: it takes about 100 ms to load, which every command
 * would pay otherwise, S3 or not (docs/PERFORMANCE.md#start-up).
 */
function sdk(): Sdk {
  // The SDK warns on stderr, at its first client, that its releases after January 2027 will need Node 22. This
  // project pins a release that supports Node 20 (package.json), so the warning asks nothing of whoever reads it.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  loaded ??= {
    s3: require("@aws-sdk/client-s3") as Sdk["s3"],
    storage: require("@aws-sdk/lib-storage") as Sdk["storage"],
    presigner: require("@aws-sdk/s3-request-presigner") as Sdk["presigner"],
  };
  return loaded;
}

/** lib-storage's default part size is 5 MiB; 8 MiB halves the requests of a big file for little memory. */
export const DEFAULT_PART_SIZE = 8 * 2 ** 20;
const MAX_PARTS = 10_000;
/** Parts of one file in flight at once (lib-storage's default). */
const PARTS_IN_FLIGHT = 4;

export type S3BlobStoreOptions = {
  config: S3StorageConfig;
  /** One client per process and configuration (store.ts); a new one when not given. */
  client?: S3Client;
  /** Bytes per part of a multipart upload (at least 5 MiB, S3's smallest part); files up to it are one PutObject. */
  partSize?: number;
  /** Keys per ListObjectsV2 page; the server's own (1000 on S3) when not given. Tests page with a few. */
  listPageSize?: number;
};

/** The client every S3BlobStore of a configuration shares; its credentials are registered to be masked in logs. */
export function createS3Client(config: S3StorageConfig): S3Client {
  registerSecret(config.credentials?.secretAccessKey);
  registerSecret(config.credentials?.accessKeyId);
  return new (sdk().s3.S3Client)({
    region: config.region,
    ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials ? { credentials: { ...config.credentials } } : {}),
    // The SDK's default (a CRC checksum with every upload, checked on every download) is refused or answered
    // wrongly by several S3-compatible servers: checksums only where an operation requires one.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
}

/** No server at the endpoint (not a reset or a timeout of one that answers, which pass). */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
const CREDENTIAL_CODES = new Set(["AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "CredentialsProviderError"]);

/** "inline; filename=..." with an ASCII fallback and the exact name in RFC 5987 form. */
function inlineDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export class S3BlobStore implements BlobStore {
  readonly kind = "s3";
  readonly client: S3Client;
  private readonly config: S3StorageConfig;
  private readonly partSize: number;
  private readonly listPageSize: number | undefined;
  /** Set once the bucket answered: a 404 from HEAD then means the object, not the bucket, is missing. */
  private bucketSeen = false;

  constructor(options: S3BlobStoreOptions) {
    this.config = options.config;
    this.client = options.client ?? createS3Client(options.config);
    this.partSize = options.partSize ?? DEFAULT_PART_SIZE;
    this.listPageSize = options.listPageSize;
  }

  describe(): string {
    return describeBucket(this.config);
  }

  private objectKey(key: string): string {
    return this.config.prefix + checkKey(key);
  }

  private missingBucket(): StorageFaultError {
    return new StorageFaultError(
      { where: this.describe(), code: "NoSuchBucket" },
      `the bucket ${this.config.bucket} does not exist at ${this.describe()}: create it, or fix DVAULT_S3_BUCKET`,
    );
  }

  /**
   * A failure of the bucket itself (missing, refusing the credentials, no server answering) said in one line with
   * what to do, as a StorageFaultError (src/storage/storage-fault.ts); anything else (a 5xx, a reset) as it came.
   */
  private explain(err: unknown): unknown {
    const { code, status } = storeErrorOf(err);
    if (code === "NoSuchBucket") return this.missingBucket();
    if (CREDENTIAL_CODES.has(code) || status === 403) {
      return new StorageFaultError(
        { where: this.describe(), code: code || String(status) },
        `${this.describe()} refused dvault's credentials (${code || status}): check DVAULT_S3_ACCESS_KEY_ID and DVAULT_S3_SECRET_ACCESS_KEY and the key's rights on the bucket`,
      );
    }
    if (status === undefined && UNREACHABLE_CODES.has(code)) {
      return new StorageFaultError(
        { where: this.describe(), code },
        `nothing answers at ${this.describe()} (${code}): start the S3 server, or fix DVAULT_S3_ENDPOINT`,
      );
    }
    return err;
  }

  private isMissingObject(err: unknown): boolean {
    const { code, status } = storeErrorOf(err);
    return code === "NoSuchKey" || code === "NotFound" || (status === 404 && code !== "NoSuchBucket");
  }

  /**
   * HEAD answers a missing bucket with the same bare 404 as a missing object. Before the first such answer is
   * taken to mean "no object" (verify would count the file as lost), the bucket is checked to be there.
   */
  private async assertBucket(): Promise<void> {
    if (this.bucketSeen) return;
    try {
      await this.client.send(new (sdk().s3.HeadBucketCommand)({ Bucket: this.config.bucket }));
    } catch (err) {
      const { code, status } = storeErrorOf(err);
      throw status === 404 || code === "NotFound" ? this.missingBucket() : this.explain(err);
    }
    this.bucketSeen = true;
  }

  async openRead(key: string, range?: BlobRange): Promise<BlobDownload | undefined> {
    const Key = this.objectKey(key);
    const header = range ? `bytes=${range.start}-${range.end ?? ""}` : undefined;
    try {
      const out = await this.client.send(new (sdk().s3.GetObjectCommand)({ Bucket: this.config.bucket, Key, ...(header ? { Range: header } : {}) }));
      this.bucketSeen = true;
      const body = out.Body as Readable;
      const length = out.ContentLength ?? 0;
      if (!range) return { body, size: length };
      // "bytes 2-4/11": the part sent, and the whole object's size.
      const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(out.ContentRange ?? "");
      if (!m) return { body, size: length, range: { start: 0, end: length - 1 } };
      return { body, size: Number(m[3]), range: { start: Number(m[1]), end: Number(m[2]) } };
    } catch (err) {
      if (this.isMissingObject(err)) return undefined;
      const { code, status } = storeErrorOf(err);
      if (code === "InvalidRange" || status === 416) {
        throw new RangeError(`range ${range?.start}-${range?.end ?? ""} lies outside ${key}`);
      }
      throw this.explain(err);
    }
  }

  async putFile(key: string, file: string, opts: { signal?: AbortSignal; contentType?: string } = {}): Promise<void> {
    const Key = this.objectKey(key);
    opts.signal?.throwIfAborted();
    // S3 takes at most 10 000 parts: a file bigger than that many parts gets bigger ones.
    const { size } = await fs.stat(file);
    const partSize = Math.max(this.partSize, Math.ceil(size / MAX_PARTS));
    const body = createReadStream(file, { highWaterMark: 1024 * 1024 });
    // An abort ends the file's stream rather than the Upload itself: Upload.abort() rejects at once and aborts
    // the multipart upload later, in the background; a failed body makes done() abort it first, then reject.
    const onAbort = () => body.destroy(opts.signal?.reason instanceof Error ? opts.signal.reason : new Error("upload aborted"));
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const upload = new (sdk().storage.Upload)({
      client: this.client,
      params: { Bucket: this.config.bucket, Key, Body: body, ...(opts.contentType ? { ContentType: opts.contentType } : {}) },
      partSize,
      queueSize: PARTS_IN_FLIGHT,
      leavePartsOnError: false,
    });
    try {
      await upload.done();
      this.bucketSeen = true;
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw this.explain(err);
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
      body.destroy();
    }
  }

  async presignGet(key: string, opts: { ttlSeconds: number; contentType?: string; filename?: string }): Promise<string | undefined> {
    if (!this.config.presign) return undefined;
    const command = new (sdk().s3.GetObjectCommand)({
      Bucket: this.config.bucket,
      Key: this.objectKey(key),
      ...(opts.contentType ? { ResponseContentType: opts.contentType } : {}),
      ...(opts.filename ? { ResponseContentDisposition: inlineDisposition(opts.filename) } : {}),
    });
    return sdk().presigner.getSignedUrl(this.client, command, { expiresIn: Math.max(1, Math.round(opts.ttlSeconds)) });
  }

  async read(key: string): Promise<Buffer | undefined> {
    const got = await this.openRead(key);
    if (!got) return undefined;
    const chunks: Buffer[] = [];
    for await (const chunk of got.body as AsyncIterable<Buffer>) chunks.push(chunk);
    return Buffer.concat(chunks);
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    const Key = this.objectKey(key);
    try {
      const out = await this.client.send(new (sdk().s3.HeadObjectCommand)({ Bucket: this.config.bucket, Key }));
      this.bucketSeen = true;
      return { key, size: out.ContentLength ?? 0 };
    } catch (err) {
      if (!this.isMissingObject(err)) throw this.explain(err);
      await this.assertBucket();
      return undefined;
    }
  }

  async write(key: string, bytes: Uint8Array): Promise<void> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new (sdk().s3.PutObjectCommand)({ Bucket: this.config.bucket, Key, Body: bytes, ContentLength: bytes.byteLength }));
      this.bucketSeen = true;
    } catch (err) {
      throw this.explain(err);
    }
  }

  async remove(key: string): Promise<void> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new (sdk().s3.DeleteObjectCommand)({ Bucket: this.config.bucket, Key }));
    } catch (err) {
      if (!this.isMissingObject(err)) throw this.explain(err);
    }
  }

  /**
   * Aborts the multipart uploads under this store's prefix begun before `olderThan`. A process killed mid-upload
   * (SIGKILL, a lost machine) cannot abort its own: its parts stay in the bucket, billed and invisible to a
   * listing of objects, until someone aborts them. No live upload of dvault runs for a day (docs/RELIABILITY.md),
   * so the maintenance host sweeps what is older. Only keys under `folders` (dvault's own, when given) are
   * touched: with no DVAULT_S3_PREFIX the bucket may hold other programs' uploads. A server without
   * ListMultipartUploads answers `unsupported`.
   */
  async abortStaleUploads(olderThan: Date, folders?: readonly string[]): Promise<{ aborted: number; unsupported: boolean }> {
    const ours = (key: string) =>
      key.startsWith(this.config.prefix) && (!folders || folders.some((f) => key.slice(this.config.prefix.length).startsWith(`${f}/`)));
    const { ListMultipartUploadsCommand, AbortMultipartUploadCommand } = sdk().s3;
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      let page: ListMultipartUploadsCommandOutput;
      try {
        page = await this.client.send(
          new ListMultipartUploadsCommand({
            Bucket: this.config.bucket,
            ...(this.config.prefix ? { Prefix: this.config.prefix } : {}),
            ...(keyMarker !== undefined ? { KeyMarker: keyMarker } : {}),
            ...(uploadIdMarker !== undefined ? { UploadIdMarker: uploadIdMarker } : {}),
          }),
        );
      } catch (err) {
        const { code, status } = storeErrorOf(err);
        if (code === "NotImplemented" || status === 501) return { aborted, unsupported: true };
        throw this.explain(err);
      }
      for (const u of page.Uploads ?? []) {
        if (u.Key === undefined || u.UploadId === undefined || !ours(u.Key)) continue;
        if (!(u.Initiated instanceof Date) || u.Initiated.getTime() >= olderThan.getTime()) continue;
        try {
          await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.config.bucket, Key: u.Key, UploadId: u.UploadId }));
          aborted++;
        } catch (err) {
          // Completed or aborted meanwhile: nothing left to abort.
          if (storeErrorOf(err).code !== "NoSuchUpload") throw this.explain(err);
        }
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker !== undefined);
    return { aborted, unsupported: false };
  }

  async *list(prefix: string): AsyncIterable<BlobInfo> {
    if (prefix !== "") checkKey(prefix.replace(/\/$/, ""));
    const full = this.config.prefix + prefix;
    let token: string | undefined;
    do {
      const page = await this.client
        .send(new (sdk().s3.ListObjectsV2Command)({ Bucket: this.config.bucket, Prefix: full, MaxKeys: this.listPageSize, ContinuationToken: token }))
        .catch((err: unknown) => {
          throw this.explain(err);
        });
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined || !o.Key.startsWith(this.config.prefix)) continue;
        // Not an object dvault writes: a folder marker (`dvault/`, `originals/`), which the AWS console's "Create
        // folder" and other tools put in a bucket, or a key with an empty or `..` segment. Listed, it stopped every
        // reader that opens what it lists (a backup, storage migrate) at its key.
        const key = o.Key.slice(this.config.prefix.length);
        if (!isBlobKey(key)) continue;
        yield { key, size: o.Size ?? 0 };
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}
