// Backup and restore of everything dvault holds: the database (format 2: each table of the mirror through the
// driver, table-files.ts, read from one snapshot; format 1, on request where pg_dump fits the server: pg_dump's
// custom format), the archive
// (src/storage/store.ts: the local folder, files and its readable tree of links, copied as it is; or every
// object of the S3 bucket, downloaded under its key) and the secret key without which stored tokens cannot be
// read. A backup is a plain directory with a manifest, the same layout whichever store it came from, so it
// restores into either (restore.ts, after backup-check.ts has checked the whole backup).
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import type { Dirent } from "node:fs";
import { copyFile, cp, readdir, readFile, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Config } from "../config.ts";
import { listFinishedMigrations } from "../db/database-info.ts";
import { type MirrorDump, openMirrorDump } from "../db/mirror-dump.ts";
import { pgFields } from "../db/pg-fields.ts";
import { UserError } from "../errors.ts";
import { foreignFileChunks } from "../foreign-file.ts";
import { maskUrl, scrubString } from "../redact.ts";
import { existingSecretKey } from "../secret-key.ts";
import { downloadBlob } from "../storage/blob-transfer.ts";
import { openBlobStore } from "../storage/store.ts";
import { makeDirs } from "../make-dirs.ts";
import { errCode } from "../storage/layout.ts";
import { DISK_FULL_CODES } from "../storage/storage-fault.ts";
import { DATABASE_DIR, type TableEntry, writeTables } from "./table-files.ts";

export const MANIFEST = "manifest.json";
export const DUMP = "database.dump";
export const KEY = "secret.key";
export const ARCHIVE = "archive";
/**
 * Made first in a backup's folder and removed just before its manifest is written: a folder holding it and no
 * manifest is a backup stopped before its end (SIGKILL, a lost machine, Ctrl-C past its grace), whose next run into
 * the same --out clears what that run wrote and begins again. It names its writer (BackupOptions.writer): a backup
 * whose writer still runs on this machine is not a stopped one, and is refused rather than cleared.
 */
export const UNFINISHED = ".dvault-backup-unfinished";

/** What every format's manifest holds besides its database. */
type ManifestCommon = {
  createdAt: string;
  dvaultVersion: string;
  /** `store`: where the archive was read from (absent in backups written before there was a choice: local). */
  archive: { included: boolean; files: number; bytes: number; store?: "local" | "s3" };
  /** Whether the key was copied (it is, unless it came from DVAULT_SECRET_KEY, which you keep yourself, or none was found: source "file"). */
  secretKey: { included: boolean; source: "file" | "env" };
};

/** Format 1: the database as one pg_dump archive (custom format). */
export type BackupManifestV1 = ManifestCommon & { format: 1; database: { file: string; bytes: number; sha256: string; migrations: string[] } };

/**
 * Format 2: the database as one file per table (table-files.ts), with the migrations that made its schema; `bytes`
 * is the files' sum. Restore makes the schema from those migrations and checks each table's columns against it.
 */
export type BackupManifestV2 = ManifestCommon & {
  format: 2;
  database: { dump: "copy-text-gzip"; bytes: number; migrations: string[]; tables: TableEntry[] };
};

export type BackupManifest = BackupManifestV1 | BackupManifestV2;

/** How the database is written: `copy` (format 2, everywhere) or `pg_dump` (format 1, where a pg_dump of the server's major is installed). */
export type DatabaseDump = "copy" | "pg_dump";

/** A PostgreSQL client tool that ended with an error; `detail` is the last of what it said (scrubbed of secrets). */
export class PgToolError extends UserError {
  constructor(
    readonly tool: string,
    readonly detail: string,
    url: string,
  ) {
    super(`${tool} failed for ${maskUrl(url)}: ${detail}`);
    this.name = "PgToolError";
  }
}

/** Runs a PostgreSQL client tool with the connection in the environment (never the password in argv); `signal` stops it. */
export function runPgTool(tool: string, args: string[], url: string, signal?: AbortSignal): Promise<void> {
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
    const child = spawn(tool, args, { env, stdio: ["ignore", "ignore", "pipe"], ...(signal ? { signal } : {}) });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", (err: NodeJS.ErrnoException) =>
      reject(
        err.code === "ENOENT"
          ? new UserError(`${tool} is not installed: install the PostgreSQL client tools (Debian: apt-get install postgresql-client)`)
          : err,
      ),
    );
    child.on("close", (code) => {
      if (signal?.aborted) return reject(signal.reason);
      if (code === 0) return resolve();
      reject(new PgToolError(tool, scrubString(stderr.trim().split("\n").slice(-2).join(" ")), url));
    });
  });
}

