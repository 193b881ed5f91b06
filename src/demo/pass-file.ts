// The demo's PostgreSQL password file. The commands the demo prints (psql, and dvault's own, whose driver reads the
// same file) name DATABASE_URL without its password and PGPASSFILE=<this file>, libpq's standard place for one: so
// they run as pasted, while the password is never printed to a terminal, a log or a shell's history. Written only when
// the URL has a password, mode 600, in the demo's own folder (emptied by its next run).
import { chmodSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pgFields } from "../db/pg-fields.ts";

/** The file's name in the demo's folder. */
export const DEMO_PASS_FILE = "pgpass";

/** A field of a password file's line: `:` and `\` escaped with `\` (libpq's rule, which node-postgres's pgpass follows). */
const field = (value: string | number) => String(value).replace(/[\\:]/g, (c) => `\\${c}`);

/** The URL without its password: what a printed command names. */
export function urlWithoutPassword(url: string): string {
  const u = new URL(url);
  u.password = "";
  return u.toString();
}

/** Writes the password file of `url` into `dir` when the URL has a password: its path, or undefined (nothing to keep). */
export function writeDemoPassFile(dir: string, url: string): string | undefined {
  const f = pgFields(url);
  if (f.password === undefined) return undefined;
  const file = path.join(dir, DEMO_PASS_FILE);
  writeFileSync(file, `${[f.host, f.port, f.database, f.user, f.password].map(field).join(":")}\n`, { mode: 0o600 });
  // Both readers ignore a file that others may read.
  chmodSync(file, 0o600);
  return file;
}
