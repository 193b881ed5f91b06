// `dvault backup` and `dvault restore`: the database, the archive and the secret key, as one directory.
import path from "node:path";
import type { Command } from "commander";
import { createBackup } from "../backup/backup.ts";
import { type RestoredKey, restoreBackup } from "../backup/restore.ts";
import { KEY } from "../backup/backup.ts";
import { type Config, loadConfig } from "../config.ts";
import { describeBucket } from "../config/storage.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { thisWriterTag, writerHere } from "../queue/holder.ts";
import { EXIT_FAILED, EXIT_INTERRUPTED, UserError } from "../errors.ts";
import { formatBytes } from "../text/bytes.ts";
import { keyFilePath } from "../secret-key.ts";
import { VERSION } from "../version.ts";
import { printErr, printJson, printOut } from "./output/print.ts";
import { stopOnSignal } from "./stop-signal.ts";

const version = VERSION;

/**
 * `run` with Ctrl-C and SIGTERM wired to its signal (stop-signal.ts): a run the stop ended is the one line `stopped`,
 * exit 130; `release` (the embedded server's hold) goes either way.
 */
async function untilStopped<T>(o: { what: string; stopped: string; release: () => void }, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = stopOnSignal(o.what);
  try {
    return await run(stop.signal);
  } catch (err) {
    if (stop.signal.aborted) throw new UserError(o.stopped, EXIT_INTERRUPTED);
    throw err;
  } finally {
    stop.dispose();
    o.release();
  }
}

