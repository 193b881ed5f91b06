// Backup and restore of everything dvault holds: the database (pg_dump custom format), the archive
// (src/storage/store.ts: the local folder, files and its readable tree of links, copied as it is; or every
// object of the S3 bucket, downloaded under its key) and the secret key without which stored tokens cannot be
// read. A backup is a plain directory with a manifest, the same layout whichever store it came from, so it
// restores into either; restore refuses to overwrite data.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import type { Dirent } from "node:fs";
import { copyFile, cp, mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Config } from "../config.ts";
import { ensureDatabase } from "../db/connect.ts";
import { countPublicTables, listFinishedMigrations } from "../db/database-info.ts";
import { pgFields } from "../db/pg-fields.ts";
import { UserError } from "../errors.ts";
import { maskUrl, scrubString } from "../redact.ts";
import { keyFilePath, loadSecretKey } from "../secret-key.ts";
import type { BlobStore } from "../storage/blob-store.ts";
import { downloadBlob } from "../storage/blob-transfer.ts";
import { PARTIAL_DIR } from "../storage/layout.ts";
import { openBlobStore } from "../storage/store.ts";
import { originalOf } from "../storage/thumbnails.ts";

export const MANIFEST = "manifest.json";
const DUMP = "database.dump";
const KEY = "secret.key";
const ARCHIVE = "archive";

export type BackupManifest = {
  format: 1;
  createdAt: string;
  dvaultVersion: string;
  database: { file: string; bytes: number; sha256: string; migrations: string[] };
  /** `store`: where the archive was read from (absent in backups written before there was a choice: local). */
  archive: { included: boolean; files: number; bytes: number; store?: "local" | "s3" };
  /** Whether the key was copied (it is, unless it came from DVAULT_SECRET_KEY, which you keep yourself). */
  secretKey: { included: boolean; source: "file" | "env" };
};

/** Runs a PostgreSQL client tool with the connection in the environment (never the password in argv). */
function runPgTool(tool: string, args: string[], url: string): Promise<void> {
  const f = pgFields(url);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? "",
    PGHOST: f.host,
    PGPORT: String(f.port),
    PGUSER: f.user,
    PGDATABASE: f.database,
    ...(f.password ? { PGPASSWORD: f.password } : {}),
  };
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "ENOENT"
          ? new UserError(`${tool} is not installed: install the PostgreSQL client tools (Debian: apt-get install postgresql-client)`)
          : err,
      ),
    );
    child.on("close", (code) =>
      code === 0 ? resolve() : reject(new UserError(`${tool} failed for ${maskUrl(url)}: ${scrubString(stderr.trim().split("\n").slice(-2).join(" "))}`)),
    );
  });
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash("sha256");
  const { createReadStream } = await import("node:fs");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

async function treeSize(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch {
    return { files, bytes };
  }
  for (const e of entries) {
    if (!e.isFile()) continue;
    files++;
    bytes += (await stat(path.join(e.parentPath, e.name))).size;
  }
  return { files, bytes };
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw err;
  }
}

async function isEmptyStore(store: BlobStore): Promise<boolean> {
  for await (const _ of store.list("")) return false;
  return true;
}

/**
 * Every plain file of a backup's archive folder put into a bucket under its relative path. The readable tree's
 * links are left out (a bucket holds none: the links job writes its index instead, docs/storage-readers.md), and so
 * are partial files of unfinished downloads.
 */
/**
 * Puts every file of a backup's archive into the bucket under its relative path. An original whose bytes do not
 * hash to the sha256 its key names (the backup was damaged since) is left out and listed: put back at its content
 * address it would pass for the good file, and downloads of the same content would adopt it.
 */
async function uploadTree(store: BlobStore, root: string): Promise<{ files: number; damaged: string[] }> {
  let files = 0;
  const damaged: string[] = [];
  const entries = await readdir(root, { withFileTypes: true, recursive: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [] as Dirent[];
    throw err;
  });
  for (const e of entries) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    const key = path.relative(root, file).split(path.sep).join("/");
    if (key.startsWith(`${PARTIAL_DIR}/`)) continue;
    const original = originalOf({ key, size: 0 });
    if (original && (await sha256File(file)) !== original.sha256) {
      damaged.push(key);
      continue;
    }
    await store.putFile(key, file);
    files++;
  }
  return { files, damaged: damaged.sort() };
}

