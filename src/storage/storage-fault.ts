// Faults of the place the archive is kept, not of one file or of the service: a folder that refuses writes
// (EACCES, EPERM as `chattr +i` gives even root, EROFS), a file where a folder must be (ENOTDIR), a bucket that
// is missing, refuses dvault's credentials or does not answer. Retrying a download does not get past them, and
// each retry of an original would spend the weekly allowance again: the downloads pause until a preflight
// proves the store takes files (src/downloads/disk-guard.ts, docs/RELIABILITY.md#storage-faults). Read from an
// error's code and the path it carries, never from its message.
import path from "node:path";
import { EXIT_UNAVAILABLE, UserError } from "../errors.ts";
import { errCode } from "./layout.ts";

export type StorageFault = {
  /** The folder or bucket that refused, for the message and the preflight that proves it fixed. */
  where: string;
  /** The errno code (EPERM...) or the store's (NoSuchBucket, AccessDenied, ECONNREFUSED...). */
  code: string;
};

/**
 * The store cannot take files: one line naming the place, the cause and the fix. A command that meets it ends with
 * EXIT_UNAVAILABLE, as for PostgreSQL or Redis (the downloads pause instead: src/downloads/disk-guard.ts).
 */
export class StorageFaultError extends UserError {
  readonly where: string;
  readonly code: string;

  constructor(fault: StorageFault, message: string) {
    super(message, EXIT_UNAVAILABLE);
    this.name = "StorageFaultError";
    this.where = fault.where;
    this.code = fault.code;
  }
}

/** Codes of a file system call that say the folder, not the file, is unusable. */
const FOLDER_FIXES: Readonly<Record<string, (where: string) => string>> = {
  EACCES: (where) => `dvault may not write to ${where} (EACCES): give the user dvault runs as write access to it, or point DVAULT_ARCHIVE_DIR elsewhere`,
  EPERM: (where) =>
    `dvault may not write to ${where} (EPERM): give the user dvault runs as write access to it (an immutable folder: chattr -i), or point DVAULT_ARCHIVE_DIR elsewhere`,
  EROFS: (where) => `${where} is on a read-only file system (EROFS): remount it read-write, or point DVAULT_ARCHIVE_DIR elsewhere`,
  ENOTDIR: (where) => `a file stands where a folder of the archive must be (${where}, ENOTDIR): move it away`,
};

/**
 * The fault a failed file system call of the archive's shows, or undefined when it is something else. Only an
 * error that names a path is one (a socket's error names an address), so a network failure never reads as one.
 */
export function folderFault(err: unknown, folder?: string): StorageFaultError | undefined {
  if (err instanceof StorageFaultError) return err;
  const code = errCode(err) ?? "";
  const fix = FOLDER_FIXES[code];
  const { path: file, syscall } = (typeof err === "object" && err !== null ? err : {}) as { path?: unknown; syscall?: unknown };
  if (!fix || typeof file !== "string") return undefined;
  // A folder's own call names it; a file's names the file, whose folder refused.
  const where = folder ?? (syscall === "mkdir" || syscall === "rmdir" || syscall === "scandir" ? file : path.dirname(file));
  return new StorageFaultError({ where, code }, fix(where));
}

/** Codes of a write that say the disk is full, not that one file failed: no write there gets further. */
export const DISK_FULL_CODES: ReadonlySet<string> = new Set(["ENOSPC", "EDQUOT"]);
