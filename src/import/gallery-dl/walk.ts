// Every entry below a folder, in a stable order, without following links: the import reads the user's files
// and never writes or moves them.
import fs from "node:fs/promises";
import path from "node:path";

export type FolderEntry = {
  abs: string;
  /** Relative to the folder walked, with "/" separators (what the report shows). */
  rel: string;
  kind: "file" | "symlink" | "other";
  size: number;
  mtimeMs: number;
  ino: number;
};

export async function* walkFolder(root: string): AsyncGenerator<FolderEntry> {
  yield* walkDir(root, root);
}

async function* walkDir(root: string, dir: string): AsyncGenerator<FolderEntry> {
  const names = (await fs.readdir(dir)).sort();
  for (const name of names) {
    const abs = path.join(dir, name);
    const st = await fs.lstat(abs).catch(() => undefined);
    if (!st) continue;
    if (st.isDirectory()) {
      yield* walkDir(root, abs);
      continue;
    }
    const kind = st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "other";
    yield { abs, rel: path.relative(root, abs).split(path.sep).join("/"), kind, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
  }
}
