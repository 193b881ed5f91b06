import { describe, expect, it } from "vitest";
import { checkSize, functionSizes, LIMIT } from "../../scripts/checks/function-size.ts";
import { parseText } from "../../scripts/checks/parse.ts";
import { plantedTree } from "../helpers/planted-tree.ts";

// scripts/checks/function-size.ts counts each function's lines from the parsed code; files are only warned about.
const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");
/** A function of exactly `lines` lines. */
const fn = (name: string, lines: number) => `export function ${name}() {\n${body(lines - 2)}\n}\n`;

describe(checkSize.name, () => {
  it("counts every kind of function, a last line without a final newline too", () => {
    const text = [
      "export class Box {",
      "  get size() {",
      "    return 1;",
      "  }",
      "  open(a: number) {",
      "    const inner = () =>",
      "      a;",
      "    return inner();",
      "  }",
      "}",
      "export const run = (xs: number[]) => xs.map((x) => {",
      "  return x;",
      "});",
      "export function last() {",
      "  return 1;",
      "}",
    ].join("\n");
    const sizes = functionSizes(parseText("/r", "/r/src/x/box.ts", text)).map((f) => `${f.name}@${f.line}:${f.lines}`);
    expect(sizes).toEqual(["get Box.size@2:3", "Box.open@5:5", "Box.open/inner@6:2", "run@11:3", "run/xs.map(…)@11:3", "last@14:3"]);
  });

  it("fails a function over the limit that is not listed and a listed one that grew; a 401-line file without a final newline is a warning", () => {
    const longFile = Array.from({ length: 401 }, (_, i) => `export const c${i} = ${i};`).join("\n");
    const root = plantedTree({
      "src/sync/over.ts": fn("over", LIMIT + 1),
      "src/sync/at-limit.ts": fn("atLimit", LIMIT),
      "src/sync/listed.ts": `${fn("grew", 95)}${fn("same", 90)}${fn("shrank", 85)}`,
      // The last line of the function is the file's last, with no newline after it.
      "jobs/x/no-newline.ts": fn("tail", LIMIT + 1).trimEnd(),
      "src/sync/long-file.ts": longFile,
      "src/sync/file-400.ts": `${Array.from({ length: 400 }, (_, i) => `export const c${i} = ${i};`).join("\n")}\n`,
      "src/http/app.ts": `export const app = {\n  routes: () => {\n${body(LIMIT)}\n  },\n};\n`,
    });
    const { findings, notes } = checkSize(root, undefined, { "src/sync/listed.ts": { grew: 90, same: 90, shrank: 90, gone: 99 } });
    expect(findings).toEqual([
      `src/http/app.ts:2: routes is ${LIMIT + 2} lines (the limit is ${LIMIT}): shorten it along a seam`,
      `src/sync/listed.ts:1: grew grew to 95 lines (listed at 90; the limit is ${LIMIT}): shorten it`,
      `src/sync/over.ts:1: over is ${LIMIT + 1} lines (the limit is ${LIMIT}): shorten it along a seam`,
      `jobs/x/no-newline.ts:1: tail is ${LIMIT + 1} lines (the limit is ${LIMIT}): shorten it along a seam`,
    ]);
    expect(notes).toContain("warning: src/sync/long-file.ts: 401 lines; a file this long is worth a look for a seam (not a failure)");
    expect(notes.join("\n")).not.toContain("file-400.ts");
    expect(notes).toContain("note: src/sync/listed.ts: shrank is 85 lines now (listed at 90): lower it in LONGER_TODAY");
    expect(notes).toContain("note: src/sync/listed.ts: gone is gone: remove it from LONGER_TODAY");
    expect(notes.join("\n")).not.toContain("same");
  });
});
