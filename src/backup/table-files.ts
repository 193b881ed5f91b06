// The database of a backup of format 2: one file per table of the mirror, `database/<table>.copy.gz`, each the
// table's rows as `COPY … TO STDOUT` writes them in its text format, gzipped. Text rather than COPY's binary format:
// the text form is PostgreSQL's documented portable one (pg_dump's plain dumps use it), it loads into any later
// major, a person can read it with zcat, and a row is one line (a newline inside a value is written `\n`), so
// counting a file's rows needs no parser. gzip: the mirror's JSON and text shrink several times, and gzip's own
// trailer (CRC and length) proves a file was read to its end. Everything streams, table after table: memory stays
// bounded however large a table is (a slow disk pauses the database's socket).
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import path from "node:path";
import { Readable, Transform, type TransformCallback, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip, createGzip } from "node:zlib";
import type { MirrorDump } from "../db/mirror-dump.ts";
import type { ColumnShape } from "../db/mirror-tables.ts";
import { foreignFileChunks } from "../foreign-file.ts";

export const DATABASE_DIR = "database";
const NEWLINE = 0x0a;

export type TableEntry = {
  name: string;
  /** Relative to the backup: `database/<name>.copy.gz`. */
  file: string;
  columns: ColumnShape[];
  rows: number;
  bytes: number;
  sha256: string;
};

/** A table's name as a file name: the catalog's names of dvault's tables are lower-case words; anything else is refused. */
export const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function tableFile(name: string): string {
  return `${DATABASE_DIR}/${name}.copy.gz`;
}

/** Counts the rows (lines) passing through. */
class RowCounter extends Transform {
  rows = 0;
  last = NEWLINE;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) this.rows++;
    if (chunk.length > 0) this.last = chunk[chunk.length - 1] ?? NEWLINE;
    done(null, chunk);
  }
}

/** Hashes and measures the bytes passing through. */
class Digest extends Transform {
  readonly hash = createHash("sha256");
  bytes = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    done(null, chunk);
  }
}

/** Every table of `dump` written to `<dir>/database/`, one after the other; what the manifest records of each. */
export async function writeTables({ dump, dir, signal }: { dump: MirrorDump; dir: string; signal?: AbortSignal | undefined }): Promise<TableEntry[]> {
  const entries: TableEntry[] = [];
  for (const table of dump.tables) {
    const file = tableFile(table.name);
    const source = dump.copy(table);
    const counter = new RowCounter();
    const digest = new Digest();
    await pipeline(source, counter, createGzip(), digest, createWriteStream(path.join(dir, file), { flags: "wx", mode: 0o600 }), signal ? { signal } : {});
    // The server's count and the lines written agree, or the text format is not what this file says it is.
    if (counter.rows !== source.rows) throw new Error(`${table.name}: the server sent ${source.rows} rows in ${counter.rows} lines`);
    entries.push({ name: table.name, file, columns: table.columns, rows: counter.rows, bytes: digest.bytes, sha256: digest.hash.digest("hex") });
  }
  return entries;
}

/**
 * One table file of a backup read to its end (a folder dvault does not own: src/foreign-file.ts), unpacked and its
 * rows counted: its bytes' sha256 and its rows. `into`, when given, takes the unpacked rows (restore's COPY … FROM
 * STDIN). Throws what stopped it: the file refused, gzip's complaint about a file damaged or cut short, or a last
 * row without its end.
 */
export async function readTableFile(
  file: string,
  { into, signal }: { into?: Writable; signal?: AbortSignal | undefined } = {},
): Promise<{ sha256: string; rows: number }> {
  const digest = new Digest();
  const counter = new RowCounter();
  const chunks = foreignFileChunks(file, { maxBytes: Number.MAX_SAFE_INTEGER, ...(signal ? { signal } : {}) });
  const sink = into ?? new Writable({ write: (_c, _e, done) => done() });
  await pipeline(Readable.from(chunks), digest, createGunzip(), counter, sink, signal ? { signal } : {});
  if (counter.last !== NEWLINE) throw new Error("its last row has no end");
  return { sha256: digest.hash.digest("hex"), rows: counter.rows };
}
