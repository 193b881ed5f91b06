// The maintenance host's sweep of unfinished multipart uploads: a process killed (SIGKILL, power loss) in the
// middle of one cannot abort it, and the bucket keeps its parts, billed and invisible to a listing of objects,
// until someone does (docs/RELIABILITY.md). Uploads of dvault's folders under its prefix older than a day are
// aborted: none of dvault's own runs that long, so none still belongs to a live process.
import type { Logger } from "../log.ts";
import type { BlobStore } from "./blob-store.ts";
import { ORIGINALS_DIR, QUARANTINE_DIR, READABLE_DIR } from "./layout.ts";
import { S3BlobStore } from "./s3-blob-store.ts";
import { THUMBNAILS_DIR } from "./thumbnails.ts";

/** The folders dvault writes objects in (a restore puts back any of them): no other upload is touched. */
const DVAULT_FOLDERS = [ORIGINALS_DIR, THUMBNAILS_DIR, READABLE_DIR, QUARANTINE_DIR] as const;

/** An unfinished upload older than this belongs to no live process. */
export const STALE_UPLOAD_MS = 24 * 3600_000;

/**
 * Aborts the store's multipart uploads begun more than STALE_UPLOAD_MS before `nowMs`; the number aborted (0
 * for the local folder, or a server that cannot list them, which a lifecycle rule must then cover). `nowMs` is
 * compared with the server's own times: the real clock, never a simulated one.
 */
export async function sweepStaleUploads(store: BlobStore, nowMs: number, log: Logger): Promise<number> {
  if (!(store instanceof S3BlobStore)) return 0;
  const { aborted, unsupported } = await store.abortStaleUploads(new Date(nowMs - STALE_UPLOAD_MS), DVAULT_FOLDERS);
  if (unsupported) {
    log.debug(
      { store: store.describe() },
      "the bucket's server cannot list unfinished uploads: a lifecycle rule (AbortIncompleteMultipartUpload) must remove them",
    );
  } else if (aborted > 0) {
    log.info({ store: store.describe(), aborted }, "aborted unfinished uploads over a day old (left by a process killed mid-upload)");
  }
  return aborted;
}
