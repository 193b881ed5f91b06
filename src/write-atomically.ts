// A small file written whole or not at all: to a temporary name beside it, fsynced, then renamed over the name, so a
// crash leaves the old file or the new one, never half of either (a digest's file, a refreshed grant waiting for the
// database). With `syncFolder`, the folder is fsynced too, so the rename itself outlives a power loss.
import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import path from "node:path";

export async function writeFileAtomically(
  file: string,
  content: string | Buffer,
  { mode, syncFolder = false }: { mode: number; syncFolder?: boolean },
): Promise<void> {
  const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(tmp, "wx", mode);
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  if (!syncFolder) return;
  const folder = await open(path.dirname(file), "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
