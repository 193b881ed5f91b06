// `npm run check:output`: text reaches stdout and stderr only through the CLI's printer (src/cli/output/), which
// escapes every control character and direction override (src/cli/output/terminal.ts), so a title, a folder name
// or a source's last error can never drive the terminal. One line per `console.…` call or use of process.stdout or
// process.stderr (other than asking `.isTTY`, `.columns` or `.rows`) in src/ or jobs/ elsewhere; exit 1 when there
// is any. The logger writes to file descriptor 2 through pino, as JSON (or pino-pretty's lines in a terminal).
import fs from "node:fs";
import path from "node:path";
import { checkRoot, checkedFiles } from "./source-files.ts";

const ROOT = checkRoot();
/** The printer: the one folder allowed to write. */
const PRINTER = path.join("src", "cli", "output") + path.sep;

const WRITE = /\bconsole\s*\.\s*\w+|\bprocess\s*\.\s*(stdout|stderr)\b(?!\s*\.\s*(?:isTTY|columns|rows)\b)/g;

const violations: string[] = [];
for (const file of checkedFiles(ROOT)) {
  const rel = path.relative(ROOT, file);
  if (rel.startsWith(PRINTER)) continue;
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(WRITE)) {
    // A comment may name them.
    const lineStart = text.lastIndexOf("\n", m.index) + 1;
    if (/^\s*(\/\/|\*|\/\*)/.test(text.slice(lineStart, m.index))) continue;
    const line = text.slice(0, m.index).split("\n").length;
    violations.push(`${rel}:${line}: ${m[0]} writes around the printer; use printOut, printErr or printJson (src/cli/output/print.ts)`);
  }
}
for (const v of violations) process.stdout.write(`${v}\n`);
if (violations.length > 0) {
  process.stdout.write(`${violations.length} write(s) to stdout or stderr outside src/cli/output/\n`);
  process.exit(1);
}
process.stdout.write("output: every line for the terminal goes through the printer (src/cli/output/)\n");
