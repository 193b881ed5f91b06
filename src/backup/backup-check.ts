// What restore checks of a backup before it touches anything: a backup is a folder dvault does not own
// (docs/RELIABILITY.md#foreign-files). Its manifest, dump and key are regular files (no link, no FIFO) at the names
// the manifest gives, inside the backup, and nothing else is there (no file added, no database folder linked elsewhere); its archive holds folders and regular files only, and links only where
// dvault makes them (the readable tree, by-user/, each to a file of originals/ in the same backup); the database
// hashes to its checksums and reads to its end (format 2: every table file unpacked and its rows counted against
// the manifest, its migrations all known to this dvault; format 1: `pg_restore -f /dev/null`, since `--list`
// passes a dump cut short); the key is there when the manifest says it was copied. What a format-2 table's
// columns must be is known only once its migrations have made them: restore compares them inside its transaction,
// before a row goes in (restore.ts). Restoring format 1 runs the dump's SQL, so such a backup is trusted like a
// database superuser (README, "Backups and restore"); format 2 runs only dvault's own migrations and COPY. These
// checks keep out damage and accidents, such as a link that would make the restored archive a folder outside it.
import { type Dirent, existsSync } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { parseSecretKey } from "../config.ts";
import { UserError } from "../errors.ts";
import { ForeignFileError, readForeignFile } from "../foreign-file.ts";
import { ORIGINALS_DIR, READABLE_DIR } from "../storage/layout.ts";
import { knownMigrations } from "../db/mirror-load.ts";
import { ARCHIVE, type BackupManifest, type BackupManifestV2, KEY, MANIFEST, PgToolError, runPgTool, sha256File, UNFINISHED } from "./backup.ts";
import { DATABASE_DIR, readTableFile, TABLE_NAME, type TableEntry, tableFile } from "./table-files.ts";

const common = {
  createdAt: z.string(),
  dvaultVersion: z.string(),
  archive: z.looseObject({ included: z.boolean(), files: z.number(), bytes: z.number(), store: z.enum(["local", "s3"]).optional() }),
  secretKey: z.looseObject({ included: z.boolean(), source: z.enum(["file", "env"]) }),
};
const count = z.number().int().nonnegative();
const TableSchema = z.looseObject({
  name: z.string().regex(TABLE_NAME),
  file: z.string(),
  columns: z.array(z.looseObject({ name: z.string(), type: z.string() })),
  rows: count,
  bytes: count,
  sha256: z.string(),
});
const ManifestSchema = z.discriminatedUnion("format", [
  z.looseObject({
    format: z.literal(1),
    ...common,
    database: z.looseObject({ file: z.string(), bytes: z.number(), sha256: z.string(), migrations: z.array(z.string()) }),
  }),
  z.looseObject({
    format: z.literal(2),
    ...common,
    database: z.looseObject({ dump: z.literal("copy-text-gzip"), bytes: count, migrations: z.array(z.string()), tables: z.array(TableSchema) }),
  }),
]);

/** A backup's archive as checked: its folders (parents first), regular files and the readable tree's links, by relative path. */
export type CheckedArchive = {
  root: string;
  dirs: string[];
  files: Array<{ rel: string; size: number }>;
  links: Array<{ rel: string; target: string }>;
};

/** A table file of a format-2 backup as checked: its manifest entry and where it is. */
export type CheckedTable = TableEntry & { path: string };

export type CheckedBackup = {
  dir: string;
  manifest: BackupManifest;
  /** Format 1: pg_dump's archive. */
  dumpFile: string | undefined;
  /** Format 2: every table file, read to its end. */
  tables: CheckedTable[] | undefined;
  /** The key's text, when the manifest says it was copied. */
  key: string | undefined;
  /** undefined when the backup holds no archive. */
  archive: CheckedArchive | undefined;
};

/** Said after every refusal: nothing was touched, so the same command runs again once the backup is whole. */
const UNTOUCHED = "nothing was restored";

/** `databaseUrl`: only for the client tools' environment (reading the dump to its end connects to nothing). */
export async function checkBackup(dir: string, opts: { databaseUrl: string; signal?: AbortSignal | undefined }): Promise<CheckedBackup> {
  const { signal } = opts;
  const manifest = await readManifest(dir, signal);
  await checkEntries(dir, manifest);
  const tables = manifest.format === 2 ? await checkTables(dir, manifest, signal) : undefined;
  const dumpFile = manifest.format === 1 ? await checkDump(dir, manifest.database, opts) : undefined;
  const key = manifest.secretKey.included ? await readKey(path.join(dir, KEY), signal) : undefined;
  const archive = manifest.archive.included ? await checkArchive(path.join(dir, ARCHIVE), manifest, signal) : undefined;
  return { dir, manifest, dumpFile, tables, key, archive };
}

