// `npm run check:cycles`: no import cycle among the files of src/, jobs/ and bin/ (docs/ARCHITECTURE.md#file-size).
// Every module a file names (scripts/checks/parse.ts: import, export … from, import(), require; type-only imports
// too, as farm-studio draws them: a cycle of types still ties the files' design together) is an arrow; each
// strongly connected set of two or more files (or a file importing itself) is a cycle, printed with its files and
// the arrows that close it. Exit 1 when there is any.
import { type Check, moduleRefs, parseTree, resolveSpecifier, runAsMain, type SourceFile } from "./parse.ts";
import { checkRoot } from "./source-files.ts";

export type Arrow = { from: string; line: number; to: string; typeOnly: boolean; dynamic: boolean };
export type Cycle = { files: string[]; arrows: Arrow[] };

/** The import cycles of the parsed files, each with its files (sorted) and the arrows among them. */
export function findCycles(root: string, files: readonly SourceFile[] = parseTree(root, ["src", "jobs", "bin"])): Cycle[] {
  const byFile = new Map(files.map((f) => [f.file, f]));
  const arrows = new Map<string, Arrow[]>();
  for (const src of files) {
    const out: Arrow[] = [];
    for (const ref of moduleRefs(src)) {
      if (ref.specifier === null) continue;
      const target = resolveSpecifier(src.file, ref.specifier);
      const to = target ? byFile.get(target) : undefined;
      if (to) out.push({ from: src.rel, line: ref.line, to: to.rel, typeOnly: ref.typeOnly, dynamic: ref.kind === "dynamic" });
    }
    arrows.set(src.rel, out);
  }
  // Tarjan's strongly connected components, iteratively (a deep chain must not overflow the stack).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: Cycle[] = [];
  let next = 0;
  for (const start of arrows.keys()) {
    if (index.has(start)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: start, i: 0 }];
    index.set(start, next);
    low.set(start, next++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const top = work[work.length - 1] as { node: string; i: number };
      const edges = arrows.get(top.node) ?? [];
      if (top.i < edges.length) {
        const to = (edges[top.i++] as Arrow).to;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, i: 0 });
        } else if (onStack.has(to)) low.set(top.node, Math.min(low.get(top.node) as number, index.get(to) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(top.node) as number));
      if (low.get(top.node) !== index.get(top.node)) continue;
      const members: string[] = [];
      for (let m = stack.pop(); m !== undefined; m = stack.pop()) {
        onStack.delete(m);
        members.push(m);
        if (m === top.node) break;
      }
      const inside = new Set(members);
      const ties = members.flatMap((m) => (arrows.get(m) ?? []).filter((a) => inside.has(a.to)));
      if (members.length > 1 || ties.length > 0)
        cycles.push({ files: members.sort(), arrows: ties.sort((a, b) => a.from.localeCompare(b.from) || a.line - b.line) });
    }
  }
  return cycles.sort((a, b) => (a.files[0] ?? "").localeCompare(b.files[0] ?? ""));
}

/** One block of lines a cycle: its files, then each arrow that ties them. */
export function describeCycle(cycle: Cycle, n: number): string[] {
  return [
    `cycle ${n}: ${cycle.files.length} files: ${cycle.files.join(", ")}`,
    ...cycle.arrows.map((a) => `  ${a.from}:${a.line} -> ${a.to}${a.typeOnly ? " (types only)" : ""}${a.dynamic ? " (import())" : ""}`),
  ];
}

export const cyclesCheck: Check = {
  run: (root, files) => {
    const cycles = findCycles(root, files);
    return { findings: cycles.map((c, i) => describeCycle(c, i + 1).join("\n")) };
  },
  failed: (n) => `${n} import cycle(s) among src/, jobs/ and bin/: merge the files of each or cut one arrow along a seam`,
  passed: "cycles: no import cycle among the files of src/, jobs/ and bin/",
};

runAsMain(import.meta, cyclesCheck, checkRoot());
