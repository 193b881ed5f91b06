// Where things sit in the archive (originals/ab/cd/<sha256>.<ext>, .partial/, by-user/) and the checks that
// keep every path inside its root, links included (docs/service-behaviour.md#hostile-answers): names from
// the service never choose where bytes go.
import { createHash, randomBytes } from "node:crypto";
import { realpathSync } from "node:fs";
import path from "node:path";

export const ORIGINALS_DIR = "originals";
export const PARTIAL_DIR = ".partial";
export const READABLE_DIR = "by-user";
/** Where `dvault verify --fix` sets corrupt originals aside. */
export const QUARANTINE_DIR = ".corrupt";

export class OutsideArchiveError extends Error {
  constructor(
    readonly relPath: string,
    readonly root: string,
  ) {
    super(`refusing path ${JSON.stringify(relPath)}: it would resolve outside the archive ${root}`);
    this.name = "OutsideArchiveError";
  }
}

export function errCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : undefined;
}

export function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Relative POSIX path of `abs` under `root`. */
export function relOf(root: string, abs: string): string {
  return path.relative(root, abs).split(path.sep).join("/");
}

/** The content address of a stored file, relative to the root. */
export function originalRelPath(sha256: string, ext: string): string {
  return `${ORIGINALS_DIR}/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}.${ext}`;
}

/** The folder (relative to the root) where files of this sha256 sit, whatever their extension. */
export function originalDir(sha256: string): string {
  return path.join(ORIGINALS_DIR, sha256.slice(0, 2), sha256.slice(2, 4));
}

/** The partial file's name for a transfer key: the key itself when it is a safe name, else a hash of it. */
export function partialFileName(key: string): string {
  const safe = /^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$/.test(key) ? key : `k-${createHash("sha256").update(key).digest("hex").slice(0, 40)}`;
  return `${safe}.part`;
}

/**
 * Partial files written whole and then renamed, never resumed: Archive.storeBytes's (`bytes-`), Archive.adoptFile's
 * (`adopt-`: a copy or hard link of a file `dvault import` brings in) and LocalBlobStore's (`blob-`, blob-store.ts);
 * and the temp files an object is copied through on this machine, which the commands put in
 * .partial/ (`migrate-`, migrate-store.ts; `copy-`, blob-transfer.ts's copyBlob). Each is named for its writer, so that
 * a start can remove the one a killed process left (src/downloads/partial-sweep.ts).
 */
export type WrittenPartialKind = "bytes" | "adopt" | "blob" | "migrate" | "copy";

/** How a kind's file name ends: the archive's and the blob store's go through partialFileName; a copy's temp file is its key. */
const WRITTEN_ENDING: Record<WrittenPartialKind, string> = { bytes: "\\.part", adopt: "\\.part", blob: "\\.part", migrate: "", copy: "" };

/**
 * A writer's name (src/queue/holder.ts's thisWriterTag) checked to fit a partial file's name, which partialFileName
 * keeps to 120 characters of these.
 */
export function checkWriterName(writer: string | undefined): string | undefined {
  if (writer !== undefined && !/^[A-Za-z0-9._-]{1,80}$/.test(writer)) throw new Error(`not a writer name for a file name: ${writer}`);
  return writer;
}

/**
 * The partial key of one write: `<kind>-<writer>-<random>`, or `<kind>-<random>` by a writer without a name. Random per
 * write, never the content's hash: a second writer of the same bytes would truncate the file the first renamed.
 */
export function writtenPartialKey(kind: WrittenPartialKind, writer: string | undefined): string {
  return `${kind}-${writer ? `${writer}-` : ""}${randomBytes(8).toString("hex")}`;
}

/** The writer a written partial file of `kind` names, if it names one. */
export function writtenPartialWriter(kind: WrittenPartialKind, fileName: string): string | undefined {
  return new RegExp(`^${kind}-([A-Za-z0-9._-]+)-[0-9a-f]{16}${WRITTEN_ENDING[kind]}$`).exec(fileName)?.[1];
}

/**
 * Whether a file of the partial folder is a written partial file of `kind` (with or without its writer's name): ending
 * in its 16 random hex digits, since a transfer's key may start with "bytes-" or "blob-" too (a deviation id is the
 * service's, and `<id>-original.part` is a partial original a resume needs).
 */
export function isWrittenPartial(kind: WrittenPartialKind, fileName: string): boolean {
  return new RegExp(`^${kind}-(?:[A-Za-z0-9._-]+-)?[0-9a-f]{16}${WRITTEN_ENDING[kind]}$`).test(fileName);
}

/**
 * The downloads' preflight probe (preflight.ts), written in .partial/ and renamed into originals/, then removed:
 * `.dvault-preflight-<writer>-<random>`, or `<pid>` in the writer's place without one (the old name), so that a start
 * can remove the one a process killed between the write and the removal left (src/downloads/partial-sweep.ts).
 */
export function preflightProbeName(writer: string | undefined): string {
  return `.dvault-preflight-${writer ?? process.pid}-${randomBytes(4).toString("hex")}`;
}

/** Whether a file name is a preflight probe's, and the writer it names (a bare pid, of the old name, proves nothing). */
export function preflightProbeWriter(fileName: string): { writer: string } | undefined {
  const writer = /^\.dvault-preflight-([A-Za-z0-9._-]+)-[0-9a-f]{8}$/.exec(fileName)?.[1];
  return writer ? { writer } : undefined;
}

/**
 * The C library's realpath: one call, where Node's JavaScript one looks at every part of the path in turn (the
 * archive's checks ran it about 100 times a stored file, most of a clean run's 25 000 stat calls).
 */
const realpath = realpathSync.native;

function realRootOf(root: string): string {
  try {
    return realpath(root);
  } catch {
    return root;
  }
}

/** Absolute path for a relative one under `root`; throws OutsideArchiveError if it would resolve outside it. */
export function resolveInside(root: string, relPath: string): string {
  if (typeof relPath !== "string" || relPath.includes("\0") || path.isAbsolute(relPath) || /^[A-Za-z]:|^[\\/]/.test(relPath)) {
    throw new OutsideArchiveError(String(relPath), root);
  }
  const abs = path.resolve(root, relPath);
  if (!isWithin(root, abs)) throw new OutsideArchiveError(relPath, root);
  // The deepest existing ancestor (the path itself included), with its symlinks resolved, must stay inside.
  const realRoot = realRootOf(root);
  for (let probe = abs; isWithin(root, probe); probe = path.dirname(probe)) {
    let real: string;
    try {
      real = realpath(probe);
    } catch (err) {
      if (errCode(err) === "ENOENT" || errCode(err) === "ENOTDIR") {
        if (probe === root) break;
        continue;
      }
      throw err;
    }
    if (!isWithin(realRoot, real)) throw new OutsideArchiveError(relPath, root);
    break;
  }
  return abs;
}

/** A relative POSIX path under `top`/, free of empty, "." and ".." segments. */
export function checkRelative(rel: string, top: string, what: string): string {
  const norm = String(rel).replaceAll("\\", "/");
  const segments = norm.split("/");
  if (norm.includes("\0") || segments[0] !== top || segments.length < 2 || segments.some((s) => s === "" || s === "." || s === "..")) {
    throw new OutsideArchiveError(`${what} ${rel} (expected a relative path under ${top}/)`, top);
  }
  return norm;
}