/**
 * The backup holds what dvault writes and nothing else: its manifest, key, archive folder and database (format 1:
 * the dump the manifest names; format 2: a folder, not a link, holding exactly the manifest's table files). A file
 * added beside them, or a database folder that is a link to one outside the backup, is someone's change.
 */
async function checkEntries(dir: string, manifest: BackupManifest): Promise<void> {
  const database = manifest.format === 1 ? manifest.database.file : DATABASE_DIR;
  const expected = new Set([MANIFEST, KEY, ARCHIVE, database]);
  const extra = (await readdir(dir)).find((name) => !expected.has(name));
  if (extra !== undefined) throw damaged(`it holds ${path.join(dir, extra)}, which dvault backup does not write`);
  if (manifest.format === 1) return;
  const folder = path.join(dir, DATABASE_DIR);
  const st = await lstat(folder).catch(() => undefined);
  if (!st?.isDirectory())
    throw damaged(`its ${folder} is ${st ? (st.isSymbolicLink() ? "a link" : "not a folder") : "missing"}, not the backup's folder of tables`);
  const listed = new Set(manifest.database.tables.map((t) => path.posix.basename(t.file)));
  const unlisted = (await readdir(folder)).find((name) => !listed.has(name));
  if (unlisted !== undefined) throw damaged(`it holds ${path.join(folder, unlisted)}, a file its ${MANIFEST} does not list`);
}

/** Format 1: pg_dump's archive hashes to its checksum and pg_restore reads it to its end. */
async function checkDump(
  dir: string,
  database: { file: string; sha256: string },
  { databaseUrl, signal }: { databaseUrl: string; signal?: AbortSignal | undefined },
): Promise<string> {
  const name = database.file;
  if (path.basename(name) !== name || name === "." || name === "..") throw damaged(`its manifest names the dump "${name}", not a file of the backup`);
  const dumpFile = path.join(dir, name);
  if ((await sha256Of(dumpFile, signal)) !== database.sha256)
    throw new UserError(`${dumpFile} does not match its checksum: the backup is damaged; ${UNTOUCHED}`);
  // Read to its end: a dump cut short, its checksum made again, passes `pg_restore --list` but not this.
  await runPgTool("pg_restore", ["--file=/dev/null", dumpFile], databaseUrl, signal).catch((err: unknown) => {
    if (!(err instanceof PgToolError)) throw err;
    throw new UserError(`${dumpFile} cannot be read to its end (pg_restore: ${err.detail}): the backup is damaged or cut short; ${UNTOUCHED}`);
  });
  return dumpFile;
}

/**
 * Format 2: its migrations are all this dvault's (a backup of a later dvault needs that dvault), each table named
 * once at its own file, and every file hashes to its checksum and unpacks to its end holding the rows the manifest
 * counts. A damaged file is named, with what to do.
 */
async function checkTables(dir: string, manifest: BackupManifestV2, signal: AbortSignal | undefined): Promise<CheckedTable[]> {
  const known = new Set(await knownMigrations());
  const unknown = manifest.database.migrations.find((m) => !known.has(m));
  if (unknown)
    throw new UserError(`the backup was made by a later dvault (its migration ${unknown} is not one of this dvault's): upgrade dvault; ${UNTOUCHED}`);
  const seen = new Set<string>();
  const checked: CheckedTable[] = [];
  for (const table of manifest.database.tables) {
    if (seen.has(table.name) || table.file !== tableFile(table.name))
      throw damaged(`its ${MANIFEST} names the table ${table.name} twice, or its file "${table.file}" is not ${tableFile(table.name)}`);
    seen.add(table.name);
    const file = path.join(dir, table.file);
    const again = `the backup is damaged; restore from another backup (${UNTOUCHED})`;
    if ((await sha256Of(file, signal, "its table file")) !== table.sha256) throw new UserError(`${file} does not match its checksum: ${again}`);
    const read = await readTableFile(file, { signal }).catch((err: unknown) => {
      signal?.throwIfAborted();
      throw new UserError(`${file} cannot be read to its end (${err instanceof Error ? err.message : String(err)}): ${again}`);
    });
    if (read.rows !== table.rows) throw new UserError(`${file} holds ${read.rows} rows where its manifest says ${table.rows}: ${again}`);
    checked.push({ ...table, path: file });
  }
  return checked;
}

export function damaged(what: string): UserError {
  return new UserError(`the backup is damaged or was altered: ${what}; ${UNTOUCHED}`);
}

