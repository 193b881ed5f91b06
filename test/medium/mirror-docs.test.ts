// Runs every query of docs/schema.md against a small mirror (the example queries for their answers), so the documentation cannot rot.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { FolderRepository } from "../../src/db/folder.repository.ts";
import { distinctUsers } from "../../src/db/mirror-rows.ts";
import { NoteRepository } from "../../src/db/note.repository.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { WatchRepository } from "../../src/db/watch.repository.ts";
import {
  at,
  createMirrorDb,
  insertAccount,
  makeDeviation,
  makeMetadata,
  makeNote,
  makeTombstone,
  makeUser,
  makeWatchEntry,
  uuid,
  type MirrorDb,
} from "../helpers/mirror-fixtures.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

type ExampleQuery = { title: string; sql: string };

/** The `### n. title` + ```sql blocks under "## Example queries". */
function exampleQueries(markdown: string): ExampleQuery[] {
  const section = markdown.split(/^## Example queries\s*$/m)[1]?.split(/^## /m)[0] ?? "";
  return [...section.matchAll(/^### (.+?)\n[\s\S]*?```sql\n([\s\S]*?)```/gm)].map((m) => ({ title: (m[1] ?? "").trim(), sql: (m[2] ?? "").trim() }));
}

const schemaDoc = readFileSync(path.resolve("docs/schema.md"), "utf8");
const queries = exampleQueries(schemaDoc);

/** Every other ```sql block (full-text search, imported files, download history...), the read-only recipe aside. */
function otherQueries(markdown: string): ExampleQuery[] {
  const [before = "", rest = ""] = markdown.split(/^## Example queries\s*$/m);
  // What follows the examples' section: from its next "## " heading on.
  const outside =
    before +
    rest
      .split(/^(?=## )/m)
      .slice(1)
      .join("");
  return [...outside.matchAll(/```sql\n([\s\S]*?)```/g)]
    .map((m) => (m[1] ?? "").trim())
    .filter((sql) => !sql.includes("CREATE ROLE"))
    .map((sql) => ({ title: sql.split("\n")[0] ?? "", sql }));
}

/** The first ```sql block under "## A read-only user…": the recipe a person runs. */
function readOnlyRecipe(markdown: string): string {
  const section = markdown.split(/^## A read-only user.*$/m)[1]?.split(/^## /m)[0] ?? "";
  return /```sql\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
}
let m: MirrorDb;

beforeAll(async () => {
  m = await createMirrorDb();
  const me = await insertAccount(m.pool, "me", uuid(9, "u"));
  const users = new UserRepository(m.pool);
  const deviations = new DeviationRepository(m.pool);
  const folders = new FolderRepository(m.pool);
  const t2025 = at("2025-03-01T00:00:00Z");

  // Works by artist1 and artist2, faved into my collections in 2025; my own works; a journal.
  const faves = [makeDeviation({ n: 1, author: 1 }), makeDeviation({ n: 2, author: 1 }), makeDeviation({ n: 3, author: 2, title: "Sunset" })];
  const mine = [makeDeviation({ n: 10, author: 9, favourites: 50 }), makeDeviation({ n: 11, author: 9, favourites: 7 })];
  const journal = makeDeviation({ n: 20, author: 2, kind: "journal", title: "Commissions open" });
  const all = [...faves, ...mine, journal];
  await users.upsertUsers(distinctUsers([...all.map((d) => d.author), makeUser(9)]), t2025);
  await deviations.upsertDeviations(all, t2025);
  await deviations.upsertMetadata([makeMetadata({ n: 3, description: "<p>Golden hour</p>" })], t2025);
  await deviations.upsertMetadata([makeMetadata({ n: 3, description: "<p>Golden hour over the bay</p>" })], at("2025-03-05T00:00:00Z"));
  await deviations.upsertTexts([{ deviationid: journal.deviationid, content: { html: "<p>Commission slots are open until May.</p>" } }], t2025);
  await deviations.upsertDeviations([makeTombstone(2)], at("2025-06-01T00:00:00Z"));
  await folders.upsertCollectionFolders(uuid(9, "u"), [{ folderid: uuid(1, "c"), name: "Featured" }], t2025);
  await folders.upsertFolderMembership(
    "collection",
    uuid(1, "c"),
    // In the service's order Work 3, Work 1, Work 2: positions count from the folder's end (-3 is the first).
    [faves[2], faves[0], faves[1]].map((d, i) => ({ deviationid: d?.deviationid as string, position: i - faves.length })),
    t2025,
  );

  // Notes from artist2, one unread; a watcher who arrived this month.
  const notes = new NoteRepository(m.pool);
  await notes.upsertNoteFolders(me, [{ folder: "1", title: "Inbox", count: "2" }], t2025);
  await notes.upsertNotes(me, "1", [makeNote("n1"), makeNote("n2", { unread: false })], t2025);
  const watcher = makeWatchEntry(30);
  await users.upsertUsers([watcher.user], new Date());
  await new WatchRepository(m.pool).upsertWatchRelations(me, "watcher", [watcher], new Date());

  // A source the service no longer offers and a folder past the offset ceiling.
  const sync = new SyncStateRepository(m.pool);
  await sync.saveSourceState({ accountId: me, source: "feed" }, { lastResult: "degraded", unavailableReason: "endpoint removed upstream (404)" });
  await sync.recordGap({ accountId: me, source: "gallery", key: uuid(1, "g") }, uuid(1, "g"), { expected: 12000, mirrored: 10000, reason: "offset ceiling" });
});
afterAll(async () => {
  await m?.drop();
});

describe("docs/schema.md example queries", () => {
  it("has eleven of them", () => {
    expect(queries.map((q) => q.title)).toHaveLength(11);
  });

  it.each(queries.map((q) => [q.title, q.sql] as const))("%s runs and answers", async (_title, sql) => {
    const { rows } = await m.pool.query(sql);
    expect(rows.length).toBeGreaterThan(0);
  });

  it("answers what the questions ask", async () => {
    const run = async (n: number) => (await m.pool.query(queries[n - 1]?.sql ?? "")).rows;
    expect(await run(1)).toEqual([
      { artist: "artist1", favourites: "2" },
      { artist: "artist2", favourites: "1" },
    ]);
    expect((await run(2)).map((r) => r.title)).toEqual(["Work 1", "Work 2", "Sunset"]);
    expect((await run(3)).map((r) => r.subject)).toEqual(["Hello n1", "Hello n2"]);
    expect((await run(4)).map((r) => [r.title, r.removed_reason, r.error_code])).toEqual([["Work 2", "deleted", null]]);
    expect(await run(5)).toEqual([expect.objectContaining({ before: "<p>Golden hour</p>", after: "<p>Golden hour over the bay</p>" })]);
    expect((await run(6)).map((r) => [r.title, r.favourites])).toEqual([
      ["Work 10", 50],
      ["Work 11", 7],
    ]);
    expect((await run(7)).map((r) => r.username)).toEqual(["artist30"]);
    expect((await run(8)).map((r) => r.title)).toEqual(["Commissions open"]);
    expect((await run(9)).map((r) => r.subject)).toEqual(["Hello n1"]);
    expect((await run(10)).map((r) => [r.source, r.unavailable_reason, r.expected])).toEqual([
      ["feed", "endpoint removed upstream (404)", null],
      ["gallery", null, 12000],
    ]);
    // The favourites in the order the service lists them (the deleted one's membership stays: its stub is listed).
    expect((await run(11)).map((r) => [r.position, r.title])).toEqual([
      [-3, "Sunset"],
      [-2, "Work 1"],
      [-1, "Work 2"],
    ]);
  });
});

describe("docs/schema.md's other queries", () => {
  const others = otherQueries(schemaDoc);
  it("are found: full-text search, imported files and download history", () => {
    expect(others.length).toBeGreaterThanOrEqual(6);
  });

  it.each(others.map((q) => [q.title, q.sql] as const))("%s runs", async (_title, sql) => {
    await expect(m.pool.query(sql)).resolves.toBeDefined();
  });
});

describe("docs/schema.md's read-only user", () => {
  // A role of this run's own (roles are the server's, not the database's), made by the recipe as written.
  const role = `dvault_reader_${randomBytes(4).toString("hex")}`;
  afterAll(async () => {
    const admin = await connectPg(TEST_PG_URL);
    try {
      await admin.query(`DROP OWNED BY ${quoteIdent(role)}`).catch(() => undefined);
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`).catch(() => undefined);
    } finally {
      await admin.end();
    }
  });

  it("reads every example and every table added later, and writes nothing", async () => {
    const recipe = readOnlyRecipe(schemaDoc);
    expect(recipe).toContain("CREATE ROLE archive_reader");
    await m.pool.query(recipe.replaceAll("archive_reader", role).replace("ON DATABASE dvault", `ON DATABASE ${quoteIdent(m.db.name)}`));
    // A table a later migration adds, made by the owner after the grant.
    await m.pool.query("CREATE TABLE later_table (id int); INSERT INTO later_table VALUES (1)");
    const url = new URL(m.db.url);
    url.username = role;
    const reader = await connectPg(url.toString());
    try {
      for (const q of queries) expect((await reader.query(q.sql)).rows.length, q.title).toBeGreaterThan(0);
      expect((await reader.query("SELECT id FROM later_table")).rows).toEqual([{ id: 1 }]);
      for (const write of ["INSERT INTO later_table VALUES (2)", "UPDATE deviations SET title = 'x'", "DELETE FROM notes", "CREATE TABLE mine (id int)"]) {
        await expect(reader.query(write), write).rejects.toThrow(/permission denied/);
      }
    } finally {
      await reader.end();
      await m.pool.query(`DROP TABLE later_table; DROP OWNED BY ${quoteIdent(role)}`);
    }
  });
});
