import { describe, expect, it } from "vitest";
import { describeCycle, findCycles } from "../../scripts/checks/import-cycles.ts";
import { plantedTree } from "../helpers/planted-tree.ts";

// scripts/checks/import-cycles.ts: every way one file names another is an arrow, and any loop of arrows fails.
describe(findCycles.name, () => {
  const planted = {
    // Cycles: two files; three through export-from and a type-only import; one through import() and require;
    // one across folders (src → jobs → bin → src); a file importing itself.
    "src/a/one.ts": 'import { two } from "./two.ts";\nexport const one = () => two;\n',
    "src/a/two.ts": 'import { one } from "./one.ts";\nexport const two = () => one;\n',
    "src/b/x.ts": 'export { y } from "./y.ts";\nexport const x = 1;\n',
    "src/b/y.ts": 'import type { Z } from "./z.ts";\nexport const y: Z = 1;\n',
    "src/b/z.ts": 'import { x } from "./x.ts";\nexport type Z = typeof x;\n',
    "src/c/lazy.ts": "export const lazy = () => import(`./eager.ts`);\n",
    "src/c/eager.ts":
      'import { createRequire } from "node:module";\nconst require = createRequire(import.meta.url);\nexport const e = () => require("./lazy.ts");\n',
    "src/d/start.ts": 'import "../../jobs/j/handler.ts";\nexport const s = 1;\n',
    "jobs/j/handler.ts": 'import "../../bin/tool.js";\nexport const h = 1;\n',
    "bin/tool.js": 'import { s } from "../src/d/start.ts";\nexport const t = s;\n',
    "src/e/self.ts": 'import * as me from "./self.ts";\nexport const self = me;\n',
    // No cycle: a chain and a diamond.
    "src/f/top.ts": 'import { l } from "./left.ts";\nimport { r } from "./right.ts";\nexport const top = [l, r];\n',
    "src/f/left.ts": 'import { base } from "./base.ts";\nexport const l = base;\n',
    "src/f/right.ts": 'import { base } from "./base.ts";\nexport const r = base;\n',
    "src/f/base.ts": "export const base = 1;\n",
  };

  it("finds every planted cycle with its files and the arrows that close it", () => {
    const cycles = findCycles(plantedTree(planted));
    expect(cycles.map((c) => c.files)).toEqual([
      ["bin/tool.js", "jobs/j/handler.ts", "src/d/start.ts"],
      ["src/a/one.ts", "src/a/two.ts"],
      ["src/b/x.ts", "src/b/y.ts", "src/b/z.ts"],
      ["src/c/eager.ts", "src/c/lazy.ts"],
      ["src/e/self.ts"],
    ]);
    const lines = cycles.flatMap((c, i) => describeCycle(c, i + 1));
    expect(lines).toContain("cycle 3: 3 files: src/b/x.ts, src/b/y.ts, src/b/z.ts");
    expect(lines).toContain("  src/b/y.ts:1 -> src/b/z.ts (types only)");
    expect(lines).toContain("  src/c/lazy.ts:1 -> src/c/eager.ts (import())");
    expect(lines).toContain("  src/c/eager.ts:3 -> src/c/lazy.ts");
    expect(lines).toContain("  bin/tool.js:1 -> src/d/start.ts");
    expect(lines).toContain("  src/e/self.ts:1 -> src/e/self.ts");
  });

  it("passes a chain and a diamond", () => {
    const cycles = findCycles(plantedTree(planted));
    expect(cycles.flatMap((c) => c.files).filter((f) => f.startsWith("src/f/"))).toEqual([]);
    expect(
      findCycles(
        plantedTree({
          "src/f/top.ts": planted["src/f/top.ts"],
          "src/f/left.ts": planted["src/f/left.ts"],
          "src/f/right.ts": planted["src/f/right.ts"],
          "src/f/base.ts": planted["src/f/base.ts"],
        }),
      ),
    ).toEqual([]);
  });
});
