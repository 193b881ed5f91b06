// ensureEmbedded: the embedded server made (initdb once), running (started detached unless it already runs) and
// holding the `dvault` database, as a connection URL. The caller holds postgres.lock (src/db/embedded/lease.ts):
// two processes starting at once make and start it once.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { registerSecret } from "../../redact.ts";
import { EXIT_UNAVAILABLE, UserError } from "../../errors.ts";
import { freePort } from "../../free-port.ts";
import { ensureDatabase } from "../connect.ts";
import { pgBinaries, type PgBinaries } from "./binaries.ts";
import { dataDirFault, type EmbeddedLayout, embeddedLayout, newFolder, readState } from "./layout.ts";
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

/** The server's URL; with `password`, the one dvault connects with (the password is registered as a secret). */
export const embeddedUrl = (port: number, password?: string, database = EMBEDDED_DATABASE) =>
  `postgresql://${SUPERUSER}${password === undefined ? "" : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/${database}`;

/**
 * The superuser's password: made (mode 600) with a server that is made; a server made without one refuses, since
 * nothing else may connect to it on 127.0.0.1.
 */
function settlePassword(layout: EmbeddedLayout, folder: string, making: boolean): string {
  let password: string | undefined;
  try {
    password = readFileSync(layout.passwordFile, "utf8").trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw dataDirFault(err, layout) ?? err;
  }
  if (!password && !making) {
    throw new UserError(
      `the embedded server's password file ${layout.passwordFile} is missing or empty: put it back, or move ${folder} aside and dvault makes the server anew`,
    );
  }
  if (!password) {
    password = randomBytes(24).toString("base64url");
    writeFileSync(layout.passwordFile, `${password}\n`, { mode: 0o600 });
    chmodSync(layout.passwordFile, 0o600);
  }
  registerSecret(password);
  return password;
}

/** The server's folder, made by initdb when it holds no data yet (with its password); another major's data is refused. */
async function settleFolder(folder: string, bin: PgBinaries, user: ServerUser, layout: EmbeddedLayout): Promise<{ initialized: boolean; password: string }> {
  const major = folderMajor(folder);
  if (major !== undefined) {
    if (major !== bin.major) throw otherMajorError(folder, major, bin.major);
    return { initialized: false, password: settlePassword(layout, folder, false) };
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
  const password = settlePassword(layout, folder, true);
  await initCluster({ bin, folder, user, password });
  return { initialized: true, password };
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

/** The line for a data folder that holds no embedded server, where the command may not make one. */
export function noServerHere(dataDir: string): UserError {
  return new UserError(
    `no embedded PostgreSQL server in ${dataDir} (DVAULT_DATA_DIR, else ~/.local/share/dvault): if your install is elsewhere, set DVAULT_DATA_DIR to its folder; to make a new one here, run dvault migrate`,
    EXIT_UNAVAILABLE,
  );
}

/**
 * `create: false` (every command but `dvault migrate`, `dvault restore` and the demo): a data folder with no server in it is refused in
 * one line instead of made anew. A DVAULT_DATA_DIR typed wrong, or a HOME other than the install's (sudo, a service
 * unit), otherwise opened a new empty install without a word: status said "none yet: log in", and logging in there
 * archived everything again, spending the week's originals on files the archive already held.
 */
export async function ensureEmbedded(config: { dataDir: string }, { create = true }: { create?: boolean } = {}): Promise<EmbeddedServer> {
  const bin = pgBinaries();
  const user = serverUser();
  const layout = embeddedLayout(config.dataDir);
  const state = readState(layout);
  const folder = state?.folder ?? newFolder(config.dataDir, user);
  if (!create && !state && !existsSync(folder)) throw noServerHere(config.dataDir);
  const { initialized, password } = await settleFolder(folder, bin, user, layout);
  const { port, started } = await settlePort(layout, folder, bin, user);
  if (state?.folder !== folder || state.port !== port) writeFileSync(layout.stateFile, `${JSON.stringify({ folder, port }, null, 2)}\n`);
  const url = embeddedUrl(port, password);
  const databaseCreated = await ensureDatabase(url);
  return { url, port, folder, initialized, started, databaseCreated };
}
