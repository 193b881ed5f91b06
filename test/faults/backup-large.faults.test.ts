// Backup format 2 (src/backup/table-files.ts) of a table of 100 000 rows, some 100 MB of text: streamed both ways
// with bounded memory, the rows restored alike. Minutes of work, so in the fault suite (`npm run test:faults`,
// outside CI's `npm test`: vitest.config.ts); test/medium/backup-copy.test.ts checks the format itself.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackupManifestV2, createBackup } from "../../src/backup/backup.ts";
import { restoreBackup } from "../../src/backup/restore.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { dropDatabaseNamed as dropDatabase, tableDigests } from "../helpers/backup-fixture.ts";
import { testConfig } from "../helpers/config.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

const targetDb = `dvault_t_backup_large_${process.pid}`;
let base: string;

beforeAll(async () => {
  base = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-backup-large-"));
});

afterAll(async () => {
  if (base) await fs.rm(base, { recursive: true, force: true });
});

describe("backup format 2 of a large table", () => {
  it("streams 100 000 rows with bounded memory, both ways", async () => {
    const db = await createTestDatabase();
    const restoredDb = `${targetDb}_large`;
    const dir = path.join(base, "large");
    try {
      // About 1 kB of hex a row, different in every row: some 100 MB of text (about half that gzipped), which held in
      // memory would show in the process's RSS.
      await db.pool.query(
        "INSERT INTO users (userid, username, bio) SELECT 'u' || i, 'user' || i, (SELECT string_agg(md5(i::text || '.' || j::text), '') FROM generate_series(1, 32) AS j) FROM generate_series(1, 100000) AS i",
      );
      const source = testConfig({ DATABASE_URL: db.url, DVAULT_ARCHIVE_DIR: path.join(base, "archive"), DVAULT_CONFIG_DIR: path.join(base, "config") });
      const backup = await peakRss(() => createBackup({ config: source, out: dir, includeArchive: false, version: "test" }));
      const users = (backup.result as BackupManifestV2).database.tables.find((t) => t.name === "users")!;
      expect(users.rows).toBe(100_000);
      const config = testConfig({
        DATABASE_URL: withDatabase(TEST_PG_URL, restoredDb),
        DVAULT_ARCHIVE_DIR: path.join(base, "large-restored", "archive"),
        DVAULT_CONFIG_DIR: path.join(base, "large-restored", "config"),
      });
      const restore = await peakRss(() => restoreBackup({ config, from: dir }));
      expect((await tableDigests(config.databaseUrl)).users).toEqual((await tableDigests(db.url)).users);
      // Some 100 MB of text went through each way: held whole it would raise RSS by more than that;
      // a rise of under 80 MB (about 40 MB measured) means it was streamed.
      expect(backup.deltaMb).toBeLessThan(80);
      expect(restore.deltaMb).toBeLessThan(80);
      console.log(
        `100 000 rows of users (${(users.bytes / 1e6).toFixed(1)} MB gzipped): backup RSS +${backup.deltaMb} MB peak in ${backup.ms} ms, restore RSS +${restore.deltaMb} MB peak in ${restore.ms} ms`,
      );
    } finally {
      await db.drop();
      await dropDatabase(restoredDb);
    }
  }, 180_000);
});

/** Runs `fn`, sampling the process's RSS: the largest rise over the start, in MB. */
async function peakRss<T>(fn: () => Promise<T>): Promise<{ result: T; deltaMb: number; ms: number }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const t0 = performance.now();
  try {
    const result = await fn();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, deltaMb: Math.round((peak - start) / 1e6), ms: Math.round(performance.now() - t0) };
  } finally {
    clearInterval(timer);
  }
}
