import { describe, expect, it } from "vitest";
import { rowTypesOfText } from "../../scripts/checks/row-types.ts";

// scripts/checks/row-types.ts: a row type re-declared by hand in src/db, however it reaches a statement, is named;
// rows typed from the generated schema, computed values and inputs are not.
const GENERATED = `
export type Deviation = { deviationid: string; title: string | null; published_time: Timestamp | null; is_deleted: boolean };
export type Note = { noteid: string; subject: string | null; body: string | null };
export type Download = { id: string; path: string | null; attempts: number; last_error: string | null; done_at: Timestamp | null };
export type DB = { deviations: Deviation; notes: Note; downloads: Download };
`;

const found = (text: string) => rowTypesOfText("src/db/x.repository.ts", text, GENERATED).map((f) => f.split(": ").slice(0, 2).join(": "));

describe("check:rows", () => {
  it("names each planted evasion: a driver generic, an alias, an interface, an inline literal, an assertion, an alias reached through another", () => {
    const text = [
      "type NoteRow = { noteid: string; subject: string | null; body: string | null };", // 1
      "interface DevRow { deviationid: string; title: string | null; extra: number }", // 2
      "type Wrapped = Array<NoteRow> | null;", // 3
      "export async function a(db: Q) {", // 4
      "  await db.query<{ deviationid: string; title: string }>('SELECT 1');", // 5
      "  await sql<DevRow>`SELECT 1`.execute(k);", // 6
      "  await sql<{ noteid: string; subject: string }[]>`SELECT 1`.execute(k);", // 7
      "  const rows = (await sql`SELECT 1`.execute(k)).rows as { deviationid: string; is_deleted: boolean }[];", // 8
      "  await sql<Wrapped>`SELECT 1`.execute(k);", // 9
      "  return rows;",
      "}",
    ].join("\n");
    expect(found(text)).toEqual([
      "src/db/x.repository.ts:5: a driver call given its rows' type by hand (query<…>)",
      "src/db/x.repository.ts:5: a hand-written row type (deviationid, title of deviations)",
      "src/db/x.repository.ts:2: a hand-written row type (deviationid, title of deviations)",
      "src/db/x.repository.ts:7: a hand-written row type (noteid, subject of notes)",
      "src/db/x.repository.ts:8: a hand-written row type (deviationid, is_deleted of deviations) asserted onto a value",
      "src/db/x.repository.ts:1: a hand-written row type (noteid, subject, body of notes)",
    ]);
  });

  it("names rows asserted onto a name bound from a statement, a join's rows padded with computed values, and camelCase columns", () => {
    const text = [
      "type FailedRow = { path: string | null; attempts: number; title: string | null; is_deleted: boolean; n: number; age: string };", // 1
      "type Pending = { deviationId: string; lastError: string | null; doneAt: Date | null };", // 2
      "export async function d(k: K) {", // 3
      "  const { rows } = await sql`SELECT 1`.execute(k);", // 4
      "  const { rows: found = [] } = await sql`SELECT 1`.execute(k);", // 5
      "  const result = await sql`SELECT 1`.execute(k);", // 6
      "  const a = rows as FailedRow[];", // 7
      "  const b = found as { deviationid: string; title: string | null }[];", // 8
      "  const c = result as { noteid: string; subject: string | null };", // 9
      "  await sql<Pending>`SELECT 1`.execute(k);", // 10
      "  return [a, b, c];",
      "}",
    ].join("\n");
    expect(found(text)).toEqual([
      "src/db/x.repository.ts:1: a hand-written row type (path, attempts of downloads; title, is_deleted of deviations) asserted onto a value",
      "src/db/x.repository.ts:8: a hand-written row type (deviationid, title of deviations) asserted onto a value",
      "src/db/x.repository.ts:9: a hand-written row type (noteid, subject of notes) asserted onto a value",
      "src/db/x.repository.ts:2: a hand-written row type (lastError, doneAt of downloads; deviationId of deviations)",
    ]);
  });

  it("names statements whose rows go untyped: sql<any>, sql<unknown>, and an untyped sql in a function declared to return hand-written rows", () => {
    const text = [
      "type Failed = { path: string | null; attempts: number };", // 1
      "export async function e(k: K) {", // 2
      "  await sql<any>`SELECT 1`.execute(k);", // 3
      "  return (await sql<unknown[]>`SELECT 1`.execute(k)).rows;", // 4
      "}",
      "export async function f(k: K): Promise<Failed[]> {", // 6
      "  const { rows } = await sql`SELECT 1`.execute(k);", // 7
      "  return rows.map((r) => r);",
      "}",
    ].join("\n");
    expect(found(text)).toEqual([
      "src/db/x.repository.ts:3: an untyped result (sql<any>)",
      "src/db/x.repository.ts:4: an untyped result (sql<unknown[]>)",
      "src/db/x.repository.ts:1: a hand-written row type (path, attempts of downloads) returned from an untyped statement (line 7)",
    ]);
  });

  it('follows a member read by index (Entry["k"]) into that member alone: a row typed by hand there is named, its siblings are not the statement\'s', () => {
    const text: string[] = [
      "export type Entry = { kind: 'a' | 'b'; file: { deviationid: string; title: string | null } | null };", // 1
      "type Holder = { rows: { noteid: string; subject: string | null } };", // 2
      "export async function c(db: Q) {", // 3
      "  await sql<{ entry_kind: Entry['kind']; n: number }>`SELECT 1`.execute(k);", // 4
      "  await sql<Holder['rows']>`SELECT 1`.execute(k);", // 5
    ];
    expect(found([...text, "}"].join("\n"))).toEqual(["src/db/x.repository.ts:2: a hand-written row type (noteid, subject of notes)"]);
    // The whole of Entry as a statement's rows is still followed into its members.
    expect(found([...text, "  await sql<Entry>`SELECT 1`.execute(k);", "}"].join("\n"))).toEqual([
      "src/db/x.repository.ts:2: a hand-written row type (noteid, subject of notes)",
      "src/db/x.repository.ts:1: a hand-written row type (deviationid, title of deviations)",
    ]);
  });

  it("passes rows taken from the schema, computed values, inputs no statement is typed with, and the builder's inferred rows", () => {
    const text = [
      "export type NoteInput = { noteid: string; subject: string };",
      "export async function b(db: Q, input: NoteInput) {",
      "  await sql<Pick<Row<'deviations'>, 'deviationid' | 'title'>>`SELECT 1`.execute(k);",
      "  await sql<{ inserted: number; changed: number; total: number }>`SELECT 1`.execute(k);",
      "  await sql<{ noteid: Row<'notes'>['noteid']; subject: Row<'notes'>['subject'] }>`SELECT 1`.execute(k);",
      "  await sql<number>`count(*)`.execute(k);",
      "  const gaps = row.gaps as Record<string, { noteid: string; subject: string }>;",
      "  const n = (await sql`SELECT 1`.execute(k)).rows.length;",
      "  await kysely(db).selectFrom('downloads').select([sql<unknown>`raw -> 'x'`.as('x'), 'id']).execute();",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: planted source text
      "  await sql<{ n: number }>`SELECT ${sql<any>`true`} AS n`.execute(k);",
      "  const params = { noteid: 'x', subject: 'y' } as { noteid: string; subject: string };",
      "  const counts = input as unknown as { path: string; attempts: number; n: number; age: string; size: number };",
      "  return kysely(db).selectFrom('notes').select(['noteid', 'subject']).execute();",
      "}",
    ].join("\n");
    expect(found(text)).toEqual([]);
  });
});
