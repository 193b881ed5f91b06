// Every entry below a folder, in a stable order, without following links: the import reads the user's files
// and never writes or moves them. What cannot be reached (a folder it may not list, a path longer than the
// system takes) is an entry too, with the system's code, so the report says so instead of skipping it.
import type { Dirent } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";

export type FolderEntry = {
  abs: string;
  /** Relative to the folder walked, with "/" separators (what the report shows). */
  rel: string;
  /**
   * "unreachable": lstat or readdir failed (`code` says why), or its name is not UTF-8 (`code` EILSEQ: Node names it
   * with U+FFFD in place of the bytes, a name no call finds); `folder` when it is a folder whose files were not read.
   */
  kind: "file" | "symlink" | "other" | "unreachable";
  size: number;
  mtimeMs: number;
  ino: number;
  code?: string;
  folder?: boolean;
};

export async function* walkFolder(root: string, signal?: AbortSignal): AsyncGenerator<FolderEntry> {
  yield* walkDir(root, root, signal);
}

async function* walkDir(root: string, dir: string, signal: AbortSignal | undefined): AsyncGenerator<FolderEntry> {
  signal?.throwIfAborted();
  const rel = (abs: string) => path.relative(root, abs).split(path.sep).join("/");
  let dirents: Dirent<Buffer>[];
  try {
    dirents = await fs.readdir(dir, { withFileTypes: true, encoding: "buffer" });
  } catch (err) {
    if (dir === root) throw err;
    yield { abs: dir, rel: rel(dir), kind: "unreachable", size: 0, mtimeMs: 0, ino: 0, code: codeOf(err), folder: true };
    return;
  }
  const named = dirents.map((dirent) => ({ dirent, name: dirent.name.toString("utf8") }));
  named.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const { dirent, name } of named) {
    const abs = path.join(dir, name);
    // Bytes that are not UTF-8 came back as U+FFFD: the name no longer finds the file, which lstat would take for gone.
    if (!Buffer.from(name, "utf8").equals(dirent.name)) {
      yield { abs, rel: rel(abs), kind: "unreachable", size: 0, mtimeMs: 0, ino: 0, code: "EILSEQ", folder: dirent.isDirectory() };
      continue;
    }
    const st = await fs.lstat(abs).catch((err: unknown) => codeOf(err));
    if (typeof st === "string") {
      // Gone since the listing: nothing to report. Anything else (ENAMETOOLONG past PATH_MAX, EACCES) is reported.
      if (st !== "ENOENT") yield { abs, rel: rel(abs), kind: "unreachable", size: 0, mtimeMs: 0, ino: 0, code: st, folder: dirent.isDirectory() };
      continue;
    }
    if (st.isDirectory()) {
      yield* walkDir(root, abs, signal);
      continue;
    }
    const kind = st.isFile() ? "file" : st.isSymbolicLink() ? "symlink" : "other";
    yield { abs, rel: rel(abs), kind, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
  }
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? String(err);
}
