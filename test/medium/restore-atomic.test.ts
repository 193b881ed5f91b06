// Restore is all or nothing into a target it owns (docs/RELIABILITY.md#foreign-files): each bad backup (the
// `archive` entry a link to a folder outside, a FIFO in the archive, a readable-tree link out of it, a pg_dump
// archive of format 1 cut short with its checksum made again, the key missing) and a database that fails
// half-way through (either format) leave the target database and folder as they were, and a re-run with the good
// backup into the same target then succeeds. test/medium/backup-copy.test.ts damages format 2's table files.
import { PG_DUMP_FITS } from "../helpers/needs-pg-dump.ts";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackupManifest, createBackup } from "../../src/backup/backup.ts";
import { restoreBackup } from "../../src/backup/restore.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { loadSecretKey } from "../../src/secret-key.ts";
import { createArchivedHarness, dropDatabaseNamed, expectNoDatabase, spoiledCopy } from "../helpers/backup-fixture.ts";
import { testConfig } from "../helpers/config.ts";
import type { DownloadHarness } from "../helpers/download-harness.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

let h: DownloadHarness;
let base: string;
let good: string;
/** The same, its database written by pg_dump (format 1). */
let goodDump: string;
const targetDb = `dvault_t_restore_atomic_${process.pid}`;

beforeAll(async () => {
  h = await createArchivedHarness({ deviations: 10, quota: 4 });
  base = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-restore-atomic-"));
  good = path.join(base, "good");
  const configDir = path.join(base, "source-config");
  // A key file, as an install without DVAULT_SECRET_KEY has: the backup copies it.
  loadSecretKey(testConfig({ DVAULT_CONFIG_DIR: configDir }));
  const { DVAULT_SECRET_KEY: _env, ...env } = h.env;
  await createBackup({ config: testConfig({ ...env, DVAULT_CONFIG_DIR: configDir }), out: good, version: "test" });
  goodDump = path.join(base, "good-dump");
  if (PG_DUMP_FITS) await createBackup({ config: testConfig({ ...env, DVAULT_CONFIG_DIR: configDir }), out: goodDump, version: "test", database: "pg_dump" });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await dropDatabaseNamed(targetDb);
  if (base) await fs.rm(base, { recursive: true, force: true });
});

/** The one target every restore below goes to: a database that does not exist yet, a folder and a key that do not either. */
const target = () =>
  testConfig({
    DATABASE_URL: withDatabase(TEST_PG_URL, targetDb),
    DVAULT_ARCHIVE_DIR: path.join(base, "target", "archive"),
    DVAULT_CONFIG_DIR: path.join(base, "target", "config"),
  });

/** A copy of the good backup (or of `from`), changed by `spoil`. */
function spoiled(name: string, spoil: (dir: string, manifest: BackupManifest) => Promise<void>, from = good): Promise<string> {
  return spoiledCopy(from, path.join(base, name), spoil);
}

/** The target as restore found it: no database, nothing in the folder's parent, no key. */
async function expectUntouched(): Promise<void> {
  await expectNoDatabase(targetDb);
  expect(await fs.readdir(path.join(base, "target"))).toEqual([]);
}

