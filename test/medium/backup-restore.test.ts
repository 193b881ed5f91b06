import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/backup.ts";
import { restoreBackup } from "../../src/backup/restore.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import { migrate } from "../../src/db/migrate.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { verifyArchive } from "../../src/downloads/verify.ts";
import { UserError } from "../../src/errors.ts";
import { createLogger } from "../../src/log.ts";
import { loadSecretKey } from "../../src/secret-key.ts";
import { createServices } from "../../src/services.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { dropDatabaseNamed, expectNoDatabase } from "../helpers/backup-fixture.ts";
import { testConfig } from "../helpers/config.ts";
import { countedDownloadFigures, keptDownloadFigures } from "../helpers/download-counts.ts";
import { TEST_PG_URL } from "../helpers/env.ts";
import { itNeedingPgDump } from "../helpers/needs-pg-dump.ts";
import { canMount } from "../helpers/tmpfs.ts";
import { createSyncHarness, SIM_CLIENT_ID, SIM_CLIENT_SECRET, type SyncHarness } from "../helpers/sync-harness.ts";

const log = createLogger({ level: "silent" });
const tmp = (name: string) => mkdtempSync(path.join(os.tmpdir(), `dvault-${name}-`));

describe("backup and restore", () => {
  let h: SyncHarness;
  const configDir = tmp("config");
  const restoredDb = `dvault_t_restore_${process.pid}`;
  const restoredArchive = path.join(tmp("restored"), "archive");
  const restoredConfigDir = tmp("restored-config");
  const backupDir = path.join(tmp("backup"), "b1");
  let manifest: Awaited<ReturnType<typeof createBackup>>;

  beforeAll(async () => {
    // The key file the original install uses; the harness seals its tokens with it.
    const key = loadSecretKey(testConfig({ DVAULT_CONFIG_DIR: configDir }));
    h = await createSyncHarness({
      sources: [gallerySource],
      overrides: { secretKey: key },
      sim: { dataset: { deviations: 60, galleryFolders: 3 }, downloadQuota: 5 },
    });
    await h.runSource("gallery");
    await runDownloadsOnce({ services: h.services, log, progressEveryMs: 60_000 });
    // The backup both restore tests start from (read only: each restores it somewhere of its own).
    manifest = await createBackup({ config: originalConfig(), out: backupDir, version: "test" });
  });
  afterAll(async () => {
    await h?.close();
    const admin = await connectPg(TEST_PG_URL);
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(restoredDb)} WITH (FORCE)`);
    await admin.end();
    for (const dir of [configDir, restoredConfigDir, path.dirname(restoredArchive), path.dirname(backupDir)]) rmSync(dir, { recursive: true, force: true });
  });

  const originalConfig = () => testConfig({ DATABASE_URL: h.db.url, DVAULT_ARCHIVE_DIR: h.services.config.archiveDir, DVAULT_CONFIG_DIR: configDir });
  const restoredConfig = () =>
    testConfig({
      DATABASE_URL: withDatabase(TEST_PG_URL, restoredDb),
      DVAULT_ARCHIVE_DIR: restoredArchive,
      DVAULT_CONFIG_DIR: restoredConfigDir,
      DVAULT_API_BASE: h.sim.url,
      DVAULT_CLIENT_ID: SIM_CLIENT_ID,
      DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
      DVAULT_REDIS_PREFIX: `${h.redis.prefix}-restored`,
    });

  it("restores into a fresh database and archive: verify finds everything intact and the accounts are usable", async () => {
    expect(manifest.archive.files).toBeGreaterThan(5);
    expect(manifest.secretKey.included).toBe(true);

    const restored = await restoreBackup({ config: restoredConfig(), from: backupDir });
    expect(restored).toMatchObject({ keyRestored: true, key: "restored" });
    expect(restored.archiveFiles).toBe(manifest.archive.files);
    // Nothing to apply: restore wrote Prisma's ledger as Prisma does.
    await expect(migrate(restoredConfig().databaseUrl)).resolves.toEqual({ databaseCreated: false, applied: [] });

    const services = await createServices({ config: restoredConfig(), log });
    try {
      const stored = (await services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE path IS NOT NULL")).rows[0]!.n;
      expect(stored).toBeGreaterThan(5);
      // The counters status reads came with the rows (loaded as they were, triggers off) and agree with them.
      expect(await keptDownloadFigures(services.pool)).toEqual(await countedDownloadFigures(services.pool));
      expect((await keptDownloadFigures(services.pool)).stored.files).toBeGreaterThan(5);
      const report = await verifyArchive({ deps: downloadDepsFor(services), fix: false, log });
      expect(report.missing).toEqual([]);
      expect(report.corrupt).toEqual([]);
      expect(report.ok).toBe(report.files);
      expect(report.files).toBeGreaterThan(5);
      // The readable tree came from the archive, copied after the database was read: its record is not trusted, the
      // next write rebuilds the tree (src/downloads/readable-links.ts), though the original's was swept.
      expect(await new ReadableTreeRepository(h.services.pool).rebuildDue()).toBe(false);
      expect(await new ReadableTreeRepository(services.pool).rebuildDue()).toBe(true);
      // The restored key opens the restored tokens: the account answers the placebo call.
      const [account] = (await services.accounts.list()).filter((a) => a.kind === "user");
      expect(account?.name).toBe(h.account.name);
      const status = await services.tokens().status(account!);
      expect(status).toMatchObject({ name: h.account.name, state: "ok", hasRefreshToken: true });
      const api = await services.apiFor(account!.id);
      await expect(api.client.placebo()).resolves.toMatchObject({ status: "success" });
    } finally {
      await services.close();
    }
  });

  it("refuses to restore over a database or an archive that holds data", async () => {
    await expect(restoreBackup({ config: originalConfig(), from: backupDir })).rejects.toThrow(/is not empty/);
    const other = path.join(tmp("occupied"), "archive");
    rmSync(other, { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(other, { recursive: true }));
    writeFileSync(path.join(other, "keep.txt"), "precious");
    const freshDb = `dvault_t_restore2_${process.pid}`;
    try {
      await expect(
        restoreBackup({
          config: testConfig({ DATABASE_URL: withDatabase(TEST_PG_URL, freshDb), DVAULT_ARCHIVE_DIR: other, DVAULT_CONFIG_DIR: tmp("c") }),
          from: backupDir,
        }),
      ).rejects.toBeInstanceOf(UserError);
      expect(readdirSync(other)).toEqual(["keep.txt"]);
    } finally {
      const admin = await connectPg(TEST_PG_URL);
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(freshDb)} WITH (FORCE)`);
      await admin.end();
    }
  });

  it("refuses an --out that is a file, or under /proc, in one line and at once (Node's recursive mkdir spun there)", async () => {
    const file = path.join(tmp("out-file"), "a-file");
    writeFileSync(file, "not a folder");
    await expect(createBackup({ config: originalConfig(), out: file, version: "test" })).rejects.toThrow(
      new UserError(`${file} is a file, not a folder: choose a new directory`),
    );
    if (!existsSync("/proc/self")) return;
    const refused = createBackup({ config: originalConfig(), out: "/proc/dvault-nope", version: "test" });
    await expect(refused).rejects.toBeInstanceOf(UserError);
    await expect(refused).rejects.toThrow(/cannot make the backup's directory \/proc\/dvault-nope \(ENOENT\): choose another one/);
  });

  it.runIf(canMount())("a backup onto a full or read-only disk is one line and leaves nothing there: the same --out takes the next run", async () => {
    const disk = tmp("small-disk");
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk]);
    try {
      const out = path.join(disk, "b");
      const full = new UserError(
        `no space left for the backup in ${out} (ENOSPC): the unfinished backup was removed; free space there, or choose another --out`,
      );
      await expect(createBackup({ config: originalConfig(), out, version: "test" })).rejects.toThrow(full);
      expect(readdirSync(disk)).toEqual([]);
      // A folder made for it beforehand stays, emptied.
      mkdirSync(out);
      await expect(createBackup({ config: originalConfig(), out, version: "test" })).rejects.toThrow(full);
      expect(readdirSync(out)).toEqual([]);
      // Read-only: the backup's folder is named, not the archive's.
      execFileSync("mount", ["-o", "remount,ro", disk]);
      await expect(createBackup({ config: originalConfig(), out: path.join(disk, "c"), version: "test" })).rejects.toThrow(
        new UserError(`cannot make the backup's directory ${path.join(disk, "c")} (EROFS): choose another one`),
      );
      // Room made: the same --out takes the backup.
      execFileSync("mount", ["-o", "remount,rw,size=64m", disk]);
      await expect(createBackup({ config: originalConfig(), out, version: "test" })).resolves.toMatchObject({ format: 2 });
    } finally {
      execFileSync("umount", [disk]);
    }
  });

  it.runIf(canMount())("a restore whose archive does not fit the target's disk says so first: no database made, the folder untouched", async () => {
    const disk = tmp("tiny-disk");
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", disk]);
    const db = `dvault_t_restore_tiny_${process.pid}`;
    try {
      const target = testConfig({
        DATABASE_URL: withDatabase(TEST_PG_URL, db),
        DVAULT_ARCHIVE_DIR: path.join(disk, "archive"),
        DVAULT_CONFIG_DIR: tmp("tiny-c"),
      });
      await expect(restoreBackup({ config: target, from: backupDir })).rejects.toThrow(
        new RegExp(
          `^the archive needs \\d+(\\.\\d)? MiB in ${disk}/archive, and its disk has 64 KiB free: free space there, or set DVAULT_ARCHIVE_DIR to a disk with room; nothing was restored$`,
        ),
      );
      await expectNoDatabase(db);
      expect(readdirSync(disk)).toEqual([]);

      // Room for the files' bytes but not for the pages they fill: the free space looks enough, the copy runs out.
      const sizes = manifest.archive.bytes;
      const files = readdirSync(path.join(backupDir, "archive"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
      const pages = files.reduce((sum, e) => sum + Math.ceil(statSync(path.join(e.parentPath, e.name)).size / 4096) * 4096, 0);
      expect(pages - sizes, "the pages the files fill past their bytes").toBeGreaterThan(3 * 4096);
      execFileSync("mount", ["-o", `remount,size=${Math.ceil(sizes / 4096) * 4096 + 4096}`, disk]);
      await expect(restoreBackup({ config: target, from: backupDir })).rejects.toThrow(
        /^the archive needs \d+(\.\d)? MiB in .*, and the disk ran out of space while the archive was copied \(ENOSPC\): free space there, or set DVAULT_ARCHIVE_DIR to a disk with room; nothing was restored$/,
      );
      await expectNoDatabase(db);
      expect(readdirSync(disk)).toEqual([]);
    } finally {
      execFileSync("umount", [disk]);
      await dropDatabaseNamed(db);
    }
  });

  /** A target of its own (the order of tests is shuffled: the first test's database may exist already). */
  const untouchedTarget = (name: string) => {
    const untouched = `dvault_t_restore_${name}_${process.pid}`;
    const target = testConfig({
      DATABASE_URL: withDatabase(TEST_PG_URL, untouched),
      DVAULT_ARCHIVE_DIR: path.join(tmp(`${name}-d`), "archive"),
      DVAULT_CONFIG_DIR: tmp(`${name}-dc`),
    });
    return { untouched, target };
  };

  it("restores a --no-archive backup beside the archive copied there first (rsync -a), leaving it as it is", async () => {
    const bare = path.join(tmp("no-archive"), "b");
    const m = await createBackup({ config: originalConfig(), out: bare, includeArchive: false, version: "test" });
    expect(m.archive.included).toBe(false);
    const { untouched, target } = untouchedTarget("no_archive");
    // The archive copied as the README says, before the restore: refused, the person would restore into an empty
    // folder and every file the rows name would be downloaded again.
    execFileSync("cp", ["-a", h.services.config.archiveDir, target.archiveDir]);
    const before = readdirSync(target.archiveDir, { recursive: true }).sort();
    // A key made on the new machine first (a login tried there before the restore): kept, and said not to be the
    // backup's, whose tokens it cannot read (the restore said only 'kept the configured secret key').
    loadSecretKey(target);
    try {
      const restored = await restoreBackup({ config: target, from: bare });
      expect(restored).toMatchObject({ databaseRestored: true, archiveFiles: 0, keyRestored: false, key: "other" });
      expect(readdirSync(target.archiveDir, { recursive: true }).sort()).toEqual(before);
      const services = await createServices({ config: target, log });
      try {
        const report = await verifyArchive({ deps: downloadDepsFor(services), fix: false, log });
        expect(report.files).toBeGreaterThan(5);
        expect(report).toMatchObject({ missing: [], corrupt: [], ok: report.files });
      } finally {
        await services.close();
      }
    } finally {
      await dropDatabaseNamed(untouched);
    }
  });

  it("detects a damaged table file before touching anything", async () => {
    const damaged = path.join(tmp("damaged"), "b");
    const { untouched, target } = untouchedTarget("damaged");
    const m = await createBackup({ config: originalConfig(), out: damaged, includeArchive: false, version: "test" });
    expect(m.format).toBe(2);
    const file = path.join(damaged, "database", "accounts.copy.gz");
    writeFileSync(file, "not a table");
    await expect(restoreBackup({ config: target, from: damaged })).rejects.toThrow(
      new UserError(`${file} does not match its checksum: the backup is damaged; restore from another backup (nothing was restored)`),
    );
    await expectNoDatabase(untouched);
  });

  // Format 1, where pg_dump fits the server (CI's PostgreSQL and its client tools are one major): its own message.
  itNeedingPgDump("detects a damaged pg_dump archive before touching anything", async () => {
    const { untouched, target } = untouchedTarget("damaged_dump");
    const dumped = path.join(tmp("damaged-dump"), "b");
    expect((await createBackup({ config: originalConfig(), out: dumped, includeArchive: false, version: "test", database: "pg_dump" })).format).toBe(1);
    writeFileSync(path.join(dumped, "database.dump"), "not a dump");
    await expect(restoreBackup({ config: target, from: dumped })).rejects.toThrow(
      /database\.dump does not match its checksum: the backup is damaged; nothing was restored$/,
    );
    await expectNoDatabase(untouched);
  });

  itNeedingPgDump("still restores a backup of format 1 (pg_dump) where pg_restore is installed", async () => {
    const dumped = path.join(tmp("format1"), "b");
    await createBackup({ config: originalConfig(), out: dumped, includeArchive: false, version: "test", database: "pg_dump" });
    const db = `dvault_t_restore_f1_${process.pid}`;
    const config = testConfig({
      DATABASE_URL: withDatabase(TEST_PG_URL, db),
      DVAULT_ARCHIVE_DIR: path.join(tmp("f1"), "archive"),
      DVAULT_CONFIG_DIR: tmp("f1c"),
    });
    try {
      const restored = await restoreBackup({ config, from: dumped });
      expect(restored).toMatchObject({ databaseRestored: true, manifest: { format: 1 } });
      const client = await connectPg(config.databaseUrl);
      try {
        expect((await client.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations")).rows[0]!.n).toBeGreaterThan(5);
      } finally {
        await client.end();
      }
    } finally {
      await dropDatabaseNamed(db);
    }
  });
});
