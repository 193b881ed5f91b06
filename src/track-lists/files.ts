// The files of `dvault track import|export`: read with a one-line error when they cannot be, written whole
// (a temporary file renamed over the target, so an interrupted export never leaves half a list).
import fs from "node:fs/promises";
import path from "node:path";
import type { AccountRow } from "../db/account.repository.ts";
import type { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { UserError } from "../errors.ts";
import { formatTrackList, type ExportedUser } from "./format.ts";
import { formatNamed, formatOfFileName, type TrackListFormat } from "./parse.ts";

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

export async function readTrackListFile(file: string): Promise<string> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read ${file}: ${because(err)}`);
  }
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
