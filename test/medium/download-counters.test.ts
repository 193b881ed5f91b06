// The counters `dvault status` and the overview read instead of counting downloads (migration
// 20261129060000_download_counts): after every kind of write the app makes (rows wanted, claimed, stored in a batch,
// sharing a content-addressed file, upgraded to another file, verified, lost, not downloadable, deleted, an account
// deleted, the table truncated) they equal a count of the table; two writers storing the same new file at once count
// it once; and the migration's first count, run while a writer is under way, counts each row once.
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterEach, beforeEach, expect, it } from "vitest";
import { connectPg } from "../../src/db/connect.ts";
import { copyIn } from "../../src/db/copy-stream.ts";
import { DownloadRepository } from "../../src/db/download.repository.ts";
import type { StoredFile } from "../../src/db/download-files.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { countedDownloadFigures, keptDownloadFigures } from "../helpers/download-counts.ts";
import { firstCountBehindWriter, untilLockWaits } from "../helpers/first-count.ts";

let t: TestDatabase;
beforeEach(async () => {
  t = await createTestDatabase();
});
afterEach(async () => {
  await t?.drop();
});

const AT = new Date("2026-11-29T06:00:00Z");

/** `n` works d1..dn and an account 'collector'; its id. */
async function works(n: number): Promise<number> {
  await t.pool.query(`INSERT INTO deviations (deviationid, title, raw) SELECT 'd' || i, 'Work ' || i, '{}' FROM generate_series(1, $1::int) i`, [n]);
  const a = await t.pool.query<{ id: number }>("INSERT INTO accounts (name, updated_at) VALUES ('collector', now()) RETURNING id");
  return a.rows[0]!.id;
}

/** The id of the original's row of work `deviationid`. */
async function rowOf(deviationid: string): Promise<string> {
  const r = await t.pool.query<{ id: string }>("SELECT id::text AS id FROM downloads WHERE deviationid = $1 AND kind = 'original'", [deviationid]);
  return r.rows[0]!.id;
}

/** A stored file for the row of `deviationid`: content `content` at its content address, `size` bytes. */
async function stored(deviationid: string, content: string, size: number, status: StoredFile["status"] = "done"): Promise<StoredFile> {
  const sha256 = content.padEnd(64, "0");
  return {
    id: await rowOf(deviationid),
    status,
    rendition: "original",
    path: `originals/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}.png`,
    size,
    sha256,
    mime: "image/png",
    bytes: size,
    at: AT,
    ...(status === "degraded" ? { degradedReason: "Free download limit reached.", nextAttemptAt: new Date("2026-12-07T00:00:00Z") } : {}),
  };
}

async function expectExact(): Promise<void> {
  const counted = await countedDownloadFigures(t.pool);
  expect(await keptDownloadFigures(t.pool)).toEqual(counted);
}

