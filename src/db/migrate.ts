// Applies pending Prisma migrations (`prisma migrate deploy`) to a database that exists; creates it first only when
// the caller says so (`dvault migrate`, the demo's own database): nothing creates a database as a side effect.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import { connectPg, ensureDatabase } from "./connect.ts";
import { PACKAGE_ROOT as PROJECT_ROOT } from "../version.ts";

const require = createRequire(import.meta.url);

export type MigrateResult = {
  databaseCreated: boolean;
  applied: string[];
};

/**
 * `createDatabase`: create the database when it does not exist (only `dvault migrate` and the demo ask for it);
 * without it a missing database is the one-line DatabaseNotReadyError (exit code 3) of connectPg.
 */
export async function migrate(databaseUrl: string, { createDatabase = false }: { createDatabase?: boolean } = {}): Promise<MigrateResult> {
  const databaseCreated = createDatabase ? await ensureDatabase(databaseUrl) : false;
  // Fail with one clear line before handing over to the Prisma CLI, whose errors are verbose.
  const probe = await connectPg(databaseUrl);
  let upToDate = false;
  try {
    upToDate = !databaseCreated && (await migrationsUpToDate(probe));
  } finally {
    await probe.end();
  }
  // Nothing pending: `migrate deploy` would only say so, after ~1 s of starting the Prisma CLI (every --once run).
  if (upToDate) return { databaseCreated, applied: [] };
  const output = await runPrisma(["migrate", "deploy"], databaseUrl);
  return { databaseCreated, applied: parseApplied(output) };
}

type AppliedRow = { migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null };

/**
 * True when the database's migration table holds exactly the migrations under prisma/migrations, each finished,
 * none rolled back, each with the checksum Prisma records (SHA-256 of its migration.sql). Anything else — a
 * missing table, a pending, failed, edited or unknown migration — is left to `prisma migrate deploy`, which
 * applies or reports it as before.
 */
export async function migrationsUpToDate(client: Awaited<ReturnType<typeof connectPg>>): Promise<boolean> {
  const exists = await client.query("SELECT to_regclass('public._prisma_migrations') IS NOT NULL AS present");
  if (!(exists.rows[0] as { present: boolean } | undefined)?.present) return false;
  const { rows } = await client.query("SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations");
  const dir = path.join(PROJECT_ROOT, "prisma", "migrations");
  const names = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  const applied = rows as AppliedRow[];
  if (applied.length !== names.length) return false;
  const byName = new Map(applied.map((r) => [r.migration_name, r]));
  for (const name of names) {
    const row = byName.get(name);
    if (!row || row.finished_at === null || row.rolled_back_at !== null) return false;
    const sql = await readFile(path.join(dir, name, "migration.sql")).catch(() => undefined);
    if (!sql || createHash("sha256").update(sql).digest("hex") !== row.checksum) return false;
  }
  return true;
}

export function parseApplied(output: string): string[] {
  if (/No pending migrations to apply/i.test(output)) return [];
  const start = output.search(/following migration(?:s|\(s\))? ha(?:ve|s) been applied/i);
  if (start < 0) return [];
  // The CLI prints a tree: "migrations/", then "└─ <name>/" per migration, then "└─ migration.sql".
  return [...output.slice(start).matchAll(/└─\s*(\S+)\/\s*$/gm)].map((m) => m[1] ?? "").filter(Boolean);
}

function runPrisma(args: string[], databaseUrl: string): Promise<string> {
  const cli = require.resolve("prisma/build/index.js");
  const unrefTimers = path.join(PROJECT_ROOT, "scripts/prisma-unref-wasm-timers.cjs");
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--require", unrefTimers, cli, ...args], {
      cwd: PROJECT_ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        DATABASE_URL: databaseUrl,
        PRISMA_HIDE_UPDATE_MESSAGE: "1",
        CHECKPOINT_DISABLE: "1",
        NO_COLOR: "1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) return resolve(out);
      const reason = out
        .split("\n")
        .map((line) => line.trim())
        .filter((line) => line && !/^(Loaded Prisma config|Prisma schema loaded|Datasource|npm warn)/.test(line))
        .slice(-3)
        .join(" ");
      reject(new UserError(`applying migrations failed: ${scrubString(reason)}`));
    });
  });
}
