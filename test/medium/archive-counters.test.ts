// The archive grid's maintained counters (issue 32, migration 20261129030000_archive_counters): works per month of
// publication and per author, kept by statement triggers on deviations, must equal a count of the mirror after
// every kind of write the sync and the tools make: inserts, upserts that move a work's date or author or move
// nothing, deletes, COPY and TRUNCATE. The grid reads its total, scrubber and artist choices from them.
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ArchiveBrowserRepository } from "../../src/db/archive-browser.repository.ts";
import { copyIn } from "../../src/db/copy-stream.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let t: TestDatabase;

// A database of each test's own: each checks exact counts.
beforeEach(async () => {
  t = await createTestDatabase();
});
afterEach(async () => {
  await t?.drop();
});

/** What a count of the mirror says, in the shape the repository answers. */
async function truth(): Promise<{ months: Array<{ month: string | null; items: number }>; artists: Array<{ username: string; items: number }> }> {
  const months = await t.pool.query<{ month: string | null; items: number }>(
    `SELECT to_char(date_trunc('month', published_at AT TIME ZONE 'UTC'), 'YYYY-MM') AS month, count(*)::int AS items
     FROM deviations GROUP BY 1 ORDER BY 1 DESC NULLS LAST`,
  );
  const artists = await t.pool.query<{ username: string; items: number }>(
    `SELECT u.username, count(*)::int AS items FROM deviations d JOIN users u ON u.userid = d.author_userid
     GROUP BY u.username ORDER BY items DESC, lower(u.username) LIMIT 200`,
  );
  return { months: months.rows, artists: artists.rows };
}

async function counted() {
  const repo = new ArchiveBrowserRepository(t.pool);
  return { months: await repo.monthCounts({}), artists: (await repo.filterChoices()).artists };
}

const upsert = (rows: Array<[id: string, author: string | null, published: string | null]>) =>
  t.pool.query(
    `INSERT INTO deviations (deviationid, author_userid, published_at, title, raw)
     SELECT id, author, published::timestamptz, 'Counted ' || id, '{}'::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS x(id, author, published)
     ON CONFLICT (deviationid) DO UPDATE SET author_userid = EXCLUDED.author_userid, published_at = EXCLUDED.published_at, last_seen_at = now()`,
    [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2])],
  );