it("equal a count of the table after each write the downloads make", async () => {
  const accountId = await works(12);
  const repo = new DownloadRepository(t.pool);
  await expectExact();

  await repo.markDownloadsWanted(
    Array.from({ length: 12 }, (_, i) => ({ deviationid: `d${i + 1}`, kind: "original" as const })),
    AT,
  );
  await expectExact();
  const claimed = await repo.claimDueDownloads({ accountId, now: AT, classes: ["gallery", "other"], limit: 8 });
  expect(claimed).toHaveLength(8);
  await expectExact();

  // One batch (one statement, as src/downloads/group-commit.ts writes it): d1, d2 and d3 have the same content, one file.
  const batch = [
    await stored("d1", "aa", 1000),
    await stored("d2", "aa", 1000),
    await stored("d3", "aa", 1000),
    await stored("d4", "bb", 2000),
    await stored("d5", "cc", 300, "degraded"),
  ];
  expect((await repo.markDownloadsStored(batch)).filter((h) => h instanceof Error)).toEqual([]);
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored).toEqual({ files: 3, bytes: 3300 });

  // The degraded rendition replaced by the original: the row moves to another file, the old one is no one's.
  await repo.markDownloadStored(await stored("d5", "dd", 5000));
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored).toEqual({ files: 3, bytes: 8000 });

  // Nothing a count sees moves: verified.
  await repo.markDownloadsVerified([await rowOf("d1"), await rowOf("d4")], AT);
  await expectExact();

  await repo.markDownloadNotDownloadable({ id: await rowOf("d6"), reason: "only subscribers", at: AT });
  await repo.markDownloadDeferred({ id: await rowOf("d7"), reason: "quota", nextAttemptAt: new Date("2026-12-07T00:00:00Z"), at: AT });
  await expectExact();

  // The shared file lost: each of its rows wanted again, the file gone from the totals.
  const lost = await repo.markFileLost({ path: batch[0]!.path, change: "missing", note: "verify: missing", at: AT });
  expect(lost).toBe(3);
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored).toEqual({ files: 2, bytes: 7000 });

  // Stored again, one row at a time; then one of the two rows sharing it deleted, then the other.
  await repo.markDownloadStored(await stored("d1", "aa", 1000));
  await repo.markDownloadStored(await stored("d2", "aa", 1000));
  await expectExact();
  await t.pool.query("DELETE FROM download_history");
  await t.pool.query("DELETE FROM downloads WHERE deviationid = 'd1'");
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored.files).toBe(3);
  await t.pool.query("DELETE FROM downloads WHERE deviationid = 'd2'");
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored.files).toBe(2);

  // The account deleted: its rows are handed to no one (ON DELETE SET NULL), an update of every one of them.
  await t.pool.query("DELETE FROM download_quota_usage");
  await t.pool.query("DELETE FROM accounts WHERE id = $1", [accountId]);
  expect((await t.pool.query("SELECT count(*)::int AS n FROM downloads WHERE account_id IS NOT NULL")).rows[0].n).toBe(0);
  await expectExact();

  // COPY, as an import of rows writes them.
  await t.pool.query("INSERT INTO deviations (deviationid, title, raw) VALUES ('d13', 't', '{}')");
  const client = await connectPg(t.url);
  try {
    const copy = copyIn(client, "COPY downloads (deviationid, kind, status, path, size, sha256) FROM STDIN");
    await pipeline(Readable.from([`d13\toriginal\tdone\t${batch[3]!.path}\t2000\t${batch[3]!.sha256}\n`]), copy);
    expect(copy.rows).toBe(1);
  } finally {
    await client.end();
  }
  await expectExact();

  await t.pool.query("TRUNCATE downloads CASCADE");
  await expectExact();
  expect(await keptDownloadFigures(t.pool)).toEqual({ byStatus: [], stored: { files: 0, bytes: 0 } });
});

it("two writers storing the same new file at once count it once", async () => {
  const accountId = await works(2);
  const repo = new DownloadRepository(t.pool);
  await repo.markDownloadsWanted(
    [
      { deviationid: "d1", kind: "original" },
      { deviationid: "d2", kind: "original" },
    ],
    AT,
  );
  await repo.claimDueDownloads({ accountId, now: AT, classes: ["other"], limit: 2 });
  const a = await connectPg(t.url);
  const b = await connectPg(t.url);
  try {
    await a.query("BEGIN");
    await b.query("BEGIN");
    await new DownloadRepository(a).markDownloadStored(await stored("d1", "ee", 700));
    // b's trigger meets a's new row of stored_files and waits for a to end.
    const second = new DownloadRepository(b).markDownloadStored(await stored("d2", "ee", 700));
    await untilLockWaits(t.pool, "transactionid");
    await a.query("COMMIT");
    await second;
    await b.query("COMMIT");
  } finally {
    await a.end();
    await b.end();
  }
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored).toEqual({ files: 1, bytes: 700 });
});

it("the first count counts each row once: those its triggers counted before it, and one written while it waits", async () => {
  await works(4);
  const repo = new DownloadRepository(t.pool);
  await repo.markDownloadsWanted(
    [1, 2, 3, 4].map((i) => ({ deviationid: `d${i}`, kind: "original" as const })),
    AT,
  );
  // Written after the triggers and before the count: counted already. And a count the triggers could not have left,
  // which the first count must replace rather than add to.
  await repo.markDownloadsStored([await stored("d1", "ff", 100), await stored("d2", "ff", 100)]);
  await t.pool.query("INSERT INTO stored_files (path, refs, size) VALUES ('originals/no/such.png', 5, 1)");
  await t.pool.query("INSERT INTO stored_file_totals (shard, files, bytes) VALUES (15, 9, 9) ON CONFLICT (shard) DO UPDATE SET files = 9");
  await t.pool.query("UPDATE download_status_counts SET items = items + 4");
  // Under way when the count starts: its trigger has run, it has not committed.
  await firstCountBehindWriter(t, "20261129060000_download_counts", async (writer) =>
    new DownloadRepository(writer).markDownloadsStored([await stored("d3", "ff", 100), await stored("d4", "ab", 50, "degraded")]),
  );
  await expectExact();
  expect((await keptDownloadFigures(t.pool)).stored).toEqual({ files: 2, bytes: 150 });
  expect((await t.pool.query("SELECT path FROM stored_files WHERE path LIKE '%no/such%'")).rows).toEqual([]);
});
