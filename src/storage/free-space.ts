// Free space on the archive's filesystem, and the error that stops transfers when it runs low: downloads
// refuse to start, and stop, below a threshold rather than fill the disk.
import { statfsSync } from "node:fs";
import path from "node:path";
import { formatBytes } from "../text/bytes.ts";
import { errCode } from "./layout.ts";

export class DiskFullError extends Error {
  readonly freeBytes: number;
  readonly neededBytes?: number;
  constructor(args: { root: string; freeBytes: number; minFreeBytes: number; neededBytes?: number; cause?: unknown }) {
    const need = args.neededBytes !== undefined ? ` (${formatBytes(args.neededBytes)} more needed for this file)` : "";
    super(
      `disk almost full at ${args.root}: ${formatBytes(args.freeBytes)} free, below the ${formatBytes(args.minFreeBytes)} threshold${need}. ` +
        "Free some space (or lower the threshold); downloads resume when space returns.",
      args.cause === undefined ? undefined : { cause: args.cause },
    );
    this.name = "DiskFullError";
    this.freeBytes = args.freeBytes;
    if (args.neededBytes !== undefined) this.neededBytes = args.neededBytes;
  }
}

/** Free bytes for an unprivileged writer on the filesystem that holds `root` (or its nearest existing parent). */
export async function freeBytesAt(root: string): Promise<number> {
  let probe = root;
  for (;;) {
    try {
      // One quick call, made before every transfer: synchronous (local-disk.ts says why).
      const s = statfsSync(probe);
      return Number(s.bavail) * Number(s.bsize);
    } catch (err) {
      const parent = path.dirname(probe);
      if (errCode(err) !== "ENOENT" || parent === probe) throw err;
      probe = parent;
    }
  }
}
