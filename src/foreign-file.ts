// Files of folders dvault does not own (a gallery-dl folder and its sidecars, gallery-dl's download archive, a
// track list, a backup): opened as regular files only, never through a link at their own name, never waiting on a
// FIFO or a device (O_NONBLOCK makes the open return at once; fstat before any read refuses anything but a regular
// file), and read within a size bound and a deadline. A hostile folder can make dvault refuse a file; it cannot
// make it hang, follow a link out of the folder, or read /dev/zero until memory runs out (docs/RELIABILITY.md#foreign-files).
import { constants, type Stats } from "node:fs";
import fs, { type FileHandle } from "node:fs/promises";
import { formatBytes } from "./text/bytes.ts";

const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0) | (constants.O_NOCTTY ?? 0);

/** How long one read may give nothing before the file counts as stalled (a hung network or FUSE mount). */
export const DEFAULT_STALL_MS = 30_000;
const CHUNK_BYTES = 1024 * 1024;

/** Why a file was refused: a link at its name, not a regular file, past the size bound, stalled, or the system's own error. */
export type ForeignRefusal = "link" | "not-file" | "too-large" | "stalled" | "unreadable";

export class ForeignFileError extends Error {
  constructor(
    readonly file: string,
    readonly refusal: ForeignRefusal,
    /** In words, for a report or a one-line error: "a symbolic link (not followed)", "not a regular file (a FIFO)"... */
    readonly reason: string,
    /** The system's error code (ENOENT, EACCES, ENAMETOOLONG...), or ELOOP, ENOTREG, EFBIG, ETIMEDOUT for the refusals. */
    readonly code: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = "ForeignFileError";
  }
}

export type ForeignReadOptions = {
  /** Bytes the file may hold; a larger one is refused before a byte is read (and if it grows while read). */
  maxBytes: number;
  /** How long one read may give nothing (default DEFAULT_STALL_MS). */
  stallMs?: number;
  /** Bytes a read asks for (default 1 MiB); a reader that decodes text keeps its garbage small with less. */
  chunkBytes?: number;
  signal?: AbortSignal;
};

/** What a file that is not a regular one is, in words. */
function kindOf(st: Stats): string {
  if (st.isFIFO()) return "a FIFO";
  if (st.isSocket()) return "a socket";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isDirectory()) return "a folder";
  return "not a file";
}

/**
 * The open file and its stats, when `file` is a regular file of at most `maxBytes`; a ForeignFileError otherwise.
 * The caller closes the handle.
 */
export async function openForeignFile(file: string, opts: { maxBytes: number; signal?: AbortSignal }): Promise<{ handle: FileHandle; stats: Stats }> {
  opts.signal?.throwIfAborted();
  let handle: FileHandle;
  try {
    handle = await fs.open(file, OPEN_FLAGS);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // O_NOFOLLOW: a link at the name fails with ELOOP (EMLINK on some BSDs); a socket cannot be opened (ENXIO).
    if (code === "ELOOP" || code === "EMLINK") throw new ForeignFileError(file, "link", "a symbolic link (not followed)", code);
    if (code === "ENXIO") throw new ForeignFileError(file, "not-file", "not a regular file (a socket)", code);
    throw new ForeignFileError(file, "unreadable", `cannot be read (${code ?? (err as Error).message})`, code ?? "EIO");
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ForeignFileError(file, "not-file", `not a regular file (${kindOf(stats)})`, "ENOTREG");
    if (stats.size > opts.maxBytes)
      throw new ForeignFileError(file, "too-large", `larger than ${formatBytes(opts.maxBytes)} (${formatBytes(stats.size)})`, "EFBIG");
    return { handle, stats };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** The chunks of an open foreign file from `position` to its end, each read within the stall deadline, at most `maxBytes` in all. */
export async function* foreignChunks(file: string, handle: FileHandle, opts: ForeignReadOptions & { position?: number }): AsyncGenerator<Buffer> {
  let position = opts.position ?? 0;
  let total = 0;
  for (;;) {
    opts.signal?.throwIfAborted();
    const buffer = Buffer.allocUnsafe(opts.chunkBytes ?? CHUNK_BYTES);
    const { bytesRead } = await withinDeadline(file, handle.read(buffer, 0, buffer.length, position), opts);
    if (bytesRead === 0) return;
    position += bytesRead;
    total += bytesRead;
    if (total > opts.maxBytes) throw new ForeignFileError(file, "too-large", `larger than ${formatBytes(opts.maxBytes)} (it grew while it was read)`, "EFBIG");
    yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
  }
}

/** The chunks of a foreign file (see openForeignFile), read within its bounds; the file is closed after the last. */
export async function* foreignFileChunks(file: string, opts: ForeignReadOptions): AsyncGenerator<Buffer> {
  const { handle } = await openForeignFile(file, opts);
  let read = false;
  try {
    yield* foreignChunks(file, handle, opts);
    read = true;
  } finally {
    // A read that stalled or was given up still holds the handle (close would wait for it): it closes when the read returns.
    if (read) await handle.close();
    else void handle.close().catch(() => undefined);
  }
}

/** The whole of a foreign file (see openForeignFile), read within its bounds. */
export async function readForeignFile(file: string, opts: ForeignReadOptions): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of foreignFileChunks(file, opts)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** `read`, or a ForeignFileError when it gives nothing within the stall deadline; an AbortError when `signal` fires first. */
async function withinDeadline<T>(file: string, read: Promise<T>, opts: ForeignReadOptions): Promise<T> {
  const stallMs = opts.stallMs ?? DEFAULT_STALL_MS;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new ForeignFileError(file, "stalled", `gave no bytes for ${stallMs / 1000} s (a stalled disk or network mount)`, "ETIMEDOUT")),
      stallMs,
    );
    onAbort = () => reject(opts.signal?.reason);
    opts.signal?.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([read, deadline]);
  } finally {
    clearTimeout(timer);
    if (onAbort) opts.signal?.removeEventListener("abort", onAbort);
  }
}