/** The sha256 of a file, read as src/foreign-file.ts reads one (a backup is a folder dvault does not own). */
export async function sha256File(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of foreignFileChunks(file, { maxBytes: Number.MAX_SAFE_INTEGER, ...(signal ? { signal } : {}) })) hash.update(chunk);
  return hash.digest("hex");
}

export async function treeSize(dir: string): Promise<{ files: number; bytes: number }> {
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

export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return true;
    if ((err as NodeJS.ErrnoException).code === "ENOTDIR") throw new UserError(`${dir} is a file, not a folder: choose a new directory`);
    throw new UserError(`cannot read the backup's directory ${dir} (${errCode(err) ?? String(err)}): choose another one`);
  }
}

type BackupOptions = {
  config: Config;
  out: string;
  includeArchive?: boolean;
  version: string;
  database?: DatabaseDump;
  signal?: AbortSignal;
  /** Hears the folder when an unfinished backup left there by a stopped run was cleared to begin again. */
  onUnfinishedCleared?: (dir: string) => void;
  /**
   * This process as the marker names it, and whether the writer a marker names still runs on this machine (the CLI
   * passes src/queue/holder.ts's thisWriterTag and writerHere): a backup still being written is refused, not cleared.
   */
  writer?: { tag: string; stillRuns: (tag: string) => boolean };
};

/** The names a backup writes into its folder: what clearing an unfinished one may remove, and nothing else. */
const WRITTEN = new Set([UNFINISHED, DATABASE_DIR, DUMP, ARCHIVE, KEY]);

/**
 * An unfinished backup in `dir` (its marker, no manifest, nothing but what a backup writes) is removed, so that the
 * run can begin again; true when one was. Any other file there leaves the folder as it is.
 */
async function clearUnfinished(dir: string, writer: BackupOptions["writer"]): Promise<boolean> {
  const names = await readdir(dir).catch(() => [] as string[]);
  if (!names.includes(UNFINISHED) || names.includes(MANIFEST) || names.some((n) => !WRITTEN.has(n))) return false;
  // Not stopped: still being written by a process of this machine (two runs into one --out, a cron's and a person's).
  const named = /^writer (\S+)$/m.exec(await readFile(path.join(dir, UNFINISHED), "utf8").catch(() => ""))?.[1];
  if (named !== undefined && writer?.stillRuns(named)) {
    throw new UserError(`${dir} holds a backup that another dvault process on this machine is still writing: wait for it to end, or choose another --out`);
  }
  for (const name of names.filter((n) => n !== UNFINISHED)) await rm(path.join(dir, name), { recursive: true, force: true });
  await rm(path.join(dir, UNFINISHED), { force: true });
  return true;
}

export async function createBackup(opts: BackupOptions): Promise<BackupManifest> {
  const dir = path.resolve(opts.out);
  // The key that exists, read before anything is written (a key file that holds no key is its one line, not a half
  // backup), and never one made now: a new key in place of a lost one would open none of the stored tokens.
  const key = existingSecretKey(opts.config);
  if (!(await isEmptyDir(dir))) {
    if (!(await clearUnfinished(dir, opts.writer))) throw new UserError(`${dir} is not empty: choose a new directory for the backup`);
    opts.onUnfinishedCleared?.(dir);
  }
  // The database first: a typo in DATABASE_URL leaves no empty backup directory behind.
  const dump = (opts.database ?? "copy") === "copy" ? await openMirrorDump(opts.config.databaseUrl) : undefined;
  const made = await makeDirs(dir, 0o700).catch(async (err: unknown) => {
    await dump?.close();
    throw new UserError(`cannot make the backup's directory ${dir} (${errCode(err) ?? String(err)}): choose another one`);
  });
  try {
    return await writeBackup({ ...opts, dir, dump, key });
  } catch (err) {
    // A backup without its manifest restores nothing, and its folder, no longer empty, would refuse the next run: what
    // this run wrote goes (the folder was empty or absent when it began), and a full or read-only disk is one line.
    const written = made
      ? [made]
      : await readdir(dir).then(
          (names) => names.map((name) => path.join(dir, name)),
          () => [],
        );
    for (const entry of written) await rm(entry, { recursive: true, force: true }).catch(() => undefined);
    throw backupWriteFault(err, dir) ?? err;
  }
}

const REFUSED = new Set(["EROFS", "EACCES", "EPERM"]);

