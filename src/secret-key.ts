// The key that encrypts tokens at rest: DVAULT_SECRET_KEY, or a key file created on first use (mode 0600).
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseSecretKey, type Config } from "./config.ts";
import { UserError } from "./errors.ts";
import { makeDirsSync } from "./make-dirs.ts";

export type SecretKey = { key: Buffer; source: "env" | "file"; path?: string; created: boolean };

export function keyFilePath(config: Config): string {
  return path.join(config.configDir, "secret.key");
}

/** Where the key is looked for, as a person must be told when it is not there. */
export function keyPlaces(config: Config): string {
  return `DVAULT_SECRET_KEY or the key file ${keyFilePath(config)}`;
}

/**
 * Where a refreshed grant waits while the database does not take it (src/api/pending-grants.ts): beside the key file,
 * on this machine's disk, out of the database and of backups (which copy only the key file of this folder).
 */
export function pendingGrantsDir(config: Config): string {
  return path.join(config.configDir, "pending-grants");
}

/** What a person must be told when the key file is created: the one file that must be backed up with the database. */
export function keyCreatedMessage(file: string): string {
  return `created the secret key file ${file}: back it up with the database (without it the stored tokens cannot be read)`;
}

/** The key; `onCreated` hears the path of a key file created just now (the caller says it where a person reads it). */
export function loadSecretKey(config: Config, onCreated?: (file: string) => void): SecretKey {
  if (config.secretKey) return { key: config.secretKey, source: "env", created: false };
  const file = keyFilePath(config);
  let text: string | undefined;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EISDIR") {
      throw new UserError(`the key file ${file} is a folder, not a file: move it away and restore secret.key from your backup, or set DVAULT_SECRET_KEY.`);
    }
    if (code !== "ENOENT") {
      throw new UserError(`cannot read the key file ${file} (${(err as Error).message}). Fix its permissions or set DVAULT_SECRET_KEY.`);
    }
  }
  if (text !== undefined) {
    const key = parseSecretKey(text);
    if (!key) throw new UserError(`the key file ${file} does not hold a 32-byte key (64 hex digits). Restore it from your backup.`);
    // Tightened when others may read it; a file that cannot be changed (a read-only mount: a Docker or Kubernetes
    // secret, another owner's file) still holds the key, and is used as it is.
    try {
      if (statSync(file).mode & 0o077) chmodSync(file, 0o600);
    } catch {
      /* the key was read: its mode is the mount's or its owner's business */
    }
    return { key, source: "file", path: file, created: false };
  }
  const key = randomBytes(32);
  makeDirsSync(path.dirname(file), 0o700);
  // wx: never overwrite a key another process wrote a moment ago; read theirs instead.
  try {
    writeFileSync(file, `${key.toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return loadSecretKey(config);
    throw err;
  }
  onCreated?.(file);
  return { key, source: "file", path: file, created: true };
}

/**
 * The key when one exists (DVAULT_SECRET_KEY, or the key file), never creating one: for checks that a request
 * from anyone can reach, where no key means nothing was ever signed under it.
 */
export function existingSecretKey(config: Config): SecretKey | undefined {
  if (!config.secretKey && !existsSync(keyFilePath(config))) return undefined;
  return loadSecretKey(config);
}