describe("restore from a bad backup", () => {
  it("leaves the target untouched on each bad backup, and a re-run with the good one succeeds", async () => {
    await fs.mkdir(path.join(base, "target"));
    const outside = path.join(base, "outside");
    await fs.mkdir(outside);

    const archiveLink = await spoiled("archive-link", async (dir) => {
      await fs.rm(path.join(dir, "archive"), { recursive: true });
      await fs.symlink(outside, path.join(dir, "archive"));
    });
    const fifo = await spoiled("fifo", async (dir) => {
      execFileSync("mkfifo", [path.join(dir, "archive", "originals", "fifo")]);
    });
    const linkOut = await spoiled("link-out", async (dir) => {
      await fs.mkdir(path.join(dir, "archive", "by-user", "x"), { recursive: true });
      await fs.symlink("../../../../outside", path.join(dir, "archive", "by-user", "x", "escape.png"));
    });
    // A cut pg_dump archive, where pg_dump fits the test server (test/helpers/needs-pg-dump.ts).
    const truncated = !PG_DUMP_FITS
      ? undefined
      : await spoiled(
          "truncated",
          async (dir, m) => {
            if (m.format !== 1) throw new Error("goodDump is of format 1");
            const dump = path.join(dir, "database.dump");
            const bytes = await fs.readFile(dump);
            const cut = bytes.subarray(0, bytes.length - 500);
            await fs.writeFile(dump, cut);
            m.database.bytes = cut.length;
            m.database.sha256 = createHash("sha256").update(cut).digest("hex");
          },
          goodDump,
        );
    const noKey = await spoiled("no-key", async (dir) => {
      await fs.rm(path.join(dir, "secret.key"));
    });

    const refusals: Array<[string, RegExp]> = [
      [archiveLink, /the backup is damaged or was altered: .*archive is a link, not the archive's folder; nothing was restored$/],
      [fifo, /the backup is damaged or was altered: archive\/originals\/fifo is not a regular file \(a FIFO\); nothing was restored$/],
      [
        linkOut,
        /the backup is damaged or was altered: archive\/by-user\/x\/escape\.png is a link to \.\.\/\.\.\/\.\.\/\.\.\/outside, not to a file of the archive's originals\/; nothing was restored$/,
      ],
      ...(truncated === undefined
        ? []
        : [
            [
              truncated,
              /database\.dump cannot be read to its end \(pg_restore: .*end of file\): the backup is damaged or cut short; nothing was restored$/,
            ] as [string, RegExp],
          ]),
      [noKey, /secret\.key is missing, though the manifest says the key was copied: put it back, .*; nothing was restored$/],
    ];
    for (const [from, message] of refusals) {
      await expect(restoreBackup({ config: target(), from }), from).rejects.toThrow(message);
      await expectUntouched();
    }
    expect(await fs.readdir(outside)).toEqual([]);

    const restored = await restoreBackup({ config: target(), from: good });
    const manifest = JSON.parse(await fs.readFile(path.join(good, "manifest.json"), "utf8")) as BackupManifest;
    expect(restored).toMatchObject({ databaseRestored: true, archiveFiles: manifest.archive.files, keyRestored: true });
    // The readable tree's links came along, each still pointing inside the restored archive.
    const archive = target().archiveDir;
    const links = (await fs.readdir(path.join(archive, "by-user"), { recursive: true })).map((rel) => path.join(archive, "by-user", String(rel)));
    const linked = [];
    for (const l of links) if ((await fs.lstat(l)).isSymbolicLink()) linked.push((await fs.realpath(l)).startsWith(`${archive}/originals/`));
    expect(linked.length).toBeGreaterThan(0);
    expect(linked.every(Boolean)).toBe(true);
    expect(await fs.readdir(archive)).not.toContain(".dvault-restore");
  });

  // Format 1 where pg_dump fits the test server (test/helpers/needs-pg-dump.ts).
  it.for([
    ["format 2", () => good, /relation "accounts_name_key" already exists/, false],
    ["format 1 (pg_dump)", () => goodDump, /pg_restore failed/, !PG_DUMP_FITS],
  ] as const)(
    "takes back the staged archive and the database when the %s database fails half-way into a database that exists",
    async ([_name, from, message, noPgDump], ctx) => {
      if (noPgDump) ctx.skip("pg_dump does not fit the test server");
      const db = `${targetDb}_clash`;
      const admin = await connectPg(TEST_PG_URL);
      await admin.query(`CREATE DATABASE ${quoteIdent(db)}`);
      const clash = await connectPg(withDatabase(TEST_PG_URL, db));
      try {
        // No table, so restore takes it; but the name of an index the backup's schema makes is taken.
        await clash.query("CREATE SEQUENCE public.accounts_name_key");
        const config = testConfig({
          DATABASE_URL: withDatabase(TEST_PG_URL, db),
          DVAULT_ARCHIVE_DIR: path.join(base, "clash", "archive"),
          DVAULT_CONFIG_DIR: path.join(base, "clash", "config"),
        });
        await fs.rm(path.join(base, "clash"), { recursive: true, force: true });
        await fs.mkdir(config.archiveDir, { recursive: true });
        await expect(restoreBackup({ config, from: from() })).rejects.toThrow(message);
        expect(await fs.readdir(config.archiveDir)).toEqual([]);
        expect(await fs.readdir(path.join(base, "clash"))).toEqual(["archive"]);
        const objects = await clash.query(
          "SELECT (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public') AS tables, (SELECT count(*)::int FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public') AS relations, (SELECT count(*)::int FROM pg_type t WHERE t.typnamespace = 'public'::regnamespace AND t.typtype = 'e') AS enums",
        );
        expect(objects.rows[0]).toEqual({ tables: 0, relations: 1, enums: 0 });
      } finally {
        await clash.end();
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(db)} WITH (FORCE)`);
        await admin.end();
      }
    },
  );
});
