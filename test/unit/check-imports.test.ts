import { describe, expect, it } from "vitest";
import { checkImports } from "../../scripts/checks/imports.ts";
import { placesIn, plantedTree } from "../helpers/planted-tree.ts";

// scripts/checks/imports.ts reads the parsed code: every way a module can be named is held to the layer rules.
describe(checkImports.name, () => {
  const root = () =>
    plantedTree({
      "src/db/x.repository.ts": "export const x = 1;\nexport type Row = { id: number };\n",
      // Evasions: an import hidden in a template literal, a computed import(), a require, export-from, a type
      // import and `typeof import`, `import x = require`, a dynamic import spread over lines, and packages kept to one folder.
      "src/api/template.ts": "export const load = () => import(`../db/x.repository.ts`);\n",
      "src/api/computed.ts": 'const where = "../db/x.repository.ts";\nexport const load = () => import(where);\n',
      "src/api/required.ts":
        'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nexport const x = require("../db/x.repository.ts");\n',
      "src/api/reexport.ts": 'export { x } from "../db/x.repository.ts";\nexport * from "../db/x.repository.ts";\n',
      "src/api/types.ts": 'import type { Row } from "../db/x.repository.ts";\nexport type R = Row | typeof import("../db/x.repository.ts");\n',
      "src/api/equals.ts": 'import x = require("../db/x.repository.ts");\nexport const y = x;\n',
      "src/api/spread.ts": 'export const load = async () =>\n  (\n    await import(\n      "../db/x.repository.ts"\n    )\n  ).x;\n',
      "src/sync/driver.ts":
        'import pg from "pg";\nimport { Kysely } from "kysely";\nexport { PrismaClient } from "@prisma/client";\nexport const p = [pg, Kysely];\n',
      "src/sync/bull.ts": 'import type { Queue } from "bullmq";\nexport type Q = Queue;\nexport const load = () => import("bullmq");\n',
      // Clean: what the rules allow, and text that only looks like an import.
      "src/sync/clean.ts": [
        'import { x } from "../db/x.repository.ts";',
        '// import { y } from "../http/server.ts";',
        'export const text = "import(\\"../http/server.ts\\")";',
        'export const load = () => import("../api/template.ts");',
        "export const y = x;",
        "",
      ].join("\n"),
      "src/db/pg.ts": 'import pg from "pg";\nexport const p = pg;\n',
      "src/queue/q.ts": 'import { Queue } from "bullmq";\nexport const Q = Queue;\n',
    });

  it("finds every planted import across the rules, with its file and line", () => {
    const { findings } = checkImports(root());
    expect(findings).toContain("src/api/template.ts:1: api may not import db (../db/x.repository.ts); see docs/ARCHITECTURE.md");
    expect(placesIn(findings, "src/api/template.ts")).toEqual(["src/api/template.ts:1", "src/api/template.ts:1"]);
    expect(findings.some((f) => f.startsWith("src/api/template.ts:1: import() of a template"))).toBe(true);
    expect(findings.some((f) => f.startsWith("src/api/computed.ts:2: import() of a module it computes"))).toBe(true);
    expect(placesIn(findings, "src/api/required.ts")).toEqual(["src/api/required.ts:3"]);
    expect(placesIn(findings, "src/api/reexport.ts")).toEqual(["src/api/reexport.ts:1", "src/api/reexport.ts:2"]);
    expect(placesIn(findings, "src/api/types.ts")).toEqual(["src/api/types.ts:1", "src/api/types.ts:2"]);
    expect(placesIn(findings, "src/api/equals.ts")).toEqual(["src/api/equals.ts:1"]);
    expect(placesIn(findings, "src/api/spread.ts")).toEqual(["src/api/spread.ts:3"]);
    expect(findings).toContain("src/sync/driver.ts:1: only src/db may import pg (sync does); see docs/ARCHITECTURE.md");
    expect(placesIn(findings, "src/sync/driver.ts")).toEqual(["src/sync/driver.ts:1", "src/sync/driver.ts:2", "src/sync/driver.ts:3"]);
    expect(findings).toContain("src/sync/bull.ts:1: only src/queue may import bullmq (sync does); see docs/ARCHITECTURE.md");
    expect(placesIn(findings, "src/sync/bull.ts")).toEqual(["src/sync/bull.ts:1", "src/sync/bull.ts:3"]);
  });

  it("passes what the rules allow and text that only looks like an import", () => {
    const { findings } = checkImports(root());
    expect(placesIn(findings, "src/sync/clean.ts")).toEqual([]);
    expect(placesIn(findings, "src/db/pg.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/q.ts")).toEqual([]);
    expect(findings).toHaveLength(15);
  });

  it("names the area it does not know", () => {
    const { findings } = checkImports(plantedTree({ "src/nowhere/x.ts": "export const x = 1;\n" }));
    expect(findings).toEqual(["src/nowhere: an area docs/ARCHITECTURE.md does not name; add it to scripts/checks/imports.ts and the document"]);
  });
});
