// The counters' first count (the last statement of migration 20261129030000_archive_counters, a DO block) while a
// worker writes: its triggers are live before it runs (the engine commits each statement of a migration on its
// own), so a write in between was counted by a trigger and must not be counted twice, and a write under way when the
// count starts must be counted once. The block locks the table, waits for the writer, and replaces what the
// triggers added with a count taken after that writer committed.
import { afterEach, beforeEach, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";
import { firstCount, firstCountBehindWriter } from "../helpers/first-count.ts";

let t: TestDatabase;
beforeEach(async () => {
  t = await createTestDatabase();
});
afterEach(async () => {
  await t?.drop();
});

const counters = async () =>
  (await t.pool.query<{ month: string; items: number }>("SELECT month, items FROM deviation_month_counts WHERE items <> 0 ORDER BY 1")).rows;
const artists = async () =>
  (await t.pool.query<{ author_userid: string; items: number }>("SELECT author_userid, items FROM artist_work_counts WHERE items <> 0 ORDER BY 1")).rows;

it("counts each work once: those its triggers counted before it, and one written while it waits", async () => {
  await t.pool.query("INSERT INTO users (userid, username, raw) VALUES ('bu-1', 'Alpha', '{}')");
  const insert = (id: string) =>
    `INSERT INTO deviations (deviationid, author_userid, published_at, title, raw) VALUES ('${id}', 'bu-1', '2024-01-15T00:00:00Z', 't', '{}')`;
  // Written after the triggers and before the count: the triggers counted it already.
  await t.pool.query(insert("b1"));
  await t.pool.query(insert("b2"));
  // Under way when the count starts: its trigger has run, it has not committed.
  await firstCountBehindWriter(t, "20261129030000_archive_counters", (writer) => writer.query(insert("b3")));
  expect(await counters()).toEqual([{ month: "2024-01", items: 3 }]);
  expect(await artists()).toEqual([{ author_userid: "bu-1", items: 3 }]);
});

it("folder counts: a count a trigger left for a folder whose members are gone again is replaced, not kept", async () => {
  const kind = (await t.pool.query<{ k: string }>("SELECT unnest(enum_range(NULL::folder_kind))::text AS k LIMIT 1")).rows[0]!.k;
  await t.pool.query("INSERT INTO folder_member_counts (kind, folderid, items) VALUES ($1, 'no-such-folder', 7)", [kind]);
  await t.pool.query(firstCount("20261129030500_folder_counts"));
  const wrong = await t.pool.query(
    `SELECT c.kind, c.folderid, c.items, (SELECT count(*)::int FROM folder_members m WHERE m.kind = c.kind AND m.folderid = c.folderid AND m.removed_at IS NULL) AS real
     FROM folder_member_counts c`,
  );
  expect(wrong.rows.filter((r) => r.items !== r.real)).toEqual([]);
  expect(wrong.rows.find((r) => r.folderid === "no-such-folder")).toBeUndefined();
});
