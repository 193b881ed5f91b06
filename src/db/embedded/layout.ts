// Where the embedded server's files are. Under dvault's data folder (config.dataDir): postgres/ (the server's
// data folder), postgres.json (the state: that folder and the server's port, chosen once), postgres-leases/
// (one file per process using the server: src/db/embedded/lease.ts) and postgres.lock (held while a process
// starts, attaches to or stops the server). As root, the data folder must be one the server's user can enter:
// when dataDir lies under a folder it cannot (a root's home, mode 700), the data goes to a folder of its own
// under /var/lib/dvault instead, named after dataDir, and postgres.json says where.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "../../errors.ts";
import { enterableBy, type ServerUser } from "./server-user.ts";

/** Where a root's data folders go when the server's user cannot enter dataDir. */
export const ROOT_DATA_HOME = "/var/lib/dvault";

export type EmbeddedState = Readonly<{ folder: string; port: number }>;

export type EmbeddedLayout = Readonly<{
  dataDir: string;
  stateFile: string;
  /** The server superuser's password (mode 600): what a connection on 127.0.0.1 must give (src/db/embedded/server.ts PG_HBA). */
  passwordFile: string;
  leasesDir: string;
  lockFile: string;
}>;

export function embeddedLayout(dataDir: string): EmbeddedLayout {
  return Object.freeze({
    dataDir,
    stateFile: path.join(dataDir, "postgres.json"),
    passwordFile: path.join(dataDir, "postgres.password"),
    leasesDir: path.join(dataDir, "postgres-leases"),
    lockFile: path.join(dataDir, "postgres.lock"),
  });
}

/** The state written when the server's folder was made, or undefined before. */
export function readState(layout: EmbeddedLayout): EmbeddedState | undefined {
  let text: string;
  try {
    text = readFileSync(layout.stateFile, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw dataDirFault(err, layout) ?? err;
  }
  const state = (() => {
    try {
      return JSON.parse(text) as Partial<EmbeddedState>;
    } catch {
      return undefined;
    }
  })();
  if (typeof state?.folder !== "string" || !Number.isInteger(state.port)) {
    throw new UserError(`${layout.stateFile} is not the embedded server's state (a folder and a port): move it aside and run again to recreate it`);
  }
  return { folder: state.folder, port: state.port as number };
}

const DATA_DIR_FIXES: Readonly<Record<string, (dir: string, code: string) => string>> = {
  ENOTDIR: (dir) => `a file stands where dvault's data folder ${dir} must be (ENOTDIR): move it away, or set DVAULT_DATA_DIR to a folder`,
  EACCES: (dir, code) =>
    `dvault may not write to its data folder ${dir} (${code}): give the user dvault runs as write access to it, or set DVAULT_DATA_DIR to another folder`,
  EPERM: (dir, code) =>
    `dvault may not write to its data folder ${dir} (${code}): give the user dvault runs as write access to it (an immutable folder: chattr -i), or set DVAULT_DATA_DIR to another folder`,
  EROFS: (dir, code) => `dvault's data folder ${dir} is on a read-only file system (${code}): remount it read-write, or set DVAULT_DATA_DIR to another folder`,
};

/** A file system error on the data folder (a file in its place, a folder that refuses writes) as one line, or undefined. */
export function dataDirFault(err: unknown, layout: EmbeddedLayout): UserError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "";
  const fix = DATA_DIR_FIXES[code];
  return fix ? new UserError(fix(layout.dataDir, code)) : undefined;
}

/** The data folder for a server not made yet: dataDir/postgres, or (as root, dataDir not enterable) one under `rootHome`. */
export function newFolder(dataDir: string, user: ServerUser, rootHome = ROOT_DATA_HOME): string {
  if (!user || enterableBy(dataDir, user)) return path.join(dataDir, "postgres");
  const tag = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 12);
  return path.join(rootHome, `postgres-${tag}`);
}
