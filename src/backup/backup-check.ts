// What restore checks of a backup before it touches anything: a backup is a folder dvault does not own
// (docs/RELIABILITY.md#foreign-files). Its manifest, dump and key are regular files (no link, no FIFO) at the names
// the manifest gives, inside the backup; its archive holds folders and regular files only, and links only where
// dvault makes them (the readable tree, by-user/, each to a file of originals/ in the same backup); the dump hashes
// to its checksum and reads to its end (`pg_restore -f /dev/null`: `--list` passes a dump cut short); the key is
// there when the manifest says it was copied. Restore runs the dump's SQL, so a backup is trusted like a database
// superuser (README, "Backups and restore"): these checks keep out damage and accidents, such as a link that
// would make the restored archive a folder outside it, not the backup's author.
import type { Dirent } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { parseSecretKey } from "../config.ts";
import { UserError } from "../errors.ts";
import { ForeignFileError, readForeignFile } from "../foreign-file.ts";
import { ORIGINALS_DIR, READABLE_DIR } from "../storage/layout.ts";
import { ARCHIVE, type BackupManifest, KEY, MANIFEST, PgToolError, runPgTool, sha256File } from "./backup.ts";

const ManifestSchema = z.looseObject({
  format: z.literal(1),
  createdAt: z.string(),
  dvaultVersion: z.string(),
  database: z.looseObject({ file: z.string(), bytes: z.number(), sha256: z.string(), migrations: z.array(z.string()) }),
  archive: z.looseObject({ included: z.boolean(), files: z.number(), bytes: z.number(), store: z.enum(["local", "s3"]).optional() }),
  secretKey: z.looseObject({ included: z.boolean(), source: z.enum(["file", "env"]) }),
});

/** A backup's archive as checked: its folders (parents first), regular files and the readable tree's links, by relative path. */
export type CheckedArchive = {
  root: string;
  dirs: string[];
  files: Array<{ rel: string; size: number }>;
  links: Array<{ rel: string; target: string }>;
};

export type CheckedBackup = {
  dir: string;
  manifest: BackupManifest;
  dumpFile: string;
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
  const name = manifest.database.file;
  if (path.basename(name) !== name || name === "." || name === "..") throw damaged(`its manifest names the dump "${name}", not a file of the backup`);
  const dumpFile = path.join(dir, name);
  if ((await sha256Of(dumpFile, signal)) !== manifest.database.sha256)
    throw new UserError(`${dumpFile} does not match its checksum: the backup is damaged; ${UNTOUCHED}`);
  // Read to its end: a dump cut short, its checksum made again, passes `pg_restore --list` but not this.
  await runPgTool("pg_restore", ["--file=/dev/null", dumpFile], opts.databaseUrl, signal).catch((err: unknown) => {
    if (!(err instanceof PgToolError)) throw err;
    throw new UserError(`${dumpFile} cannot be read to its end (pg_restore: ${err.detail}): the backup is damaged or cut short; ${UNTOUCHED}`);
  });
  const key = manifest.secretKey.included ? await readKey(path.join(dir, KEY), signal) : undefined;
  const archive = manifest.archive.included ? await checkArchive(path.join(dir, ARCHIVE), manifest, signal) : undefined;
  return { dir, manifest, dumpFile, key, archive };
}

function damaged(what: string): UserError {
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
    throw new UserError(`${dir} holds no dvault backup (${why}); point --from at the directory dvault backup wrote`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== 1) throw new UserError(`backup format ${String(format)} is not supported by this dvault; upgrade dvault`);
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) throw damaged(`its ${MANIFEST} lacks ${parsed.error.issues[0]?.path.join(".") ?? "a field"}`);
  return parsed.data as BackupManifest;
}

async function sha256Of(file: string, signal: AbortSignal | undefined): Promise<string> {
  return sha256File(file, signal).catch((err: unknown) => {
    throw refused(err, "its dump");
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
