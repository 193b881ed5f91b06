// One run of bench/storage.ts, in its own process so its CPU time is its own: every file of the list downloaded
// from the simulator's CDN into the archive, one after the other, by one of three paths:
//   local  dvault's transfer path into the archive folder (sha256 on the way, fsync, rename);
//   spool  the same transfer path with DVAULT_STORAGE=s3: the partial file, then an upload (what dvault does);
//   temp   the alternative: the body streamed straight to the bucket under a temporary key while hashing, then
//          CopyObject to its content address and DeleteObject of the temporary key. Not dvault's path: here only.
// Args: <json file: {urls, sizes}> <archive dir> <local|spool|temp>; the bucket's DVAULT_* variables in the
// environment. Prints one JSON line.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import { PassThrough } from "node:stream";
import { CopyObjectCommand, DeleteObjectCommand } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import got from "got";
import { loadConfig } from "../src/config.ts";
import { transferToArchive } from "../src/downloads/transfer.ts";
import { createLogger } from "../src/log.ts";
import { originalRelPath } from "../src/storage/layout.ts";
import { DEFAULT_PART_SIZE, type S3BlobStore } from "../src/storage/s3-blob-store.ts";
import { openArchive } from "../src/storage/store.ts";

const [listFile, dir, mode] = process.argv.slice(2);
if (!listFile || !dir || !["local", "spool", "temp"].includes(mode ?? "")) throw new Error("usage: storage-run.ts <list.json> <dir> <local|spool|temp>");
const { urls, sizes } = JSON.parse(fs.readFileSync(listFile, "utf8")) as { urls: string[]; sizes: number[] };
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("DVAULT_S3_")));
const config = loadConfig({ HOME: dir, LOG_LEVEL: "silent", DVAULT_ARCHIVE_DIR: dir, ...env, DVAULT_STORAGE: mode === "local" ? "local" : "s3" });
const archive = openArchive(config, { minFreeBytes: 0 });
const log = createLogger({ level: "warn", pretty: false });

/** The temp-key path: one pass over the body into a multipart upload, then a server-side copy. */
async function viaTempKey(store: S3BlobStore, url: string, i: number): Promise<{ sha256: string; size: number }> {
  if (config.storage.kind !== "s3") throw new Error("temp needs DVAULT_STORAGE=s3");
  const { bucket, prefix } = config.storage;
  const tempKey = `${prefix}tmp/${randomBytes(8).toString("hex")}`;
  const hash = createHash("sha256");
  let size = 0;
  const body = new PassThrough({ highWaterMark: 1024 * 1024 });
  const source = got.stream(url, { decompress: false });
  source.on("data", (chunk: Buffer) => {
    hash.update(chunk);
    size += chunk.length;
  });
  source.pipe(body);
  await new Upload({ client: store.client, params: { Bucket: bucket, Key: tempKey, Body: body }, partSize: DEFAULT_PART_SIZE, queueSize: 4 }).done();
  const sha256 = hash.digest("hex");
  if (size !== sizes[i]) throw new Error(`temp: ${size} bytes, expected ${sizes[i]}`);
  const finalKey = prefix + originalRelPath(sha256, "bin");
  await store.client.send(new CopyObjectCommand({ Bucket: bucket, Key: finalKey, CopySource: `${bucket}/${tempKey}` }));
  await store.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: tempKey }));
  return { sha256, size };
}

// Warm-up outside the measure: modules loaded, the client's connection open, folders made.
await archive.storeBytes({ bytes: randomBytes(16), ext: "txt" });

const cpu0 = process.cpuUsage();
const t0 = performance.now();
const stored: Array<{ sha256: string; size: number }> = [];
for (const [i, url] of urls.entries()) {
  if (mode === "temp") stored.push(await viaTempKey(archive.blobs as S3BlobStore, url, i));
  else stored.push(await transferToArchive({ archive, key: `bench-${i}`, url, ext: () => "bin", announcedSize: sizes[i] as number, log }));
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  `${JSON.stringify({ mode, ms, bytes: stored.reduce((n, s) => n + s.size, 0), sha256s: stored.map((s) => s.sha256), cpuMs: (cpu.user + cpu.system) / 1000 })}\n`,
);
