// `dvault restore`: all or nothing, into a target it owns. The whole backup is checked first (backup-check.ts);
// the targets must be empty (a database with no tables, an empty folder or bucket); the archive is copied into a
// staging folder inside the target folder (so the switch is a rename on one filesystem, a mount point too) or put
// into the bucket, the key written beside its place, and then the database goes in as one transaction. Format 2
// (table-load.ts) opens that transaction first (migrations, the columns compared with the manifest, every table
// loaded) and commits it once the archive is staged, so a manifest that does not match is refused before the
// archive is touched; format 1 runs `pg_restore --single-transaction` there. Only then are the staged folders
// and the key renamed into place. A failure
// or a stop before that takes back what was staged (and a database restore created), so the same command runs
// again; a staging folder a killed restore left is cleared by the next one.
import { constants } from "node:fs";
import { copyFile, link, lstat, mkdir, readdir, rename, rm, rmdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { type Config, parseSecretKey } from "../config.ts";
import { connectPg, dropDatabase, ensureDatabase } from "../db/connect.ts";
import { ReadableTreeRepository } from "../db/readable-tree.repository.ts";
import { countPublicTables } from "../db/database-info.ts";
import { pgFields } from "../db/pg-fields.ts";
import { UserError } from "../errors.ts";
import { maskUrl } from "../redact.ts";
import { existingSecretKey, keyFilePath } from "../secret-key.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { errCode, PARTIAL_DIR } from "../storage/layout.ts";
import { DISK_FULL_CODES, folderFault } from "../storage/storage-fault.ts";
import { freeBytesAt } from "../storage/free-space.ts";
import { formatBytes } from "../text/bytes.ts";
import { openBlobStore } from "../storage/store.ts";
import { originalOf } from "../storage/thumbnails.ts";
import { type BackupManifest, runPgTool, sha256File } from "./backup.ts";
import { type CheckedArchive, checkBackup } from "./backup-check.ts";
import { loadMirror } from "./table-load.ts";
import type { MirrorLoad } from "../db/mirror-load.ts";
import { makeDirs } from "../make-dirs.ts";

/** The staging folder inside the target archive folder; one a stopped restore left is removed by the next. */
const STAGING = ".dvault-restore";

export type RestoreResult = {
  manifest: BackupManifest;
  databaseRestored: boolean;
  archiveFiles: number;
  /** Originals of the backup left out of a bucket: their bytes no longer hash to their key. */
  damaged: string[];
  keyRestored: boolean;
  /** The secret key after the restore (restoredKey): whether the restored tokens can be read with it. */
  key: RestoredKey;
};

/**
 * The key the restored tokens meet: the backup's, put in place ("restored"); or the one configured before, kept
 * (DVAULT_SECRET_KEY, or a key file made meanwhile, by a first login on the new machine): the backup's own ("same"),
 * another, with which they cannot be read ("other"), or one the backup cannot be compared with, holding none
 * ("kept"); or none at all ("none").
 */
export type RestoredKey = "restored" | "same" | "other" | "kept" | "none";

/** What is staged for one target: put into place after the dump is in, or taken back. */
type Staged = { commit(): Promise<void>; undo(): Promise<void> };

export async function restoreBackup({ config, from, signal }: { config: Config; from: string; signal?: AbortSignal }): Promise<RestoreResult> {
  const backup = await checkBackup(path.resolve(from), { databaseUrl: config.databaseUrl, signal });
  const store = openBlobStore(config);
  if (store.kind === "local" && backup.archive) await checkRoom(config.archiveDir, backup.archive);
  const staged: Staged[] = [];
  const created = await ensureDatabase(config.databaseUrl);
  let load: MirrorLoad | undefined;
  try {
    if ((await countPublicTables(config.databaseUrl)) > 0) {
      throw new UserError(
        `the database ${maskUrl(config.databaseUrl)} is not empty: restore into a new database (set DATABASE_URL to one that does not exist yet)`,
      );
    }
    const { manifest, tables } = backup;
    if (tables) load = await loadMirror({ databaseUrl: config.databaseUrl, migrations: manifest.database.migrations, tables, signal });
    let archiveFiles = 0;
    let damaged: string[] = [];
    if (store.kind === "local") {
      const local = await stageFolder(config.archiveDir, backup.archive, signal);
      staged.push(local);
      archiveFiles = backup.archive?.files.length ?? 0;
    } else if (backup.archive) {
      if (!(await isEmptyStore(store))) {
        throw new UserError(
          `the bucket ${store.describe()} is not empty: restore into an empty bucket (set DVAULT_S3_BUCKET), or restore with DVAULT_STORAGE=local`,
        );
      }
      const bucket = await stageBucket(store, backup.archive, signal);
      staged.push(bucket);
      ({ files: archiveFiles, damaged } = bucket);
    }
    const key = backup.key !== undefined && !config.secretKey ? await stageKey(keyFilePath(config), backup.key) : undefined;
    if (key) staged.push(key);
    if (load) await load.commit();
    else if (backup.dumpFile) await pgRestore(config.databaseUrl, backup.dumpFile, signal);
    await forgetTreeSweep(config.databaseUrl);
    // The database is in: from here on only renames.
    for (const s of staged) await s.commit();
    const keyRestored = key?.restored ?? false;
    return {
      manifest: backup.manifest,
      databaseRestored: true,
      archiveFiles,
      damaged,
      keyRestored,
      key: keyRestored ? "restored" : keptKey(config, backup.key),
    };
  } catch (err) {
    await load?.close();
    for (const s of staged.reverse()) await s.undo().catch(() => undefined);
    if (created) await dropDatabase(config.databaseUrl).catch(() => undefined);
    throw err;
  } finally {
    await load?.close();
  }
}

/**
 * The readable tree's record (src/db/readable-tree.repository.ts) describes the tree as it was when the database was
 * read, but the tree restored beside it was copied later (the archive after the snapshot, or by rsync beside a
 * `--no-archive` backup): without its sweep the next write rebuilds the tree and sweeps what the record does not
 * hold, instead of trusting it. A backup made before the record has no such table.
 */
async function forgetTreeSweep(databaseUrl: string): Promise<void> {
  const client = await connectPg(databaseUrl);
  try {
    await new ReadableTreeRepository(client).forgetSweep();
  } finally {
    await client.end();
  }
}

/** Format 1: pg_dump's archive in one transaction. */
function pgRestore(databaseUrl: string, dumpFile: string, signal: AbortSignal | undefined): Promise<void> {
  const db = pgFields(databaseUrl).database;
  return runPgTool("pg_restore", ["--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", `--dbname=${db}`, dumpFile], databaseUrl, signal);
}

async function isEmptyStore(store: BlobStore): Promise<boolean> {
  for await (const _ of store.list("")) return false;
  return true;
}

/**
 * The backup's archive copied into `<target>/.dvault-restore/`, the target being absent, empty, or holding only
 * what a stopped restore left there. Its files are copied as they are: backup-check.ts proved each a regular file
 * and each link one of the readable tree's. A backup without its archive (`--no-archive`) writes nothing there, so
 * the folder is left as it is, whatever it holds: the archive copied there beside the backup (README, "Backups and
 * restore": rsync -a) is the archive the restored database names. Refused, it would be moved aside for an empty
 * folder, and every file the rows name would be downloaded again, spending the weekly allowance.
 */
async function stageFolder(target: string, archive: CheckedArchive | undefined, signal: AbortSignal | undefined): Promise<Staged> {
  const staging = path.join(target, STAGING);
  const found = await readdir(target).catch((err: unknown) => {
    if (errCode(err) === "ENOENT") return undefined;
    throw err;
  });
  if (archive && found?.some((name) => name !== STAGING)) {
    throw new UserError(`the archive directory ${target} is not empty: restore into a new directory (set DVAULT_ARCHIVE_DIR)`);
  }
  await rm(staging, { recursive: true, force: true });
  if (!archive) return { commit: async () => undefined, undo: async () => undefined };
  // The one write that proves the target takes files: a folder that refuses is said in one line (storage-fault.ts).
  const made = await makeDirs(staging, 0o700).catch((err: unknown) => {
    throw folderFault(err) ?? err;
  });
  const moved: string[] = [];
  const undo = async () => {
    for (const name of moved) await rm(path.join(target, name), { recursive: true, force: true });
    // The first folder made: the staging folder, or the target and the parents it lacked.
    await rm(made ?? staging, { recursive: true, force: true });
  };
  try {
    for (const dir of archive.dirs) await mkdir(path.join(staging, dir));
    for (const file of archive.files) {
      signal?.throwIfAborted();
      await copyFile(path.join(archive.root, file.rel), path.join(staging, file.rel), constants.COPYFILE_EXCL);
    }
    for (const l of archive.links) await symlink(l.target, path.join(staging, l.rel));
  } catch (err) {
    await undo().catch(() => undefined);
    const code = errCode(err) ?? "";
    throw DISK_FULL_CODES.has(code) ? noRoom(target, archive, `the disk ran out of space while the archive was copied (${code})`) : err;
  }
  return {
    async commit() {
      for (const name of await readdir(staging)) {
        await rename(path.join(staging, name), path.join(target, name));
        moved.push(name);
      }
      await rmdir(staging);
    },
    undo,
  };
}

/** The bytes of the archive's files. */
function archiveBytes(archive: CheckedArchive): number {
  return archive.files.reduce((sum, f) => sum + f.size, 0);
}

function noRoom(target: string, archive: CheckedArchive, why: string): UserError {
  return new UserError(
    `the archive needs ${formatBytes(archiveBytes(archive))} in ${target}, and ${why}: free space there, or set DVAULT_ARCHIVE_DIR to a disk with room; nothing was restored`,
  );
}

/** Before anything is written: a target folder whose disk cannot hold the archive is said at once, not after the database loaded. */
async function checkRoom(target: string, archive: CheckedArchive): Promise<void> {
  const free = await freeBytesAt(target).catch(() => undefined);
  if (free !== undefined && free < archiveBytes(archive)) throw noRoom(target, archive, `its disk has ${formatBytes(free)} free`);
}

/**
 * Every file of the backup's archive put into the (empty) bucket under its relative path. The readable tree's links
 * are left out (a bucket holds none: the links job writes its index instead, docs/storage-readers.md), and so are
 * partial files of unfinished downloads. An original whose bytes do not hash to the sha256 its key names (the
 * backup was damaged since) is left out and listed: put back at its content address it would pass for the good
 * file, and downloads of the same content would adopt it. Undone object by object.
 */
async function stageBucket(store: BlobStore, archive: CheckedArchive, signal: AbortSignal | undefined): Promise<Staged & { files: number; damaged: string[] }> {
  const put: string[] = [];
  const damaged: string[] = [];
  const undo = async () => {
    for (const key of put) await store.remove(key);
  };
  try {
    for (const { rel: key } of archive.files) {
      signal?.throwIfAborted();
      if (key.startsWith(`${PARTIAL_DIR}/`)) continue;
      const file = path.join(archive.root, ...key.split("/"));
      const original = originalOf({ key, size: 0 });
      if (original && (await sha256File(file, signal)) !== original.sha256) {
        damaged.push(key);
        continue;
      }
      await store.putFile(key, file, signal ? { signal } : {});
      put.push(key);
    }
  } catch (err) {
    await undo().catch(() => undefined);
    throw err;
  }
  return { files: put.length, damaged: damaged.sort(), commit: async () => undefined, undo };
}

/** The key a restore left in place (RestoredKey), compared with the backup's. */
function keptKey(config: Config, backupKey: string | undefined): Exclude<RestoredKey, "restored"> {
  let there: Buffer | undefined;
  try {
    there = existingSecretKey(config)?.key;
  } catch {
    // A key file there that cannot be read: kept, and not the backup's key as far as the tokens are concerned.
    return "other";
  }
  if (!there) return "none";
  if (backupKey === undefined) return "kept";
  return parseSecretKey(backupKey)?.equals(there) ? "same" : "other";
}

/**
 * The backup's key written beside its place, linked into it at the switch. A key already there is kept (a
 * mismatch shows as a clear error on the first token use).
 */
async function stageKey(target: string, text: string): Promise<(Staged & { restored: boolean }) | undefined> {
  const there = await lstat(target).catch((err: unknown) => {
    if (errCode(err) === "ENOENT") return undefined;
    throw err;
  });
  if (there) return undefined;
  const staged = `${target}.restore-${process.pid}`;
  let made: string | undefined;
  try {
    made = await makeDirs(path.dirname(target), 0o700);
    await writeFile(staged, text, { mode: 0o600 });
  } catch (err) {
    throw new UserError(
      `cannot write the secret key beside ${target} (${errCode(err) ?? String(err)}): give dvault write access to ${path.dirname(target)}, or set DVAULT_CONFIG_DIR`,
    );
  }
  const result = {
    restored: false,
    async commit() {
      // link, not rename: a key another process wrote meanwhile is kept, not replaced.
      await link(staged, target).then(
        () => {
          result.restored = true;
        },
        (err: unknown) => {
          if (errCode(err) !== "EEXIST") throw err;
        },
      );
      await rm(staged, { force: true });
    },
    // The folders made for it go too: a refused restore leaves the config folder as it found it.
    undo: () => rm(made ?? staged, { recursive: true, force: true }),
  };
  return result;
}
