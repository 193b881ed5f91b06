// The embedded server's life, through its own binaries: initdb once, `pg_ctl start` detached (the server
// outlives the process that started it: the last lease holder stops it, src/db/embedded/lease.ts), `pg_ctl
// stop -m fast`. Its settings: locale C, UTF8, its unix socket in the data folder and 127.0.0.1 with a password only.
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, chownSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { UserError } from "../../errors.ts";
import { makeDirsSync } from "../../make-dirs.ts";
import type { PgBinaries } from "./binaries.ts";
import type { ServerUser } from "./server-user.ts";

/** The server's own superuser (the URL's user). */
export const SUPERUSER = "postgres";

type Target = Readonly<{ bin: PgBinaries; folder: string; user: ServerUser }>;

const childEnv = () => ({ PATH: process.env.PATH ?? "", LC_ALL: "C" });
/** A root process runs the binaries as the server's user (initdb and pg_ctl refuse root), from a folder it can enter. */
const asUser = (user: ServerUser) => ({ cwd: "/", env: childEnv(), ...(user ? { uid: user.uid, gid: user.gid } : {}) });

function run(file: string, args: string[], user: ServerUser): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    // Detached: the server pg_ctl leaves behind belongs to no terminal's process group (a Ctrl-C to the command is not its).
    const child = spawn(file, args, { ...asUser(user), stdio: ["ignore", "pipe", "pipe"], detached: true });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** The major version of the data in `folder` (its PG_VERSION), or undefined when there is none yet or it names none. */
export function folderMajor(folder: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(folder, "PG_VERSION"), "utf8").trim();
  } catch {
    return undefined;
  }
  // An empty or garbled PG_VERSION (a folder damaged, or written by something else) names no major: not "PostgreSQL 0".
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

/** The one line for a data folder another PostgreSQL major made: no pg_upgrade ships, so it cannot be opened here. */
export function otherMajorError(folder: string, folderVersion: number, binaryVersion: number): UserError {
  return new UserError(
    `the embedded server's data folder ${folder} holds PostgreSQL ${folderVersion} data, which this dvault's PostgreSQL ${binaryVersion} cannot open (no pg_upgrade ships): back it up with the dvault version that made it (dvault backup), move the folder aside, and restore into a new one (dvault restore)`,
  );
}

export type Running = Readonly<{ pid: number; port: number }>;

/** A process by that pid exists (EPERM: it does, as another user's). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The server running on `folder`, from its postmaster.pid (pid on line 1, port on line 4), or undefined. */
export function runningServer(folder: string): Running | undefined {
  let lines: string[];
  try {
    lines = readFileSync(path.join(folder, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return undefined;
  return { pid, port };
}

/** Whether nothing listens on 127.0.0.1:port now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A unix socket's path is at most 107 bytes: the socket goes into the data folder when ".s.PGSQL.nnnnn" fits after it. */
const socketFits = (folder: string) => Buffer.byteLength(folder) + "/.s.PGSQL.65535".length <= 107;

/**
 * Who may connect: on the unix socket (in the data folder, mode 700: the server's user and root only) without a
 * password; on 127.0.0.1 with the superuser's password (scram-sha-256), never anyone on the machine who can reach
 * loopback (a superuser can run programs as the server's user: COPY … TO PROGRAM).
 */
export const PG_HBA =
  "# dvault (src/db/embedded/server.ts): the unix socket in the data folder, and 127.0.0.1 with a password, only.\nlocal all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n";

/** Makes the data folder (mode 700, the server user's) and runs initdb into it, then writes dvault's settings. */
export async function initCluster({ bin, folder, user, password }: Target & { password: string }): Promise<void> {
  makeDirsSync(path.dirname(folder));
  mkdirSync(folder, { mode: 0o700 });
  if (user) chownSync(folder, user.uid, user.gid);
  // The superuser's password goes to initdb through a file only the server's user reads, beside the folder (initdb
  // wants the folder empty), removed at once.
  const pwfile = `${folder}.pwfile`;
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (user) chownSync(pwfile, user.uid, user.gid);
  const args = ["-D", folder, "-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256"];
  const result = await run(bin.initdb, [...args, `--pwfile=${pwfile}`, "--no-instructions"], user).finally(() => rmSync(pwfile, { force: true }));
  if (result.code !== 0) throw new UserError(`initdb into ${folder} failed: ${lastLines(result.output)}`);
  // Files written into the folder keep the owner initdb gave them (writing an existing file keeps its owner).
  writeFileSync(path.join(folder, "pg_hba.conf"), PG_HBA);
  const socketDir = socketFits(folder) ? folder.replaceAll("'", "''") : "";
  appendFileSync(
    path.join(folder, "postgresql.conf"),
    `\n# dvault (src/db/embedded/server.ts): loopback only; the port is given at start (postgres.json beside dvault's data).\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${socketDir}'\n`,
  );
}

function lastLines(output: string): string {
  return output.trim().split("\n").slice(-3).join(" ").trim() || "no output";
}

/** `pg_ctl start`, waiting until the server accepts connections; the server is left running on its own. */
export async function startServer({ bin, folder, user, port }: Target & { port: number }): Promise<void> {
  const log = path.join(folder, "server.log");
  const result = await run(bin.pgCtl, ["start", "-D", folder, "-l", log, "-w", "-t", "60", "-s", "-o", `-p ${port}`], user);
  if (result.code === 0) return;
  const logTail = (() => {
    try {
      return lastLines(readFileSync(log, "utf8"));
    } catch {
      return "";
    }
  })();
  throw new UserError(`the embedded PostgreSQL server in ${folder} did not start: ${lastLines(`${result.output}\n${logTail}`)} (its log: ${log})`);
}

/** `pg_ctl stop -m fast` (connections are ended, the data is left consistent); synchronous, so an exiting process can do it. */
export function stopServerSync({ bin, folder, user }: Target): void {
  const result = spawnSync(bin.pgCtl, ["stop", "-D", folder, "-m", "fast", "-w", "-t", "60", "-s"], { ...asUser(user), encoding: "utf8" });
  if (result.status !== 0 && runningServer(folder)) {
    throw new UserError(`the embedded PostgreSQL server in ${folder} did not stop: ${lastLines(`${result.stdout ?? ""}\n${result.stderr ?? ""}`)}`);
  }
}