export async function createBackup({
  config,
  out,
  includeArchive = true,
  version,
}: {
  config: Config;
  out: string;
  includeArchive?: boolean;
  version: string;
}): Promise<BackupManifest> {
  const dir = path.resolve(out);
  if (!(await isEmptyDir(dir))) throw new UserError(`${dir} is not empty: choose a new directory for the backup`);
  // The database first: a typo in DATABASE_URL leaves no empty backup directory behind.
  const migrations = await listFinishedMigrations(config.databaseUrl);
  await mkdir(dir, { recursive: true, mode: 0o700 });

  const dumpFile = path.join(dir, DUMP);
  await runPgTool("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", `--file=${dumpFile}`], config.databaseUrl);

  const store = openBlobStore(config);
  let archive: BackupManifest["archive"] = { included: false, files: 0, bytes: 0, store: store.kind };
  if (includeArchive) {
    if (store.kind === "local") {
      // verbatimSymlinks: the readable tree's links stay relative, so the copy works wherever it lands.
      await cp(config.archiveDir, path.join(dir, ARCHIVE), { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false }).catch(
        (err: NodeJS.ErrnoException) => {
          if (err.code !== "ENOENT") throw err;
        },
      );
    } else {
      for await (const info of store.list("")) await downloadBlob({ store, key: info.key, file: path.join(dir, ARCHIVE, ...info.key.split("/")) });
    }
    archive = { included: true, ...(await treeSize(path.join(dir, ARCHIVE))), store: store.kind };
  }

  const key = loadSecretKey(config);
  if (key.source === "file" && key.path) await copyFile(key.path, path.join(dir, KEY));

  const manifest: BackupManifest = {
    format: 1,
    createdAt: new Date().toISOString(),
    dvaultVersion: version,
    database: { file: DUMP, bytes: (await stat(dumpFile)).size, sha256: await sha256File(dumpFile), migrations },
    archive,
    secretKey: { included: key.source === "file", source: key.source },
  };
  await writeFile(path.join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  return manifest;
}

export type RestoreResult = {
  manifest: BackupManifest;
  databaseRestored: boolean;
  archiveFiles: number;
  /** Originals of the backup left out of a bucket: their bytes no longer hash to their key. */
  damaged: string[];
  keyRestored: boolean;
};

/**
 * Restores into an EMPTY database and an empty archive directory; refuses otherwise, so a mistaken
 * restore can never overwrite what is archived.
 */
export async function restoreBackup({ config, from }: { config: Config; from: string }): Promise<RestoreResult> {
  const dir = path.resolve(from);
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(await readFile(path.join(dir, MANIFEST), "utf8")) as BackupManifest;
  } catch {
    throw new UserError(`${dir} holds no dvault backup (no readable ${MANIFEST}); point --from at the directory dvault backup wrote`);
  }
  if (manifest.format !== 1) throw new UserError(`backup format ${String(manifest.format)} is not supported by this dvault; upgrade dvault`);
  const dumpFile = path.join(dir, manifest.database.file);
  if ((await sha256File(dumpFile)) !== manifest.database.sha256) throw new UserError(`${dumpFile} does not match its checksum: the backup is damaged`);

  await ensureDatabase(config.databaseUrl);
  const tables = await countPublicTables(config.databaseUrl);
  if (tables > 0) {
    throw new UserError(
      `the database ${maskUrl(config.databaseUrl)} is not empty: restore into a new database (set DATABASE_URL to one that does not exist yet)`,
    );
  }
  const store = openBlobStore(config);
  if (store.kind === "local" && !(await isEmptyDir(config.archiveDir))) {
    throw new UserError(`the archive directory ${config.archiveDir} is not empty: restore into a new directory (set DVAULT_ARCHIVE_DIR)`);
  }
  if (store.kind === "s3" && manifest.archive.included && !(await isEmptyStore(store))) {
    throw new UserError(
      `the bucket ${store.describe()} is not empty: restore into an empty bucket (set DVAULT_S3_BUCKET), or restore with DVAULT_STORAGE=local`,
    );
  }
  await runPgTool(
    "pg_restore",
    ["--no-owner", "--no-privileges", "--exit-on-error", `--dbname=${pgFields(config.databaseUrl).database}`, dumpFile],
    config.databaseUrl,
  );

  let archiveFiles = 0;
  let damaged: string[] = [];
  if (manifest.archive.included && store.kind === "local") {
    await mkdir(path.dirname(config.archiveDir), { recursive: true });
    await cp(path.join(dir, ARCHIVE), config.archiveDir, { recursive: true, verbatimSymlinks: true }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
    archiveFiles = (await treeSize(config.archiveDir)).files;
  } else if (manifest.archive.included) {
    ({ files: archiveFiles, damaged } = await uploadTree(store, path.join(dir, ARCHIVE)));
  }

  let keyRestored = false;
  if (manifest.secretKey.included && !config.secretKey) {
    const target = keyFilePath(config);
    try {
      await stat(target);
      // A key already there: keep it; a mismatch shows as a clear error on the first token use.
    } catch {
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      await copyFile(path.join(dir, KEY), target);
      keyRestored = true;
    }
  }
  return { manifest, databaseRestored: true, archiveFiles, damaged, keyRestored };
}
