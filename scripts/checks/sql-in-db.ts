// `npm run check:sql`: all SQL lives in src/db (docs/ARCHITECTURE.md#the-layers). Every source file of src/
// and jobs/ outside src/db is read for what would talk to a database: an import of a database driver, a
// Prisma raw-query call, or a string or template literal that reads as an SQL statement. One line per
// finding (file:line), exit 1 when there is any. Generated code and the simulator (the service's model,
// which shares nothing with dvault) are exempt; so are tests, benchmarks and scripts, which are not read.
import fs from "node:fs";
import path from "node:path";
import { checkRoot, checkedFiles } from "./source-files.ts";

const ROOT = checkRoot();
/** Folders of src/ whose files may issue SQL, or are not dvault's own code. */
const EXEMPT = ["src/db", "src/generated", "src/simulator"].map((d) => path.join(ROOT, d));
/** Modules that open a database connection or run statements. */
const DRIVERS = new RegExp(
  "^(?:" +
    ["pg", "pg-pool", "pg-cursor", "pg-copy-streams", "pg-query-stream", "postgres", "@prisma/adapter-pg", "@prisma/client(?:/.*)?"].join("|") +
    "|node:sqlite|better-sqlite3|sqlite3?|kysely|knex)$",
);
/** Prisma's raw-query methods, called or used as a template tag. */
const RAW_CALL = /\$(?:queryRaw|executeRaw|queryRawUnsafe|executeRawUnsafe|queryRawTyped)\b/g;

/**
 * What reads as a statement: keywords in capitals (as every statement of this repository is written) with
 * the word that makes them SQL rather than prose ("SELECT" alone in a message is not flagged, "SELECT 1" is);
 * INSERT INTO and ON CONFLICT, which prose never says, in any case.
 */
