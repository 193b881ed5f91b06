// The files of `dvault track import|export`: read as files dvault does not own, a txt list as a stream (bounded
// memory whatever its size), with a one-line error when they cannot be; written whole (a temporary file renamed
// over the target, so an interrupted export never leaves half a list).
import fs from "node:fs/promises";
import path from "node:path";
import type { AccountRow } from "../db/account.repository.ts";
import type { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { UserError } from "../errors.ts";
import { ForeignFileError, foreignChunks, openForeignFile, readForeignFile } from "../foreign-file.ts";
import { formatBytes } from "../text/bytes.ts";
import { formatTrackList, type ExportedUser } from "./format.ts";
import { detectFormat, formatNamed, formatOfFileName, parseTrackList, TxtLines, type TrackList, type TrackListFormat } from "./parse.ts";

/** Why a file cannot be read or written, in words, by its error code. */
function because(err: unknown): string {
  switch ((err as NodeJS.ErrnoException).code) {
    case "ENOENT":
      return "no such file or folder";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "it is a folder";
    case "ENOSPC":
      return "the disk is full";
    default:
      return (err as Error).message;
  }
}

/** OPML and JSON are parsed whole: past this a list is refused (about 60 000 users of an OPML export, 100 000 of JSON). */
export const WHOLE_LIST_MAX_BYTES = 16 * 1024 * 1024;
/** A txt list is read as a stream, in bounded memory whatever its size; this only bounds the time it may take. */
const TXT_LIST_MAX_BYTES = 1024 * 1024 * 1024;
/** Bytes read at a time from a txt list: the text decoded from each stays out of V8's large-object space. */
const TXT_CHUNK_BYTES = 16 * 1024;
/** Bytes read to tell the format and the encoding. */
const HEAD_BYTES = 64 * 1024;
/** Entries handed to the import at a time. */
const BATCH_ENTRIES = 1000;

/** A track list being read: its format, and its entries batch by batch (a txt list as a stream, the others whole). */
export type TrackListSource = { format: TrackListFormat; batches: AsyncIterable<TrackList> | Iterable<TrackList> };

/**
 * Opens a track list, a file dvault does not own (src/foreign-file.ts: a regular file, not through a link, never
 * waiting on a FIFO), and reads enough of it to know its format: a file that is not a list fails here, before
 * anything else is done. OPML and JSON are read and parsed whole, up to WHOLE_LIST_MAX_BYTES.
 */
export async function openTrackList(file: string, forced?: string, signal?: AbortSignal): Promise<TrackListSource> {
  const { handle, stats } = await openList(file, signal);
  let head: Buffer = Buffer.alloc(0);
  try {
    for await (const chunk of foreignChunks(file, handle, { maxBytes: TXT_LIST_MAX_BYTES, chunkBytes: HEAD_BYTES, ...(signal ? { signal } : {}) })) {
      head = chunk;
      break;
    }
  } catch (err) {
    throw cannotRead(file, err);
  } finally {
    await handle.close();
  }
  const encoding = encodingOf(head);
  const text = new TextDecoder(encoding).decode(head, { stream: true });
  const format = detectFormat(file, text, forced);
  if (format !== "txt" && stats.size > WHOLE_LIST_MAX_BYTES) {
    throw new UserError(
      `${file} is ${formatBytes(stats.size)}: an OPML or JSON list is read whole, up to ${formatBytes(WHOLE_LIST_MAX_BYTES)}; give the usernames one a line (--format txt), which is read as a stream`,
    );
  }
  if (text.includes("\0")) throw notText(file);
  if (format === "txt") return { format, batches: txtBatches(file, encoding, signal) };
  const bytes = await readForeignFile(file, { maxBytes: WHOLE_LIST_MAX_BYTES, ...(signal ? { signal } : {}) }).catch((err: unknown) => {
    throw cannotRead(file, err);
  });
  return { format, batches: [parseTrackList(file, decodeTrackList(bytes), format)] };
}

/** The entries of a txt list, BATCH_ENTRIES at a time, read piece by piece. */
async function* txtBatches(file: string, encoding: string, signal: AbortSignal | undefined): AsyncGenerator<TrackList> {
  const list: TrackList = { format: "txt", entries: [], unresolved: [] };
  const lines = new TxtLines(list);
  const decoder = new TextDecoder(encoding);
  const take = (): TrackList => ({ format: "txt", entries: list.entries.splice(0), unresolved: list.unresolved.splice(0) });
  const { handle } = await openList(file, signal);
  try {
    for await (const chunk of foreignChunks(file, handle, { maxBytes: TXT_LIST_MAX_BYTES, chunkBytes: TXT_CHUNK_BYTES, ...(signal ? { signal } : {}) })) {
      const text = decoder.decode(chunk, { stream: true });
      if (text.includes("\0")) throw notText(file);
      lines.push(text);
      if (list.entries.length + list.unresolved.length >= BATCH_ENTRIES) yield take();
    }
  } catch (err) {
    throw cannotRead(file, err);
  } finally {
    await handle.close();
  }
  lines.push(decoder.decode());
  lines.end();
  yield take();
}

async function openList(file: string, signal: AbortSignal | undefined) {
  return openForeignFile(file, { maxBytes: TXT_LIST_MAX_BYTES, ...(signal ? { signal } : {}) }).catch((err: unknown) => {
    throw cannotRead(file, err);
  });
}

/** A refusal of src/foreign-file.ts as one line; anything else (a UserError, an abort) as it is. */
function cannotRead(file: string, err: unknown): unknown {
  if (!(err instanceof ForeignFileError)) return err;
  if (err.refusal === "unreadable") return new UserError(`cannot read ${file}: ${because(err)}`);
  return new UserError(`cannot read ${file}: ${err.reason}; give the list as a file of its own`);
}

function notText(file: string): UserError {
  return new UserError(`${file} is not a text file: give a list of usernames, an OPML file or a dvault JSON export`);
}

/** UTF-16 when the byte-order mark says so, else UTF-8. */
function encodingOf(bytes: Uint8Array): string {
  return bytes[0] === 0xff && bytes[1] === 0xfe ? "utf-16le" : bytes[0] === 0xfe && bytes[1] === 0xff ? "utf-16be" : "utf-8";
}

/**
 * A list's text: UTF-8 with or without a BOM, or UTF-16 when its BOM says so, which is what Windows
 * PowerShell's `>` and Notepad's "Unicode" write (read as UTF-8, every other byte is a NUL).
 */
export function decodeTrackList(bytes: Uint8Array): string {
  return new TextDecoder(encodingOf(bytes)).decode(bytes);
}

export async function writeTrackListFile(file: string, text: string): Promise<void> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    await fs.writeFile(tmp, text);
    await fs.rename(tmp, file);
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw new UserError(`cannot write ${file}: ${because(err)}`);
  }
}

/** The format of an export: --format, else the one --output's name says, else OPML. */
export function exportFormat(forced: string | undefined, output: string | undefined): TrackListFormat {
  if (forced !== undefined) return formatNamed(forced);
  return (output ? formatOfFileName(output) : undefined) ?? "opml";
}

export type ExportOptions = { repo: TrackedUserRepository; accounts: readonly AccountRow[]; format: TrackListFormat; now: Date };

/** The tracked users of `accounts`, by account and then by name, in `format`. */
export async function exportTrackList(o: ExportOptions): Promise<string> {
  const users: ExportedUser[] = [];
  for (const account of o.accounts) for (const t of await o.repo.listTrackedUsers(account.id)) users.push({ account: account.name, ...t });
  return formatTrackList(o.format, users, o.now);
}