/** A file of the backup that src/foreign-file.ts refused, in one line. */
function refused(err: unknown, what: string): unknown {
  if (!(err instanceof ForeignFileError)) return err;
  if (err.code === "ENOENT") return damaged(`${what} ${err.file} is missing`);
  return damaged(`${what} ${err.file} is ${err.reason}`);
}

async function readManifest(dir: string, signal: AbortSignal | undefined): Promise<BackupManifest> {
  let json: unknown;
  try {
    json = JSON.parse((await readForeignFile(path.join(dir, MANIFEST), { maxBytes: 1024 * 1024, ...(signal ? { signal } : {}) })).toString("utf8"));
  } catch (err) {
    signal?.throwIfAborted();
    const why = err instanceof ForeignFileError && err.code !== "ENOENT" ? `its ${MANIFEST} is ${err.reason}` : `no readable ${MANIFEST}`;
    if (existsSync(path.join(dir, UNFINISHED))) {
      throw new UserError(`${dir} holds a backup that was stopped before its end (${why}): restore an earlier one, or run dvault backup into it again`);
    }
    throw new UserError(`${dir} holds no dvault backup (${why}); point --from at the directory dvault backup wrote`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== 1 && format !== 2) throw new UserError(`backup format ${String(format)} is not supported by this dvault; upgrade dvault`);
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) throw damaged(`its ${MANIFEST} has no valid ${parsed.error.issues[0]?.path.join(".") ?? "field"}`);
  return parsed.data as BackupManifest;
}

async function sha256Of(file: string, signal: AbortSignal | undefined, what = "its dump"): Promise<string> {
  return sha256File(file, signal).catch((err: unknown) => {
    throw refused(err, what);
  });
}

async function readKey(file: string, signal: AbortSignal | undefined): Promise<string> {
  const text = await readForeignFile(file, { maxBytes: 4096, ...(signal ? { signal } : {}) }).then(
    (b) => b.toString("utf8"),
    (err: unknown) => {
      if (err instanceof ForeignFileError && err.code === "ENOENT") {
        throw new UserError(
          `${file} is missing, though the manifest says the key was copied: put it back, or restore with DVAULT_SECRET_KEY set to the key the backup was made with; ${UNTOUCHED}`,
        );
      }
      throw refused(err, "its key");
    },
  );
  if (!parseSecretKey(text)) throw damaged(`its key ${file} holds no 32-byte key`);
  return text;
}

/** Every entry of the backup's archive folder, refused unless it is a folder, a regular file or a link of the readable tree. */
async function checkArchive(root: string, manifest: BackupManifest, signal: AbortSignal | undefined): Promise<CheckedArchive | undefined> {
  const top = await lstat(root).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return undefined;
    throw err;
  });
  // An archive folder that was empty when the backup was made is not copied at all.
  if (!top) {
    if (manifest.archive.files === 0) return undefined;
    throw damaged(`its archive folder ${root} is missing`);
  }
  if (!top.isDirectory()) throw damaged(`${root} is ${top.isSymbolicLink() ? "a link" : "not a folder"}, not the archive's folder`);
  const checked: CheckedArchive = { root, dirs: [], files: [], links: [] };
  const walk = async (rel: string): Promise<void> => {
    signal?.throwIfAborted();
    const entries: Dirent[] = await readdir(path.join(root, rel), { withFileTypes: true });
    for (const e of entries) {
      const child = rel === "" ? e.name : `${rel}/${e.name}`;
      const st = await lstat(path.join(root, child));
      if (st.isDirectory()) {
        checked.dirs.push(child);
        await walk(child);
      } else if (st.isFile()) checked.files.push({ rel: child, size: st.size });
      else if (st.isSymbolicLink()) checked.links.push({ rel: child, target: await readlink(path.join(root, child)) });
      else throw damaged(`archive/${child} is not a regular file (${st.isFIFO() ? "a FIFO" : st.isSocket() ? "a socket" : "a device"})`);
    }
  };
  await walk("");
  const files = new Set(checked.files.map((f) => f.rel));
  for (const link of checked.links) {
    // Where dvault's readable tree puts links, relative, to a file of originals/ this backup holds.
    const to = path.posix.normalize(path.posix.join(path.posix.dirname(link.rel), link.target));
    const fine = link.rel.startsWith(`${READABLE_DIR}/`) && !path.posix.isAbsolute(link.target) && to.startsWith(`${ORIGINALS_DIR}/`) && files.has(to);
    if (!fine) throw damaged(`archive/${link.rel} is a link to ${link.target}, not to a file of the archive's ${ORIGINALS_DIR}/`);
  }
  if (checked.files.length !== manifest.archive.files) {
    throw damaged(`its archive holds ${checked.files.length} files where its manifest says ${manifest.archive.files}`);
  }
  return checked;
}
