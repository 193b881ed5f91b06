// Folders made at a path a person gave (the archive, a backup's --out, a digest's folder, the key's folder): one
// at a time from the nearest folder that exists, instead of Node's `mkdir(…, { recursive: true })`, which on
// Node 20 loops for ever when the kernel answers ENOENT to a folder whose parent exists (`/proc/x`: a backup
// to --out /proc/nope spun at 35 % CPU until killed). A file in the way is ENOTDIR, named like any mkdir error.
import { mkdirSync, statSync } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import path from "node:path";

type Stat = { isDirectory(): boolean } | undefined;

/** The folders of `dir` that do not exist, deepest first; throws ENOTDIR when a file stands in the way. */
function missingFolders(dir: string, statOf: (p: string) => Stat): string[] {
  const missing: string[] = [];
  for (let probe = path.resolve(dir); ; ) {
    const st = statOf(probe);
    if (st) {
      if (!st.isDirectory()) throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${probe}'`), { code: "ENOTDIR", path: probe, syscall: "mkdir" });
      return missing;
    }
    missing.push(probe);
    const parent = path.dirname(probe);
    if (parent === probe) return missing;
    probe = parent;
  }
}

/** Not there: nothing at the path, or a file above it (which the walk up then names). */
const orUndefined = (err: unknown): undefined => {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === "ENOENT" || code === "ENOTDIR") return undefined;
  throw err;
};

/** Makes `dir` and the folders it lacks with `mode`; returns the first folder made (as mkdir -p does), or undefined. */
export async function makeDirs(dir: string, mode?: number): Promise<string | undefined> {
  const known = new Map<string, Stat>();
  for (let probe = path.resolve(dir); ; probe = path.dirname(probe)) {
    known.set(probe, await stat(probe).catch(orUndefined));
    if (known.get(probe) || path.dirname(probe) === probe) break;
  }
  const missing = missingFolders(dir, (p) => known.get(p));
  for (const folder of [...missing].reverse()) {
    await mkdir(folder, mode === undefined ? {} : { mode }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "EEXIST") throw err;
    });
  }
  return missing.at(-1);
}

/** makeDirs for the few places that must stay synchronous (the key file, read before anything else starts). */
export function makeDirsSync(dir: string, mode?: number): string | undefined {
  const missing = missingFolders(dir, (p) => {
    try {
      return statSync(p);
    } catch (err) {
      return orUndefined(err);
    }
  });
  for (const folder of [...missing].reverse()) {
    try {
      mkdirSync(folder, mode === undefined ? {} : { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  return missing.at(-1);
}
