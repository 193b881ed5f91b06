// COPY … TO STDOUT and COPY … FROM STDIN as Node streams, on the pg driver's own protocol support (its client hands a
// submitted query the copy messages: the pattern of pg-copy-streams, which is not a dependency). Both keep memory
// bounded: a slow reader pauses the socket, so the server waits; a writer waits for the socket to drain.
import { Readable, Writable } from "node:stream";
import type pg from "pg";

type Connection = {
  stream: NodeJS.ReadableStream & NodeJS.WritableStream & { writableNeedDrain?: boolean };
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  sendCopyFail(message: string): void;
};

/** "COPY 42" → 42. */
function copiedRows(msg: { text?: string }): number {
  const n = Number(/^COPY (\d+)$/.exec(msg.text ?? "")?.[1]);
  return Number.isFinite(n) ? n : 0;
}

/** The rows of `text` (a `COPY … TO STDOUT`), as the server sends them; `rows` is the server's count once it ends. */
export class CopyOutStream extends Readable {
  rows = 0;
  private connection: Connection | undefined;
  private paused = false;

  constructor(private readonly text: string) {
    super({ highWaterMark: 1 << 20 });
  }

  submit(connection: Connection): void {
    this.connection = connection;
    connection.query(this.text);
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    // Destroyed by its reader (a disk that failed): the rest is let through unread, never paused on.
    if (this.destroyed) return;
    // The parser's buffer is reused for the next messages: the chunk is copied out of it.
    if (!this.push(Buffer.from(msg.chunk))) this.pause_();
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.rows = copiedRows(msg);
  }

  handleReadyForQuery(): void {
    this.resume_();
    if (!this.destroyed) this.push(null);
  }

  handleError(err: Error): void {
    this.resume_();
    this.destroy(err);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}

  override _read(): void {
    this.resume_();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.resume_();
    callback(err);
  }

  private pause_(): void {
    if (this.paused || !this.connection) return;
    this.paused = true;
    this.connection.stream.pause();
  }

  private resume_(): void {
    if (!this.paused || !this.connection) return;
    this.paused = false;
    this.connection.stream.resume();
  }
}

/**
 * Bytes written to it go to `text` (a `COPY … FROM STDIN`); it finishes when the server has taken them all, with
 * `rows` its count. Destroyed before that (a source that failed), it sends CopyFail, so the statement fails and
 * the transaction with it.
 */
export class CopyInStream extends Writable {
  rows = 0;
  private connection: Connection | undefined;
  private ready: (() => void) | undefined;
  private started = false;
  private done = false;
  private error: Error | undefined;
  private finished: ((err?: Error | null) => void) | undefined;
  /** Why it was destroyed: the CopyFail message. */
  private stopped: string | undefined;

  constructor(private readonly text: string) {
    super({ highWaterMark: 1 << 20 });
  }

  submit(connection: Connection): void {
    this.connection = connection;
    connection.query(this.text);
  }

  handleCopyInResponse(): void {
    this.started = true;
    const ready = this.ready;
    this.ready = undefined;
    // Stopped before the server was ready (a write may wait still): fail the statement.
    if (this.destroyed) this.connection?.sendCopyFail(this.stopped ?? "stopped");
    else if (ready) ready();
    // Ended before the server was ready (no rows at all): end it now.
    else if (this.finished) this.connection?.endCopyFrom();
  }

  handleCommandComplete(msg: { text?: string }): void {
    this.rows = copiedRows(msg);
  }

  handleReadyForQuery(): void {
    this.done = true;
    const finished = this.finished;
    this.finished = undefined;
    finished?.(null);
  }

  handleError(err: Error): void {
    // The statement's end: the client hands ReadyForQuery, which follows, to no one (it dropped the query at its error).
    this.error = err;
    this.done = true;
    const ready = this.ready;
    this.ready = undefined;
    const finished = this.finished;
    this.finished = undefined;
    if (ready) ready();
    else if (finished) finished(err);
    else this.destroy(err);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyData(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, callback: (err?: Error | null) => void): void {
    if (!this.started && !this.error) {
      this.ready = () => this._write(chunk, _enc, callback);
      return;
    }
    if (this.error || !this.connection) {
      callback(this.error ?? new Error("COPY was not submitted"));
      return;
    }
    this.connection.sendCopyFromChunk(chunk);
    if (this.connection.stream.writableNeedDrain) this.connection.stream.once("drain", () => callback());
    else callback();
  }

  override _final(callback: (err?: Error | null) => void): void {
    if (this.done) {
      callback(this.error ?? null);
      return;
    }
    this.finished = callback;
    if (this.started && !this.error) this.connection?.endCopyFrom();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.stopped = err?.message ?? "stopped";
    if (this.started && !this.done && !this.error) this.connection?.sendCopyFail(this.stopped);
    callback(err);
  }
}

/** Starts `COPY … TO STDOUT` on `client`: the stream of its rows. */
export function copyOut(client: pg.ClientBase, text: string): CopyOutStream {
  return client.query(new CopyOutStream(text) as unknown as pg.Submittable) as unknown as CopyOutStream;
}

/** Starts `COPY … FROM STDIN` on `client`: the stream its rows are written to. */
export function copyIn(client: pg.ClientBase, text: string): CopyInStream {
  return client.query(new CopyInStream(text) as unknown as pg.Submittable) as unknown as CopyInStream;
}
