// What every check of scripts/checks reads: the TypeScript sources of src/ and jobs/ under a repository root
// (this one, or another checkout given as the first argument, which is how test/unit/architecture-checks.test.ts
// shows each check failing on a tree made to break it). Generated code (src/generated) and node_modules are never
// read.
import fs from "node:fs";
import path from "node:path";

/**
 * The repository a check reads: the first argument when a check of this folder is the program being run,
 * else the repository this folder belongs to (as when a test imports a check's functions).
 */
export function checkRoot(): string {
  const program = process.argv[1] ? path.resolve(process.argv[1]) : "";
  const given = program.startsWith(import.meta.dirname + path.sep) ? process.argv[2] : undefined;
  return path.resolve(given ?? path.join(import.meta.dirname, "..", ".."));
}

/**
 * Source files below `dir` (.ts, .mts, .cts, .js, .mjs, .cjs; declaration files aside), skipping node_modules, any
 * folder in `skip`, and the generated code: the folder `generated` directly in src/ (src/generated, which
 * scripts/prisma-generate.js writes), not a folder of that name elsewhere.
 */
export function sourceFiles(dir: string, skip: readonly string[] = []): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const generated = entry.name === "generated" && path.basename(dir) === "src";
      if (!generated && entry.name !== "node_modules" && !skip.includes(p)) out.push(...sourceFiles(p, skip));
    } else if (/\.[mc]?[jt]s$/.test(entry.name) && !/\.d\.[mc]?ts$/.test(entry.name)) {
      out.push(p);
    }
  }
  return out;
}

/** src/ and jobs/ of a repository. */
export function checkedFiles(root: string, skip: readonly string[] = []): string[] {
  return [...sourceFiles(path.join(root, "src"), skip), ...sourceFiles(path.join(root, "jobs"), skip)];
}
