// The streaming half of storing a file: a body read chunk by chunk (an abort stops even a stalled one),
// its running size held to the announced size and to a cap (docs/service-behaviour.md#hostile-answers),
// and its bytes written to the partial file in batches, so a failed transfer leaves a valid prefix to resume.
import type { Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { FileHandle } from "node:fs/promises";

/** Buffered bytes per write call: few syscalls without holding much. */
const WRITE_BATCH_BYTES = 512 * 1024;

export class SizeMismatchError extends Error {
  constructor(
    readonly expected: number,
    readonly actual: number,
    readonly key: string,
  ) {
    super(
      actual > expected
        ? `transfer ${key} sent more than the expected ${expected} bytes; the partial file was discarded, fetch it again`
        : `transfer ${key} ended after ${actual} of ${expected} bytes; the partial file is kept for a resume`,
    );
    this.name = "SizeMismatchError";
  }
}

/** A body with no announced size went past its cap; the partial file was removed. */
export class FileTooLargeError extends Error {
  constructor(
    readonly maxBytes: number,
    readonly actual: number,
    readonly key: string,
  ) {
    super(`transfer ${key} passed its cap of ${maxBytes} bytes with no size announced; the partial file was removed`);
    this.name = "FileTooLargeError";
  }
}

/** Throws when `size` bytes so far pass the announced size (SizeMismatchError) or the cap (FileTooLargeError). */
export function checkRunningSize(size: number, limits: { key: string; expectedSize?: number | undefined; maxBytes?: number | undefined }): void {
  if (limits.expectedSize !== undefined && size > limits.expectedSize) throw new SizeMismatchError(limits.expectedSize, size, limits.key);
  if (limits.maxBytes !== undefined && size > limits.maxBytes) throw new FileTooLargeError(limits.maxBytes, size, limits.key);
}

export function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
  throw new TypeError(`storeStream body yielded ${typeof chunk}, expected bytes`);
}

/** Next item of `it`, or the signal's reason when it aborts first (a stalled body cannot hold an abort). */
export function nextOrAbort<T>(it: AsyncIterator<T>, signal: AbortSignal | undefined): Promise<IteratorResult<T>> {
  if (!signal) return it.next();
  signal.throwIfAborted();
  return new Promise<IteratorResult<T>>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    it.next().then(
      (r) => {
        signal.removeEventListener("abort", onAbort);
        resolve(r);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

async function writeAll(fh: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let pos = position;
  let pending = buffers;
  while (pending.length > 0) {
    const total = pending.reduce((s, b) => s + b.length, 0);
    const { bytesWritten } = await fh.writev(pending, pos);
    pos += bytesWritten;
    if (bytesWritten >= total) return;
    // A short write: continue with what is left.
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const b of pending) {
      if (skip >= b.length) {
        skip -= b.length;
        continue;
      }
      rest.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
    pending = rest;
  }
}

/** Buffers chunks and writes them to `fh` in batches, at the position after what it has written. */
export class BatchedWriter {
  private batch: Buffer[] = [];
  private batchBytes = 0;

  constructor(
    private readonly fh: FileHandle,
    /** Bytes in the file before this writer's first: advanced by every flush. */
    public written: number,
  ) {}

  /** Whether pushing `bytes` more writes to the file now (the batch fills), rather than only buffering them. */
  wouldWrite(bytes: number): boolean {
    return this.batchBytes + bytes >= WRITE_BATCH_BYTES;
  }

  async push(chunk: Buffer): Promise<void> {
    // The same rule as wouldWrite's: Archive.transfer writes a partial file's resume metadata before such a write.
    const full = this.wouldWrite(chunk.length);
    this.batch.push(chunk);
    this.batchBytes += chunk.length;
    if (full) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.batchBytes === 0) return;
    const out = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    await writeAll(this.fh, out, this.written);
    this.written += out.reduce((s, b) => s + b.length, 0);
  }
}

/** Feeds the first `end` bytes of `file` to `hash` (the kept prefix of a resumed transfer). */
export async function hashInto(file: string, hash: Hash, end: number): Promise<void> {
  if (end <= 0) return;
  const stream = createReadStream(file, { start: 0, end: end - 1, highWaterMark: 1024 * 1024 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
}