export function registerBackupCommands(program: Command): void {
  program
    .command("backup")
    .description("write the database (every table, through the driver), the archive directory and the secret key to a new directory")
    .requiredOption("--out <dir>", "a new or empty directory for the backup")
    .option("--no-archive", "leave the archive's files out (back up the folder with rsync, or a bucket by its own means)")
    .option("--pg-dump", "write the database with pg_dump instead (backup format 1): only where pg_dump's major is the server's")
    .addHelpText(
      "after",
      "\nThe database is read from one snapshot, whatever a worker writes meanwhile: each table of the mirror as\nCOPY's text, gzipped, in database/<table>.copy.gz, with the migrations that made its schema. No PostgreSQL\nclient tools are needed, and it restores into the same or a later PostgreSQL major.\n\nThe archive is read from its blob store (DVAULT_STORAGE): the local folder as it is, or every object of the\nS3 bucket downloaded into the backup. A bucket that is versioned or replicated elsewhere needs no copy: --no-archive.",
    )
    .option("--json", "print the backup's manifest as JSON")
    .action(async (opts: { out: string; archive: boolean; pgDump?: boolean; json?: boolean }) => {
      // DATABASE_URL=embedded: the server dvault runs, held while the backup reads it.
      const { config, release } = await resolveDatabase(loadConfig(), { migrate: false });
      const database = opts.pgDump ? "pg_dump" : "copy";
      // Ctrl-C stops the copy at its next file and removes what this run wrote (src/backup/backup.ts UNFINISHED).
      // The marker names this process: a second run into the folder while this one writes is refused, not cleared.
      const writer = { tag: thisWriterTag(), stillRuns: (tag: string) => writerHere(tag) === "alive" };
      const onUnfinishedCleared = (dir: string) => printErr(`dvault: removed the unfinished backup a stopped run left in ${dir}; writing it again`);
      const m = await untilStopped({ what: "backup", stopped: "backup stopped: the unfinished backup was removed; run it again", release }, (signal) =>
        createBackup({ config, out: opts.out, includeArchive: opts.archive, version, database, signal, onUnfinishedCleared, writer }),
      );
      if (opts.json) return printJson({ out: opts.out, ...m });
      printOut(`backup written to ${opts.out}`);
      const tables = m.format === 2 ? `, ${m.database.tables.length} tables` : " (pg_dump)";
      printOut(`  database: ${formatBytes(m.database.bytes)}, ${m.database.migrations.length} migrations${tables}`);
      printOut(`  archive:  ${m.archive.included ? `${m.archive.files} files, ${formatBytes(m.archive.bytes)}` : "not included"}`);
      printOut(
        m.secretKey.included
          ? "  key:      included (keep this backup private: with the key, its tokens can be read)"
          : m.secretKey.source === "env"
            ? "  key:      comes from DVAULT_SECRET_KEY, not included: keep that value with the backup yourself"
            : `  key:      none found (no DVAULT_SECRET_KEY, no key file ${keyFilePath(config)}): the backup holds no key, and stored tokens can only be read with the key they were encrypted with (restore that key, or log in again)`,
      );
    });
  program
    .command("restore")
    .description("restore a backup into an empty database and an empty archive directory")
    .addHelpText(
      "after",
      "\nThe archive goes into the configured blob store (DVAULT_STORAGE): an empty folder, or an empty S3 bucket\n(every file put under its relative path, an original only when its bytes match the sha256 of its name; the\nreadable tree's links are left out, the worker writes its index). Exit code 1 when originals were left out.\nA backup made with --no-archive writes nothing there: the folder or bucket is left as it is, the archive you\ncopied there (rsync -a) included.\n\nThe whole backup is checked first (regular files only, links only those of the readable tree, every table file\nread to its end against its checksum and row count, the key there); then the backup's migrations make the\nschema, each table's columns must be what the manifest says, and the rows go in as one transaction. It is all\nor nothing: a refusal, a failure or Ctrl-C leaves the database and the folder as they were, and the command can\nrun again. A backup of format 1 (pg_dump) needs pg_restore and runs the dump's SQL: trust such a backup as you\nwould a database superuser.",
    )
    .requiredOption("--from <dir>", "the directory dvault backup wrote")
    .option("--json", "print what was restored as JSON")
    .action(async (opts: { from: string; json?: boolean }) => {
      // DATABASE_URL=embedded: the server dvault runs, its new database left empty for the backup (no migration here).
      // A restore makes an install as migrate does (a new machine after a disaster): it may make the server.
      const { config, embedded, release } = await resolveDatabase(loadConfig(), { migrate: false, create: true });
      // Said first: a data folder typed wrong gets a server of its own, and the restore goes there.
      if (embedded?.initialized) printErr(`dvault: made a new embedded PostgreSQL server in ${embedded.folder} for this restore (DVAULT_DATA_DIR)`);
      const r = await untilStopped({ what: "restore", stopped: "restore stopped: nothing was restored; run it again", release }, (signal) =>
        restoreBackup({ config, from: opts.from, signal }),
      );
      if (opts.json) printJson(r);
      else {
        const migrations = `${r.manifest.database.migrations.length} migrations`;
        if (r.manifest.archive.included) printOut(`restored the database (${migrations}) and ${r.archiveFiles} archive files`);
        else {
          // --no-archive: the archive was copied beside the backup (rsync), into the folder or bucket restore left alone.
          const where = config.storage.kind === "s3" ? describeBucket(config.storage) : config.archiveDir;
          printOut(`restored the database (${migrations}); the backup holds no archive: ${where} was left as it is (copy the archive there, if not done yet)`);
        }
        for (const key of r.damaged.slice(0, 20)) printOut(`  left out ${key}: its bytes do not match its sha256`);
        printOut(keyLine(r.key, config, opts.from));
        printOut("next: npx dvault migrate, then npx dvault verify and npx dvault auth status");
      }
      if (r.damaged.length > 0) {
        throw new UserError(
          `${r.damaged.length} original(s) in the backup are damaged and were left out of the bucket: everything else is restored; run dvault verify --fix to download them again`,
          EXIT_FAILED,
        );
      }
    });
}

/** What the restore did with the secret key, said so that tokens the kept key cannot read are never a surprise. */
function keyLine(key: RestoredKey, config: Config, from: string): string {
  const configured = config.secretKey ? "DVAULT_SECRET_KEY" : `the key file ${keyFilePath(config)}`;
  switch (key) {
    case "restored":
      return "restored the secret key";
    case "same":
      return `kept the configured secret key (${configured}): it is the backup's`;
    case "other": {
      const backupKey = path.join(path.resolve(from), KEY);
      // An environment variable has no place to copy a file into: it is set to the key the file holds.
      const use = config.secretKey ? `Set DVAULT_SECRET_KEY to the key in ${backupKey}` : `Put the backup's key ${backupKey} in its place`;
      return `kept the configured secret key (${configured}), which is not the backup's: the restored accounts' tokens cannot be read with it. ${use} (keep a copy of the other if anything was sealed with it), or log in again (dvault auth login)`;
    }
    case "kept":
      return `kept the configured secret key (${configured}); the backup holds none: the restored tokens can be read only if it is the key they were sealed with`;
    case "none":
      return "no secret key: the backup holds none and none is configured, so the restored tokens cannot be read; set DVAULT_SECRET_KEY to the key of the install backed up, or log in again (dvault auth login)";
    default:
      return key satisfies never;
  }
}
