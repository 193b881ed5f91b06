import { describe, expect, it } from "vitest";
import { checkSql } from "../../scripts/checks/sql-in-db.ts";
import { placesIn, plantedTree } from "../helpers/planted-tree.ts";

// scripts/checks/sql-in-db.ts reads the text the code spells, in any case and however it is put together.
describe(checkSql.name, () => {
  const planted = {
    // Evasions: lower case, concatenation, a template whose static parts join into a statement, a const spelled
    // into another, `[…].join`, `.concat`, a `let` grown with `+=`, and each statement the rule names.
    "src/status/lower.ts": 'export const q = "select id from deviations where id = $1";\n',
    "src/status/concat.ts": 'const table = "deviations";\nexport const q = "SELECT id " +\n  "FROM " + table;\n',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: planted source text
    "src/status/template.ts": 'const verb = "delete";\nexport const q = (t: string) => `${verb} ${"from"} ${t} where id = $1`;\n',
    "src/status/spelled.ts": 'const FROM = " from downloads";\nexport const q = "select count(*)" + FROM;\n',
    "src/status/joined.ts": 'export const q = ["insert", "into", "notes", "(id)", "values ($1)"].join(" ");\n',
    "src/status/concatenated.ts": 'export const q = "update downloads ".concat("set status = $1");\n',
    "src/status/grown.ts": 'let q = "select id";\nq += " from downloads";\nexport const s = q;\n',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: planted source text
    "src/status/with.ts": 'export const q = `with due as (${"select"} 1)`;\n',
    "src/status/mixed.ts": 'export const q = "Select d.id From deviations d";\n',
    "src/status/prisma.ts": "export const r = (db: any) => db.$queryRawUnsafe(text);\nconst text = 'x';\n",
    "jobs/x/handler.ts": "export const q = `UPDATE downloads SET status = 'queued'`;\n",
    // Each branch of a conditional, an array const joined where it is used, a function selected without FROM in
    // lower case, and a table aliased before SET.
    "src/status/ternary.ts": [
      'export const a = (count: boolean) => (count ? "select count(*)" : "select id, title") + " from downloads where state = $1";',
      'export const b = (n: string, count: boolean) => (count ? n : "select id") + " from downloads";',
      "",
    ].join("\n"),
    "src/status/parts.ts": 'const parts = ["SELECT id", "FROM downloads"];\nexport const run = (q: any) => q.query(parts.join(" "));\n',
    "src/status/function.ts": 'export const a = "select now()";\nexport const b = "select pg_try_advisory_lock($1)";\n',
    "src/status/alias.ts": 'export const a = "UPDATE downloads AS d SET state = $1";\nexport const b = "update downloads as d set state = $1";\n',
    // Clean: prose, comments, a module name, and the same statements where they belong.
    "src/status/clean.ts": [
      "// select id from deviations: a comment may show SQL",
      'export const a = "select one from the list";',
      'export const b = "Update the settings, then delete from the archive what you no longer want";',
      'export const c = "Insert into the form " + "the name you want";',
      'export const d = "SELECT an account with --account";',
      'export const e = "Select the file(s) you want, then update the list as you set it";',
      'export const f = "select option (recommended) or update them as you go";',
      'export const g = (ok: boolean) => (ok ? "select one" : "pick one") + " from the list";',
      'const h = ["select one", "from the list"];',
      'export const i = h.join(" ");',
      "",
    ].join("\n"),
    "src/db/status.repository.ts": 'export const q = "select id from deviations where id = $1";\n',
    "src/simulator/db.ts": 'export const q = "select id from deviations";\n',
  };

  it("finds every planted statement, with its file and line", () => {
    const findings = checkSql(plantedTree(planted));
    expect(findings).toContain("src/status/lower.ts:1: SQL (SELECT … FROM) in a literal: move the statement into a repository of src/db");
    expect(placesIn(findings, "src/status/concat.ts")).toEqual(["src/status/concat.ts:2"]);
    expect(placesIn(findings, "src/status/template.ts")).toEqual(["src/status/template.ts:1"]);
    expect(findings.find((f) => f.startsWith("src/status/template.ts"))).toContain("DELETE FROM");
    expect(placesIn(findings, "src/status/spelled.ts")).toEqual(["src/status/spelled.ts:2"]);
    expect(findings.find((f) => f.startsWith("src/status/joined.ts"))).toContain("INSERT INTO");
    expect(findings.find((f) => f.startsWith("src/status/concatenated.ts"))).toContain("UPDATE … SET");
    expect(placesIn(findings, "src/status/grown.ts")).toEqual(["src/status/grown.ts:1"]);
    expect(findings.find((f) => f.startsWith("src/status/with.ts"))).toContain("WITH … AS (");
    expect(placesIn(findings, "src/status/mixed.ts")).toEqual(["src/status/mixed.ts:1"]);
    expect(findings).toContain("src/status/prisma.ts:1: $queryRawUnsafe: raw SQL through Prisma belongs in src/db");
    expect(placesIn(findings, "jobs/x/handler.ts")).toEqual(["jobs/x/handler.ts:1"]);
    expect(placesIn(findings, "src/status/ternary.ts")).toEqual(["src/status/ternary.ts:1", "src/status/ternary.ts:2"]);
    expect(placesIn(findings, "src/status/parts.ts")).toEqual(["src/status/parts.ts:1"]);
    expect(placesIn(findings, "src/status/function.ts")).toEqual(["src/status/function.ts:1", "src/status/function.ts:2"]);
    expect(placesIn(findings, "src/status/alias.ts")).toEqual(["src/status/alias.ts:1", "src/status/alias.ts:2"]);
    expect(findings.find((f) => f.startsWith("src/status/alias.ts"))).toContain("UPDATE … SET");
  });

  it("passes prose, comments, and statements in src/db and the simulator", () => {
    const findings = checkSql(plantedTree(planted));
    expect(placesIn(findings, "src/status/clean.ts")).toEqual([]);
    expect(placesIn(findings, "src/db/status.repository.ts")).toEqual([]);
    expect(placesIn(findings, "src/simulator/db.ts")).toEqual([]);
    expect(findings).toHaveLength(18);
  });
});
