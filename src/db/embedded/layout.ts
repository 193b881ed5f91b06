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
  leasesDir: string;
  lockFile: string;
}>;

export function embeddedLayout(dataDir: string): EmbeddedLayout {
  return Object.freeze({
    dataDir,
    stateFile: path.join(dataDir, "postgres.json"),
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
    throw err;
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

/** The data folder for a server not made yet: dataDir/postgres, or (as root, dataDir not enterable) one under `rootHome`. */
export function newFolder(dataDir: string, user: ServerUser, rootHome = ROOT_DATA_HOME): string {
  if (!user || enterableBy(dataDir, user)) return path.join(dataDir, "postgres");
  const tag = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 12);
  return path.join(rootHome, `postgres-${tag}`);
}
