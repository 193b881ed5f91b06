// ensureEmbedded: the embedded server made (initdb once), running (started detached unless it already runs) and
// holding the `dvault` database, as a connection URL. The caller holds postgres.lock (src/db/embedded/lease.ts):
// two processes starting at once make and start it once.
import { readdirSync, writeFileSync } from "node:fs";
import { UserError } from "../../errors.ts";
import { freePort } from "../../free-port.ts";
import { ensureDatabase } from "../connect.ts";
import { pgBinaries, type PgBinaries } from "./binaries.ts";
import { type EmbeddedLayout, embeddedLayout, newFolder, readState } from "./layout.ts";
import { folderMajor, initCluster, otherMajorError, portFree, runningServer, startServer, SUPERUSER } from "./server.ts";
import { serverUser, type ServerUser } from "./server-user.ts";

/** The database dvault keeps its mirror in, on the embedded server. */
export const EMBEDDED_DATABASE = "dvault";

export type EmbeddedServer = Readonly<{
  url: string;
  port: number;
  /** The server's data folder. */
  folder: string;
  /** What this call did: made the folder (initdb), started the server, created the `dvault` database. */
  initialized: boolean;
  started: boolean;
  databaseCreated: boolean;
}>;

export const embeddedUrl = (port: number, database = EMBEDDED_DATABASE) => `postgresql://${SUPERUSER}@127.0.0.1:${port}/${database}`;

/** The server's folder, made by initdb when it holds no data yet; another major's data is refused. */
async function settleFolder(folder: string, bin: PgBinaries, user: ServerUser): Promise<boolean> {
  const major = folderMajor(folder);
  if (major !== undefined) {
    if (major !== bin.major) throw otherMajorError(folder, major, bin.major);
    return false;
  }
  const present = (() => {
    try {
      return readdirSync(folder);
    } catch {
      return undefined;
    }
  })();
  if (present !== undefined) {
    throw new UserError(
      `${folder} exists but holds no PostgreSQL data (no readable PG_VERSION): move it aside, and dvault makes the embedded server's folder anew`,
    );
  }
  await initCluster({ bin, folder, user });
  return true;
}

/** The port of the running server, or the one it is started on: the state's, unless another program took it meanwhile. */
async function settlePort(layout: EmbeddedLayout, folder: string, bin: PgBinaries, user: ServerUser): Promise<{ port: number; started: boolean }> {
  const running = runningServer(folder);
  if (running) return { port: running.port, started: false };
  const remembered = readState(layout)?.port;
  const port = remembered !== undefined && (await portFree(remembered)) ? remembered : await freePort();
  await startServer({ bin, folder, user, port });
  return { port, started: true };
}

export async function ensureEmbedded(config: { dataDir: string }): Promise<EmbeddedServer> {
  const bin = pgBinaries();
  const user = serverUser();
  const layout = embeddedLayout(config.dataDir);
  const state = readState(layout);
  const folder = state?.folder ?? newFolder(config.dataDir, user);
  const initialized = await settleFolder(folder, bin, user);
  const { port, started } = await settlePort(layout, folder, bin, user);
  if (state?.folder !== folder || state.port !== port) writeFileSync(layout.stateFile, `${JSON.stringify({ folder, port }, null, 2)}\n`);
  const url = embeddedUrl(port);
  const databaseCreated = await ensureDatabase(url);
  return { url, port, folder, initialized, started, databaseCreated };
}
