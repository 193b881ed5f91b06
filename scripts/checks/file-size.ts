// `npm run check:size`: no source file of src/ or jobs/ over 400 lines (docs/ARCHITECTURE.md#file-size).
// Generated code is exempt, and so is nothing else: a file that grows past the limit splits along a seam.
import fs from "node:fs";
import path from "node:path";
import { checkRoot, checkedFiles } from "./source-files.ts";

const LIMIT = 400;
const ROOT = checkRoot();

const over: string[] = [];
for (const file of checkedFiles(ROOT)) {
  const lines = fs.readFileSync(file, "utf8").split("\n").length - 1;
  if (lines > LIMIT) over.push(`${path.relative(ROOT, file)}: ${lines} lines (the limit is ${LIMIT}): split it along a seam`);
}
for (const line of over) process.stdout.write(`${line}\n`);
if (over.length > 0) process.exit(1);
process.stdout.write(`size: every source file of src/ and jobs/ is within ${LIMIT} lines\n`);
