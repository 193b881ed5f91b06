// The preflight of the downloads: proof that the archive takes a file, before anything single-use (an original
// download of the weekly allowance) is spent on one (docs/RELIABILITY.md#storage-faults). A probe file is written
// and fsynced in .partial/, renamed into originals/ and removed on this machine, where every transfer lands first;
// with the originals in a bucket, a probe object is put there and removed too.
import fs from "node:fs/promises";
import path from "node:path";
import type { BlobStore } from "./blob-store.ts";
import { ORIGINALS_DIR, PARTIAL_DIR, preflightProbeName } from "./layout.ts";
import type { LocalDisk } from "./local-disk.ts";
import { folderFault } from "./storage-fault.ts";

/**
 * Throws StorageFaultError (storage-fault.ts) naming the folder or bucket that refused; `bucket` when originals live in
 * one. The probe names `writer` (layout.ts's preflightProbeName) when given.
 */
export async function proveWritable(disk: LocalDisk, bucket: BlobStore | undefined, writer?: string): Promise<void> {
  const name = preflightProbeName(writer);
  const partialDir = path.join(disk.root, PARTIAL_DIR);
  const originals = path.join(disk.root, ORIGINALS_DIR);
  const partial = path.join(partialDir, name);
  const target = path.join(originals, name);
  // Each step names the folder it proves; a folder's own mkdir names itself.
  const step = async (folder: string | undefined, run: () => Promise<void>) => {
    try {
      await run();
    } catch (err) {
      throw folderFault(err, folder) ?? err;
    }
  };
  try {
    await step(undefined, () => disk.ensureDir(partialDir));
    await step(undefined, () => disk.ensureDir(originals));
    await step(partialDir, () => disk.writeFile(partial, name, true));
    await step(originals, () => fs.rename(partial, target));
  } finally {
    await fs.rm(partial, { force: true }).catch(() => undefined);
    await fs.rm(target, { force: true }).catch(() => undefined);
  }
  if (!bucket) return;
  const key = `${ORIGINALS_DIR}/${name}`;
  await bucket.write(key, Buffer.from(name));
  await bucket.remove(key);
}
