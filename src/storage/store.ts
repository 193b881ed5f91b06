// Which blob store this process reads and writes the archive's objects through (blob-store.ts): the archive
// folder (DVAULT_STORAGE=local, the default) or an S3-compatible bucket (DVAULT_STORAGE=s3). Every place that
// reads or writes an original or a thumbnail gets its store from here, so one setting moves them all.
import type { S3Client } from "@aws-sdk/client-s3";
import type { Config } from "../config.ts";
import type { S3StorageConfig } from "../config/storage.ts";
import { Archive } from "./archive.ts";
import { type BlobStore, LocalBlobStore } from "./blob-store.ts";
import { LocalDisk } from "./local-disk.ts";
import { createS3Client, S3BlobStore } from "./s3-blob-store.ts";

export type StoreModes = { fileMode?: number; dirMode?: number };
/**
 * The local store's options: its modes, and this process as the writer of its partial files (src/queue/holder.ts's
 * thisWriterTag, which a caller outside storage gives), so that a start can remove those a killed writer left.
 */
export type BlobStoreOptions = StoreModes & { writer?: string };

/**
 * One S3 client per bucket configuration in this process: a client holds a pool of keep-alive connections, and
 * every store of the same settings shares it.
 */
const s3Clients = new Map<string, S3Client>();

function sharedS3Client(config: S3StorageConfig): S3Client {
  const id = JSON.stringify(config);
  let client = s3Clients.get(id);
  if (!client) {
    client = createS3Client(config);
    s3Clients.set(id, client);
  }
  return client;
}

/** The configured blob store. */
export function openBlobStore(config: Config, modes: BlobStoreOptions = {}): BlobStore {
  if (config.storage.kind === "s3") return new S3BlobStore({ config: config.storage, client: sharedS3Client(config.storage) });
  const disk = new LocalDisk({ root: config.archiveDir, fileMode: modes.fileMode ?? 0o600, dirMode: modes.dirMode ?? 0o700 });
  return new LocalBlobStore(disk, { writer: modes.writer });
}

/**
 * The Archive over the configured store. Its root (DVAULT_ARCHIVE_DIR) always holds this machine's partial
 * files; with the local store it holds the objects too.
 */
export function openArchive(config: Config, opts: BlobStoreOptions & { minFreeBytes?: number } = {}): Archive {
  return new Archive({
    root: config.archiveDir,
    minFreeBytes: opts.minFreeBytes ?? config.minFreeBytes,
    ...(opts.writer !== undefined ? { writer: opts.writer } : {}),
    ...(opts.fileMode !== undefined ? { fileMode: opts.fileMode } : {}),
    ...(opts.dirMode !== undefined ? { dirMode: opts.dirMode } : {}),
    blobs: openBlobStore(config, opts),
  });
}
