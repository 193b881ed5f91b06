// `npm run check:size`: no source file of src/ or jobs/ over 400 lines (docs/ARCHITECTURE.md#file-size).
// Generated code is exempt, and so is nothing else: a file that grows past the limit splits along a seam.
import fs from "node:fs";
import path from "node:path";

const LIMIT = 400;
const ROOT = path.resolve(import.meta.dirname, "..", "..");

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "generated") out.push(...sourceFiles(p));
    } else if (entry.name.endsWith(".ts")) {
      out.push(p);
    }
  }
  return out;
}

const over: string[] = [];
for (const file of [...sourceFiles(path.join(ROOT, "src")), ...sourceFiles(path.join(ROOT, "jobs"))]) {
  const lines = fs.readFileSync(file, "utf8").split("\n").length - 1;
  if (lines > LIMIT) over.push(`${path.relative(ROOT, file)}: ${lines} lines (the limit is ${LIMIT}): split it along a seam`);
}
for (const line of over) process.stdout.write(line + "\n");
if (over.length > 0) process.exit(1);
process.stdout.write(`size: every source file of src/ and jobs/ is within ${LIMIT} lines\n`);