/** A failed write into the backup's folder in one line: its disk full, or the folder refusing writes. */
function backupWriteFault(err: unknown, dir: string): UserError | undefined {
  const code = errCode(err) ?? "";
  const file = (err as { path?: unknown } | null)?.path;
  const gone = "the unfinished backup was removed";
  if (DISK_FULL_CODES.has(code)) return new UserError(`no space left for the backup in ${dir} (${code}): ${gone}; free space there, or choose another --out`);
  if (REFUSED.has(code) && typeof file === "string" && (file === dir || file.startsWith(`${dir}${path.sep}`))) {
    return new UserError(`cannot write the backup into ${dir} (${code}): ${gone}; choose another --out, or give dvault write access there`);
  }
  return undefined;
}

/** The database, the archive, the key and the manifest into `dir`, made and empty. */
async function writeBackup(
  o: BackupOptions & { dir: string; dump: MirrorDump | undefined; key: ReturnType<typeof existingSecretKey> },
): Promise<BackupManifest> {
  const { config, dir, dump, key, signal } = o;
  // Names its writer, so that a second run into this folder while this one still runs is refused, not cleared.
  const writer = o.writer ? `writer ${o.writer.tag}\n` : "";
  await writeFile(path.join(dir, UNFINISHED), `a backup that has not ended: run dvault backup into this folder again\n${writer}`, { mode: 0o600 });
  let db: BackupManifest["database"] & { bytes: number };
  try {
    const migrations = dump ? dump.migrations : await listFinishedMigrations(config.databaseUrl);
    db = dump ? await writeMirror({ dump, dir, signal: o.signal }) : await writePgDump({ config, dir, migrations });
  } finally {
    await dump?.close();
  }

  const store = openBlobStore(config);
  let archive: BackupManifest["archive"] = { included: false, files: 0, bytes: 0, store: store.kind };
  if (o.includeArchive ?? true) {
    if (store.kind === "local") {
      // verbatimSymlinks: the readable tree's links stay relative, so the copy works wherever it lands.
      // The filter runs before each entry: a stop (Ctrl-C) ends the copy there, not after the whole archive.
      const filter = () => {
        signal?.throwIfAborted();
        return true;
      };
      await cp(config.archiveDir, path.join(dir, ARCHIVE), { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false, filter }).catch(
        (err: NodeJS.ErrnoException) => {
          if (err.code !== "ENOENT") throw err;
        },
      );
    } else {
      for await (const info of store.list("")) {
        signal?.throwIfAborted();
        await downloadBlob({ store, key: info.key, file: path.join(dir, ARCHIVE, ...info.key.split("/")) });
      }
    }
    archive = { included: true, ...(await treeSize(path.join(dir, ARCHIVE))), store: store.kind };
  }

  if (key?.source === "file" && key.path) await copyFile(key.path, path.join(dir, KEY));

  const common = {
    createdAt: new Date().toISOString(),
    dvaultVersion: o.version,
    archive,
    secretKey: { included: key?.source === "file", source: key?.source ?? "file" },
  };
  const manifest: BackupManifest = "tables" in db ? { format: 2, ...common, database: db } : { format: 1, ...common, database: db };
  signal?.throwIfAborted();
  // The marker goes first: a stop between the two leaves a folder without either, which restore and the next backup
  // both refuse, never a finished backup that restore calls damaged for a file its manifest does not list.
  await unlink(path.join(dir, UNFINISHED));
  await writeFile(path.join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  return manifest;
}

/** Format 2's database: every table of the snapshot into `database/`. */
async function writeMirror({ dump, dir, signal }: { dump: MirrorDump; dir: string; signal: AbortSignal | undefined }): Promise<BackupManifestV2["database"]> {
  await makeDirs(path.join(dir, DATABASE_DIR), 0o700);
  const tables = await writeTables({ dump, dir, signal });
  return { dump: "copy-text-gzip", bytes: tables.reduce((sum, t) => sum + t.bytes, 0), migrations: dump.migrations, tables };
}

/** Format 1's database: pg_dump's custom format (pg_dump refuses a server of a later major than its own, in its words). */
async function writePgDump({ config, dir, migrations }: { config: Config; dir: string; migrations: string[] }): Promise<BackupManifestV1["database"]> {
  const dumpFile = path.join(dir, DUMP);
  await runPgTool("pg_dump", ["--format=custom", "--no-owner", "--no-privileges", `--file=${dumpFile}`], config.databaseUrl);
  return { file: DUMP, bytes: (await stat(dumpFile)).size, sha256: await sha256File(dumpFile), migrations };
}