const STATEMENTS: Array<[string, RegExp]> = [
  ["SELECT … FROM", /\bSELECT\b[\s\S]*?\bFROM\b/],
  ["SELECT", /\bSELECT\s+(?:\d|\*|DISTINCT\b|[a-z_][\w.]*\s*(?:\(|,|AS\b))/],
  ["INSERT INTO", /\binsert\s+into\s+["\w]/i],
  ["UPDATE … SET", /\bUPDATE\s+["\w.]+\s+(?:\w+\s+)?SET\b/],
  ["DELETE FROM", /\bDELETE\s+FROM\b/],
  ["ON CONFLICT", /\bon\s+conflict\s*(?:\(|do\b|on\s+constraint\b)/i],
  ["DDL", /\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+)?(?:TABLE|DATABASE|INDEX|SCHEMA|EXTENSION|TYPE|VIEW|FUNCTION|TRIGGER|SEQUENCE|ROLE)\b/],
  ["TRUNCATE", /\bTRUNCATE\s+(?:TABLE\s+)?["\w]/],
  ["WITH … AS (", /\bWITH\s+(?:RECURSIVE\s+)?\w+\s+AS\s*(?:MATERIALIZED\s*)?\(/],
  [
    "a transaction or session statement",
    new RegExp(
      "^\\s*(?:" +
        [
          "(?:BEGIN|COMMIT|ROLLBACK)(?:\\s+(?:WORK|TRANSACTION))?",
          "START\\s+TRANSACTION",
          "(?:RELEASE\\s+)?SAVEPOINT\\s+\\w+",
          "ROLLBACK\\s+TO\\s+(?:SAVEPOINT\\s+)?\\w+",
          '(?:UN)?LISTEN\\s+[\\w*"]+',
          'NOTIFY\\s+[\\w"]+.*',
          "VACUUM.*",
          "ANALYZE.*",
          "SET\\s+(?:LOCAL\\s+|SESSION\\s+)?[\\w.]+\\s*(?:=|TO)\\s*\\S+",
        ].join("|") +
        ")\\s*;?\\s*$",
    ),
  ],
];

type Literal = { start: number; text: string };
type Scan = { literals: Literal[]; code: string };

const REGEX_BEFORE = new Set("(,=:[!&|?{};+-*%<>~^".split(""));
const REGEX_KEYWORDS = new Set(["return", "typeof", "case", "in", "of", "else", "yield", "await", "void", "delete", "throw", "new"]);

/**
 * Splits TypeScript into its string and template literals (a template's substitutions become "?") and its
 * code with comments and literals blanked (same length, newlines kept, so offsets give lines). A small
 * scanner rather than the compiler: TypeScript 7 ships no JavaScript API.
 */
function scan(src: string): Scan {
  const literals: Literal[] = [];
  const code = src.split("");
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (code[k] !== "\n") code[k] = " ";
  };
  let i = 0;
  const quoted = (quote: string): void => {
    const start = i;
    let text = "";
    i++;
    while (i < src.length && src[i] !== quote && src[i] !== "\n") {
      if (src[i] === "\\") {
        text += src[i + 1] ?? "";
        i += 2;
      } else text += src[i++];
    }
    i++;
    literals.push({ start, text });
    blank(start + 1, i - 1);
  };
  const template = (): void => {
    const start = i;
    let text = "";
    i++;
    while (i < src.length && src[i] !== "`") {
      if (src[i] === "\\") {
        text += src[i + 1] ?? "";
        i += 2;
      } else if (src[i] === "$" && src[i + 1] === "{") {
        blank(start + 1, i);
        i += 2;
        codeUntil("}");
        text += "?";
        i++;
      } else text += src[i++];
    }
    blank(start + 1, i);
    i++;
    literals.push({ start, text });
  };
  const regex = (): void => {
    const start = i;
    let inClass = false;
    i++;
    while (i < src.length && src[i] !== "\n") {
      const c = src[i];
      if (c === "\\") i++;
      else if (c === "[") inClass = true;
      else if (c === "]") inClass = false;
      else if (c === "/" && !inClass) break;
      i++;
    }
    i++;
    while (/[a-z]/i.test(src[i] ?? "")) i++;
    blank(start, i);
  };
  /** Scans code up to an unmatched `close` (or the end), leaving i on it. */
  function codeUntil(close: string | undefined): void {
    let depth = 0;
    // The previous token: a punctuation character or a whole word; a slash after an operator or a keyword opens a regex.
    let last = "";
    while (i < src.length) {
      const c = src[i] as string;
      const next = src[i + 1];
      if (c === "/" && next === "/") {
        const end = src.indexOf("\n", i);
        const to = end < 0 ? src.length : end;
        blank(i, to);
        i = to;
      } else if (c === "/" && next === "*") {
        const end = src.indexOf("*/", i + 2);
        const to = end < 0 ? src.length : end + 2;
        blank(i, to);
        i = to;
      } else if (c === "'" || c === '"') {
        quoted(c);
        last = "a";
      } else if (c === "`") {
        template();
        last = "a";
      } else if (c === "/" && (last === "" || REGEX_BEFORE.has(last) || REGEX_KEYWORDS.has(last))) {
        regex();
        last = "a";
      } else if (/[\w$]/.test(c)) {
        const word = /^[\w$]+/.exec(src.slice(i, i + 64))?.[0] ?? c;
        i += word.length;
        last = word;
      } else {
        if (c === "{") depth++;
        if (c === "}") {
          if (depth === 0 && close === "}") return;
          depth--;
        }
        if (!/\s/.test(c)) last = c;
        i++;
      }
    }
  }
  codeUntil(undefined);
  return { literals, code: code.join("") };
}

function lineAt(src: string, offset: number): number {
  return src.slice(0, offset).split("\n").length;
}

/** The findings of one file, as "file:line: what". */
export function findSql(file: string, src: string): string[] {
  const rel = path.relative(ROOT, file);
  const out: string[] = [];
  const { literals, code } = scan(src);
  // Module specifiers are literals right after `from`, `import` or `require(`.
  for (const lit of literals) {
    const before = code.slice(Math.max(0, lit.start - 12), lit.start);
    if (/(?:\bfrom|\bimport\s*\(?|\brequire\s*\()\s*$/.test(before)) {
      if (DRIVERS.test(lit.text)) out.push(`${rel}:${lineAt(src, lit.start)}: imports ${lit.text}: database access belongs in src/db`);
      continue;
    }
    for (const [what, pattern] of STATEMENTS) {
      const m = pattern.exec(lit.text);
      if (!m) continue;
      const line = lineAt(src, lit.start) + lit.text.slice(0, m.index).split("\n").length - 1;
      out.push(`${rel}:${line}: SQL (${what}) in a literal: move the statement into a repository of src/db`);
      break;
    }
  }
  for (const m of code.matchAll(RAW_CALL)) out.push(`${rel}:${lineAt(src, m.index)}: ${m[0]}: raw SQL through Prisma belongs in src/db`);
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) {
  const findings = checkedFiles(ROOT, EXEMPT).flatMap((f) => findSql(f, fs.readFileSync(f, "utf8")));
  for (const f of findings) process.stdout.write(`${f}\n`);
  if (findings.length > 0) {
    process.stdout.write(`${findings.length} place(s) outside src/db talk to the database directly\n`);
    process.exit(1);
  }
  process.stdout.write("sql: every statement and database driver is in src/db\n");
}
