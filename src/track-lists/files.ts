// The files of `dvault track import|export`: read with a one-line error when they cannot be, written whole
// (a temporary file renamed over the target, so an interrupted export never leaves half a list).
import fs from "node:fs/promises";
import path from "node:path";
import type { AccountRow } from "../db/account.repository.ts";
import type { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { UserError } from "../errors.ts";
import { formatTrackList, type ExportedUser } from "./format.ts";
import { formatNamed, formatOfFileName } from "./parse.ts";

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

export type ExportOptions = { repo: TrackedUserRepository; accounts: readonly AccountRow[]; format?: string; output?: string; now: Date };

/** The tracked users of `accounts` in the format asked for (else the one --output's name says, else OPML). */
export async function exportTrackList(o: ExportOptions): Promise<string> {
  const format = o.format !== undefined ? formatNamed(o.format) : ((o.output ? formatOfFileName(o.output) : undefined) ?? "opml");
  const users: ExportedUser[] = [];
  for (const account of o.accounts) for (const t of await o.repo.listTrackedUsers(account.id)) users.push({ account: account.name, ...t });
  return formatTrackList(format, users, o.now);
}
