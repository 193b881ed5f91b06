// Migration 20261128020000_member_positions_from_end carries every folder member's position forward to the
// one meaning docs/schema.md gives it (counted from the folder's end, negative, ORDER BY position = the
// service's order), from the two it had: from the end where the folder's size was known, from the top otherwise.
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

const MIGRATION = "20261128020000_member_positions_from_end";
const name = `dvault_t_pos_${randomBytes(4).toString("hex")}`;
let db: Awaited<ReturnType<typeof connectPg>>;

const sql = (migration: string) => readFileSync(path.resolve("prisma/migrations", migration, "migration.sql"), "utf8");

beforeAll(async () => {
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`CREATE DATABASE ${quoteIdent(name)}`);
  await admin.end();
  db = await connectPg(withDatabase(TEST_PG_URL, name));
  const before = readdirSync(path.resolve("prisma/migrations"))
    .filter((m) => /^\d{14}_/.test(m) && m < MIGRATION)
    .sort();
  for (const m of before) await db.query(sql(m));
});

afterAll(async () => {
  await db?.end();
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  await admin.end();
});

describe(MIGRATION, () => {
  it("reads every folder in the service's order afterwards, whichever way it was numbered", async () => {
    const ids = ["D1", "D2", "D3"];
    for (const id of ids) await db.query("INSERT INTO deviations (deviationid, raw) VALUES ($1, '{}')", [id]);
    // A gallery folder walked with its size known (3): counted from the end, 0 = the last.
    await db.query("INSERT INTO gallery_folders (folderid, owner_userid, size) VALUES ('G-SIZED', 'U', 3)");
    // A collection folder whose size the service did not give: counted from the top.
    await db.query("INSERT INTO collection_folders (folderid, owner_userid, size) VALUES ('C-UNSIZED', 'U', NULL)");
    const member = (kind: string, folderid: string, deviationid: string, position: number) =>
      db.query("INSERT INTO folder_members (kind, folderid, deviationid, position) VALUES ($1::folder_kind, $2, $3, $4)", [
        kind,
        folderid,
        deviationid,
        position,
      ]);
    // Service order D1, D2, D3 in both.
    await member("gallery", "G-SIZED", "D1", 2);
    await member("gallery", "G-SIZED", "D2", 1);
    await member("gallery", "G-SIZED", "D3", 0);
    await member("collection", "C-UNSIZED", "D1", 0);
    await member("collection", "C-UNSIZED", "D2", 1);
    await member("collection", "C-UNSIZED", "D3", 2);

    await db.query(sql(MIGRATION));

    const { rows } = await db.query<{ folderid: string; deviationid: string; position: number }>(
      "SELECT folderid, deviationid, position FROM folder_members ORDER BY folderid, position",
    );
    expect(rows).toEqual([
      { folderid: "C-UNSIZED", deviationid: "D1", position: -3 },
      { folderid: "C-UNSIZED", deviationid: "D2", position: -2 },
      { folderid: "C-UNSIZED", deviationid: "D3", position: -1 },
      { folderid: "G-SIZED", deviationid: "D1", position: -3 },
      { folderid: "G-SIZED", deviationid: "D2", position: -2 },
      { folderid: "G-SIZED", deviationid: "D3", position: -1 },
    ]);
  });
});
