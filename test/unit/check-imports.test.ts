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
      // A require under any name: createRequire's result bound to another name (createRequire itself renamed,
      // the result passed on), and module.require.
      "src/api/create-require.ts":
        'import { createRequire } from "node:module";\nconst req = createRequire(import.meta.url);\nexport const x = req("../db/x.repository.ts");\n',
      "src/api/module-require.ts": 'export const x = module.require("../db/x.repository.ts");\n',
      "src/sync/req-bull.ts":
        'import { createRequire as make } from "node:module";\nconst r = make(import.meta.url);\nconst again = r;\nexport const b = again("bullmq");\n',
      // A package's home folder handing its values on under other names, taken outside the folder.
      "src/queue/handed.ts": 'export { Queue as JobQueue, type Job } from "bullmq";\nimport { Worker } from "bullmq";\nexport { Worker as Runner };\n',
      "src/sync/uses-handed.ts": 'import { JobQueue, Runner } from "../queue/handed.ts";\nexport const u = [JobQueue, Runner];\n',
      // Files the checks must read: a folder named generated below src/api (only src/generated is generated),
      // CommonJS and TypeScript's module extensions.
      "src/api/deep/generated/hidden.ts": 'export { x } from "../../../db/x.repository.ts";\n',
      "src/api/legacy.cjs": 'module.exports = require("../db/x.repository.ts");\n',
      "src/api/typed.cts": 'import { x } from "../db/x.repository.ts";\nexport const y = x;\n',
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
      // Generated code is not read (src/generated is no area the rules name), nor declaration files.
      "src/generated/client.ts": 'import pg from "pg";\nexport const c = pg;\n',
      "src/api/shapes.d.cts": 'import type { Row } from "../db/x.repository.ts";\nexport type R = Row;\n',
      // A home folder's types handed on, and its values re-exported for its own files only.
      "src/queue/types-only.ts": 'export type { Job } from "bullmq";\nexport { type Queue } from "bullmq";\n',
      "src/sync/uses-types.ts": 'import type { Job, Queue } from "../queue/types-only.ts";\nexport type J = Job | Queue;\n',
      "src/db/inner.ts": 'export { sql } from "kysely";\nimport { Kysely } from "kysely";\nexport { Kysely as K };\n',
      "src/db/uses-inner.ts": 'import { K, sql } from "./inner.ts";\nexport const s = [sql, K];\n',
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
    expect(placesIn(findings, "src/api/create-require.ts")).toEqual(["src/api/create-require.ts:3"]);
    expect(placesIn(findings, "src/api/module-require.ts")).toEqual(["src/api/module-require.ts:1"]);
    expect(findings).toContain("src/sync/req-bull.ts:4: only src/queue may import bullmq (sync does); see docs/ARCHITECTURE.md");
    expect(placesIn(findings, "src/sync/req-bull.ts")).toEqual(["src/sync/req-bull.ts:4"]);
    expect(findings).toContain(
      "src/queue/handed.ts:1: re-exports bullmq's values out of src/queue; only its types may leave the folder (docs/ARCHITECTURE.md)",
    );
    expect(findings).toContain("src/queue/handed.ts:3: exports bullmq's Worker out of src/queue; only its types may leave the folder (docs/ARCHITECTURE.md)");
    expect(placesIn(findings, "src/queue/handed.ts")).toEqual(["src/queue/handed.ts:1", "src/queue/handed.ts:3"]);
    expect(placesIn(findings, "src/api/deep/generated/hidden.ts")).toEqual(["src/api/deep/generated/hidden.ts:1"]);
    expect(placesIn(findings, "src/api/legacy.cjs")).toEqual(["src/api/legacy.cjs:1"]);
    expect(placesIn(findings, "src/api/typed.cts")).toEqual(["src/api/typed.cts:1"]);
  });

  it("passes what the rules allow and text that only looks like an import", () => {
    const { findings } = checkImports(root());
    expect(placesIn(findings, "src/sync/clean.ts")).toEqual([]);
    expect(placesIn(findings, "src/db/pg.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/q.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/types-only.ts")).toEqual([]);
    expect(placesIn(findings, "src/sync/uses-types.ts")).toEqual([]);
    expect(placesIn(findings, "src/sync/uses-handed.ts")).toEqual([]);
    expect(placesIn(findings, "src/db/inner.ts")).toEqual([]);
    expect(findings.filter((f) => f.includes("generated"))).toEqual([
      "src/api/deep/generated/hidden.ts:1: api may not import db (../../../db/x.repository.ts); see docs/ARCHITECTURE.md",
    ]);
    expect(placesIn(findings, "src/api/shapes.d.cts")).toEqual([]);
    expect(findings).toHaveLength(23);
  });

  it("names the area it does not know", () => {
    const { findings } = checkImports(plantedTree({ "src/nowhere/x.ts": "export const x = 1;\n" }));
    expect(findings).toEqual(["src/nowhere: an area docs/ARCHITECTURE.md does not name; add it to scripts/checks/imports.ts and the document"]);
  });
});
