import path from "node:path";
import { describe, expect, it } from "vitest";
import { findSql } from "../../scripts/checks/sql-in-db.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const check = (src: string) => findSql(path.join(ROOT, "src/x/probe.ts"), src);

describe(findSql.name, () => {
  it("flags statements in strings and templates, with the line of the keyword", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the probe is source text whose template literal the check must read
    const found = check(['const a = "SELECT 1";', "const b = `", "  WITH x AS (SELECT id FROM t)", "  SELECT * FROM x WHERE id = ${id}`;"].join("\n"));
    expect(found).toEqual([
      "src/x/probe.ts:1: SQL (SELECT) in a literal: move the statement into a repository of src/db",
      "src/x/probe.ts:3: SQL (SELECT … FROM) in a literal: move the statement into a repository of src/db",
    ]);
    expect(check("q(`insert into t (a) values ($1)`)")).toHaveLength(1);
    expect(check('q("UPDATE downloads SET status = $1"); q("DELETE FROM notes"); q("CREATE DATABASE x")')).toHaveLength(3);
    expect(check('q("x ON CONFLICT (id) DO NOTHING"); q("BEGIN"); q("COMMIT"); q("SET statement_timeout = 0")')).toHaveLength(4);
  });

  it("flags database drivers and Prisma's raw queries", () => {
    const found = check(
      [
        'import pg from "pg";',
        'import type { X } from "@prisma/client";',
        'await import("node:sqlite");',
        "await db.$queryRaw`x`;",
        "db.$executeRawUnsafe(s);",
      ].join("\n"),
    );
    expect(found.map((f) => f.split(": ")[0])).toEqual(["src/x/probe.ts:1", "src/x/probe.ts:2", "src/x/probe.ts:3", "src/x/probe.ts:4", "src/x/probe.ts:5"]);
  });

  it("leaves prose, comments and regular expressions alone", () => {
    const src = [
      "// SELECT id FROM downloads: a comment may show SQL",
      "/* DELETE FROM notes */",
      "const re = /'/g; const half = a / b / c;",
      'const m = "select one from the list"; const n = "SELECT an account with --account"; const o = "Begin the sync";',
      'const p = "commit"; const q = "Update the settings"; import { x } from "./pg.ts";',
    ].join("\n");
    expect(check(src)).toEqual([]);
  });
});