describe("the archive's maintained counters", () => {
  it("stay equal to a count of the mirror through inserts, upserts, deletes, COPY and TRUNCATE", async () => {
    await t.pool.query("INSERT INTO users (userid, username, raw) VALUES ('cu-1', 'Alpha', '{}'), ('cu-2', 'beta', '{}'), ('cu-3', 'Gamma', '{}')");
    // A month boundary in UTC that is still the month before in other zones, an undated work and one without an author.
    await upsert([
      ["c1", "cu-1", "2024-03-01T00:30:00Z"],
      ["c2", "cu-1", "2024-02-29T23:30:00Z"],
      ["c3", "cu-2", null],
      ["c4", null, "2024-03-15T12:00:00Z"],
      ["c5", "cu-2", "2023-12-31T23:59:59Z"],
    ]);
    expect(await counted()).toEqual(await truth());
    expect((await counted()).months).toEqual([
      { month: "2024-03", items: 2 },
      { month: "2024-02", items: 1 },
      { month: "2023-12", items: 1 },
      { month: null, items: 1 },
    ]);

    // An upsert page: one new work, one moved to another month and artist, one unchanged, in one statement.
    await upsert([
      ["c6", "cu-3", "2024-02-01T00:00:00Z"],
      ["c1", "cu-2", "2022-01-10T00:00:00Z"],
      ["c5", "cu-2", "2023-12-31T23:59:59Z"],
    ]);
    expect(await counted()).toEqual(await truth());

    // A plain UPDATE of many rows (the undated one dated) and a delete that empties a month.
    await t.pool.query("UPDATE deviations SET published_at = '2021-06-01T00:00:00Z' WHERE published_at IS NULL");
    await t.pool.query("DELETE FROM deviations WHERE deviationid IN ('c5', 'c4')");
    const afterDelete = await counted();
    expect(afterDelete).toEqual(await truth());
    expect(afterDelete.months.map((m) => m.month)).not.toContain("2023-12");

    // COPY fires the statement triggers as an INSERT does (a restore's tables are loaded so, src/db/mirror-load.ts).
    const client = await t.pool.connect();
    try {
      const copy = copyIn(client, "COPY deviations (deviationid, author_userid, published_at, raw) FROM STDIN");
      const lines = Array.from({ length: 30 }, (_, i) => `copy-${i}\tcu-3\t2020-05-05T00:00:00Z\t{}\n`).join("");
      await pipeline(Readable.from([Buffer.from(lines)]), copy);
    } finally {
      client.release();
    }
    const later = await counted();
    expect(later).toEqual(await truth());
    expect(later.artists[0]).toEqual({ username: "Gamma", items: 31 });

    await t.pool.query("TRUNCATE deviations CASCADE");
    expect(await counted()).toEqual({ months: [], artists: [] });
  });

  it("keep each folder's live members through adds, removals, returns and deletes", async () => {
    await t.pool.query("INSERT INTO users (userid, username, raw) VALUES ('fu-1', 'Folderer', '{}')");
    await t.pool.query("INSERT INTO deviations (deviationid, author_userid, raw) SELECT 'fw' || i, 'fu-1', '{}' FROM generate_series(1, 12) i");
    await t.pool.query(
      "INSERT INTO gallery_folders (folderid, owner_userid, name, raw) VALUES ('g-a', 'fu-1', 'A', '{}'), ('g-b', 'fu-1', 'B', '{}'), ('g-empty', 'fu-1', 'Empty', '{}')",
    );
    await t.pool.query("INSERT INTO collection_folders (folderid, owner_userid, name, raw) VALUES ('g-a', 'fu-1', 'Faves named like a gallery', '{}')");
    const sizes = async () => {
      const choices = await new ArchiveBrowserRepository(t.pool).filterChoices();
      return [...choices.galleries, ...choices.collections].map((f) => `${f.name}: ${f.size}`).sort();
    };
    const counted = async () => {
      const { rows } = await t.pool.query<{ line: string }>(
        `SELECT f.name || ': ' || (SELECT count(*) FROM folder_members m WHERE m.kind = f.kind AND m.folderid = f.folderid AND m.removed_at IS NULL) AS line
         FROM (SELECT 'gallery'::folder_kind AS kind, folderid, name FROM gallery_folders UNION ALL
               SELECT 'collection'::folder_kind, folderid, name FROM collection_folders) f`,
      );
      return rows.map((r) => r.line).sort();
    };
    await t.pool.query(
      `INSERT INTO folder_members (kind, folderid, deviationid, position)
       SELECT 'gallery'::folder_kind, CASE WHEN i <= 8 THEN 'g-a' ELSE 'g-b' END, 'fw' || i, i FROM generate_series(1, 12) i
       UNION ALL SELECT 'collection'::folder_kind, 'g-a', 'fw' || i, i FROM generate_series(1, 3) i`,
    );
    expect(await sizes()).toEqual(["A: 8", "B: 4", "Empty: 0", "Faves named like a gallery: 3"]);
    // The sync marks members gone (removed_at), brings one back, moves one, and a member row is deleted outright.
    await t.pool.query(
      "UPDATE folder_members SET removed_at = now(), removed_reason = 'deleted' WHERE kind = 'gallery' AND deviationid IN ('fw1', 'fw2', 'fw9')",
    );
    await t.pool.query("UPDATE folder_members SET removed_at = NULL, removed_reason = NULL WHERE kind = 'gallery' AND deviationid = 'fw2'");
    await t.pool.query("UPDATE folder_members SET folderid = 'g-b' WHERE kind = 'gallery' AND deviationid = 'fw3'");
    await t.pool.query("DELETE FROM folder_members WHERE kind = 'collection' AND deviationid = 'fw1'");
    expect(await sizes()).toEqual(await counted());
    expect(await sizes()).toEqual(["A: 6", "B: 4", "Empty: 0", "Faves named like a gallery: 2"]);
  });
});
