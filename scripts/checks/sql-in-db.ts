// `npm run check:sql`: all SQL lives in src/db (docs/ARCHITECTURE.md#the-layers). Every source file of src/
// and jobs/ outside src/db is parsed (scripts/checks/parse.ts) and read for what would talk to a database: an
// import of a database driver, a Prisma raw-query call, or text that reads as an SQL statement, in any case:
// a string, a template (its static parts joined, a static substitution spelled out), a `+` concatenation, a
// `[…].join()` (of an array written there or bound to a const), a `.concat()`, either branch of a conditional,
// a const of such text used in another, or a `let` grown with `+=`. One line per
// finding (file:line), exit 1 when there is any. Generated code and the simulator (the service's model, which
// shares nothing with dvault) are exempt; so are tests, benchmarks and scripts, which are not read.
import {
  bare,
  type Check,
  joinPieces,
  moduleRefs,
  type Node,
  parseText,
  parseTree,
  runAsMain,
  type SourceFile,
  staticText,
  textBindings,
  walk,
} from "./parse.ts";
import { checkRoot } from "./source-files.ts";

/** Folders whose files may issue SQL, or are not dvault's own code. */
const EXEMPT = ["src/db", "src/generated", "src/simulator"];
/** Modules that open a database connection or run statements. */
const DRIVERS = new RegExp(
  "^(?:" +
    ["pg", "pg-pool", "pg-cursor", "pg-copy-streams", "pg-query-stream", "postgres", "@prisma/adapter-pg", "@prisma/client(?:/.*)?"].join("|") +
    "|node:sqlite|better-sqlite3|sqlite3?|kysely(?:/.*)?|knex)$",
);
/** Prisma's raw-query methods, called or used as a template tag. */
const RAW = new Set(["$queryRaw", "$executeRaw", "$queryRawUnsafe", "$executeRawUnsafe", "$queryRawTyped"]);

/** Words that follow FROM, INTO or WITH in prose, never as a table's name: "select one from the list". */
const PROSE_WORDS = new Set(
  "the a an this that these those your my our its their his her each every any all some which what here there it them you us me one".split(" "),
);

/**
 * What reads as a statement. `kind`: "any case" forms are read case-insensitively (a lower-case statement is
 * still one); unless their keyword is written in capitals they must also not read as prose: the word after
 * FROM, INTO, UPDATE or WITH (group `name`) is not an article or a pronoun. "capitals" forms match only as
 * every statement of this repository is written, since their keywords are also everyday words ("Begin", "commit").
 */
type Statement = { what: string; pattern: RegExp; anyCase: boolean };
const STATEMENTS: Statement[] = [
  { what: "SELECT … FROM", pattern: /\bselect\b(?:(?!\bselect\b)[\s\S]){0,400}?\bfrom\s+(?<name>["\w.?]+|\()/i, anyCase: true },
  { what: "SELECT", pattern: /\bSELECT\s+(?:\d|\*|DISTINCT\b|[a-z_][\w.]*\s*(?:\(|,|AS\b))/, anyCase: false },
  // A function called with nothing after it, in any case: "select now()", "select pg_try_advisory_lock($1)". The
  // call is written as SQL writes one, the parenthesis right after the name, closed, and not a plural: "select file(s)".
  { what: "SELECT", pattern: /\bselect\s+[a-z_][\w.]*\((?!e?s\))[^()]*\)/i, anyCase: true },
  { what: "INSERT INTO", pattern: /\binsert\s+into\s+(?<name>["\w.?]+)/i, anyCase: true },
  { what: "UPDATE … SET", pattern: /\bupdate\s+(?<name>["\w.?]+)\s+(?:(?:as\s+)?\w+\s+)?set\s+(?<assign>["\w.?]+\s*=)?/i, anyCase: true },
  { what: "DELETE FROM", pattern: /\bdelete\s+from\s+(?<name>["\w.?]+)/i, anyCase: true },
  { what: "ON CONFLICT", pattern: /\bon\s+conflict\s*(?:\(|do\b|on\s+constraint\b)/i, anyCase: true },
  {
    what: "DDL",
    pattern: /\b(?:CREATE|DROP|ALTER)\s+(?:UNIQUE\s+)?(?:TABLE|DATABASE|INDEX|SCHEMA|EXTENSION|TYPE|VIEW|FUNCTION|TRIGGER|SEQUENCE|ROLE)\b/,
    anyCase: false,
  },
  { what: "TRUNCATE", pattern: /\bTRUNCATE\s+(?:TABLE\s+)?["\w]/, anyCase: false },
  { what: "WITH … AS (", pattern: /\bwith\s+(?:recursive\s+)?(?<name>\w+)\s+as\s*(?:(?:not\s+)?materialized\s*)?\(/i, anyCase: true },
  {
    what: "a transaction or session statement",
    pattern: new RegExp(
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
    anyCase: false,
  },
];

/** The statement `text` holds, if any, and where. */
export function sqlIn(text: string): { what: string; index: number } | null {
  for (const { what, pattern, anyCase } of STATEMENTS) {
    const m = pattern.exec(text);
    if (!m) continue;
    if (anyCase) {
      const keyword = /^\w+/.exec(m[0])?.[0] ?? "";
      const capitals = keyword === keyword.toUpperCase();
      const name = m.groups?.name?.toLowerCase();
      const prose = (name !== undefined && PROSE_WORDS.has(name)) || (what === "UPDATE … SET" && !m.groups?.assign);
      if (!capitals && prose) continue;
    }
    return { what, index: m.index };
  }
  return null;
}

/** Nodes that spell text and may hold a statement. */
function spells(n: Node): boolean {
  if (n.type === "Literal") return typeof n.value === "string";
  if (n.type === "TemplateLiteral" || n.type === "TaggedTemplateExpression") return true;
  if (n.type === "BinaryExpression") return n.operator === "+";
  if (n.type === "CallExpression") {
    const c = bare(n.callee);
    return c.type === "MemberExpression" && !c.computed && (c.property.name === "join" || c.property.name === "concat");
  }
  return false;
}

const WRAPPERS = new Set(["ParenthesizedExpression", "TSAsExpression", "TSSatisfiesExpression", "TSNonNullExpression", "TSTypeAssertion"]);

/** Whether the text `n` spells is read as part of a larger expression (its nearest non-wrapper ancestor). */
function partOfLarger(n: Node, ancestors: readonly Node[]): boolean {
  let i = ancestors.length - 1;
  let child = n;
  // A branch of a conditional is read with what the conditional is part of: `(c ? "select count(*)" : x) + " from t"`.
  const wraps = (a: Node | undefined) => WRAPPERS.has(a?.type ?? "") || (a?.type === "ConditionalExpression" && a.test !== child);
  while (i >= 0 && wraps(ancestors[i])) child = ancestors[i--] as Node;
  const p = ancestors[i];
  if (!p) return false;
  if (p.type === "BinaryExpression" && p.operator === "+") return true;
  if (p.type === "TemplateLiteral" || p.type === "TaggedTemplateExpression") return true;
  if (p.type === "ArrayExpression") {
    const member = ancestors[i - 1];
    return member?.type === "MemberExpression" && member.property?.name === "join";
  }
  if (p.type === "MemberExpression" && p.object === child && p.property?.name === "concat") return true;
  if (p.type === "CallExpression" && p.arguments.includes(child) && spells(p)) return true;
  return false;
}

/** The findings of one parsed file, as "file:line: what". */
export function sqlFindings(src: SourceFile): string[] {
  const out: string[] = [];
  const found = (line: number, what: string, once = false) => {
    // A `let` grown with `+=` is reported once a line, even where its first piece was already.
    if (once && out.some((f) => f.startsWith(`${src.rel}:${line}: SQL`))) return;
    out.push(`${src.rel}:${line}: SQL (${what}) in a literal: move the statement into a repository of src/db`);
  };
  const grown = new Set<string>();
  for (const ref of moduleRefs(src)) {
    if (ref.specifier !== null && DRIVERS.test(ref.specifier)) out.push(`${src.rel}:${ref.line}: imports ${ref.specifier}: database access belongs in src/db`);
  }
  const consts = textBindings(src);
  // Each branch of a conditional is read in a pass of its own: `(n ? "select count(*)" : "select id") + " from t"`.
  const test = (n: Node, once = false) => {
    for (const branch of ["consequent", "alternate"] as const) {
      const pieces = staticText(n, src, consts, 0, branch);
      const joined = pieces && joinPieces(pieces);
      const sql = joined && sqlIn(joined.text);
      if (joined && sql) return found(joined.lineOf(sql.index), sql.what, once);
    }
  };
  walk(src.program, (n, ancestors) => {
    if (n.type === "MemberExpression") {
      const name = n.computed ? (bare(n.property).type === "Literal" ? bare(n.property).value : null) : n.property.name;
      if (RAW.has(name)) out.push(`${src.rel}:${src.lineAt(n.property.start)}: ${name}: raw SQL through Prisma belongs in src/db`);
    }
    // A module's name is no statement.
    if (n.type === "ImportDeclaration" || n.type === "ExportAllDeclaration" || n.type === "ImportExpression") return "skip";
    if (n.type === "ExportNamedDeclaration" && n.source) return "skip";
    if (spells(n) && !partOfLarger(n, ancestors)) test(n);
    // A `let` grown with `+=` is read whole where it is grown.
    if (n.type === "AssignmentExpression" && n.operator === "+=" && n.left.type === "Identifier" && consts.has(n.left.name) && !grown.has(n.left.name)) {
      grown.add(n.left.name);
      test({ type: "Identifier", name: n.left.name, start: n.left.start, end: n.left.end }, true);
    }
    return undefined;
  });
  return out;
}

/** The findings of one file's text (as test/unit/sql-in-db.test.ts probes it), relative to this repository. */
export function findSql(file: string, text: string): string[] {
  return sqlFindings(parseText(checkRoot(), file, text));
}

/** The findings of src/ and jobs/ of `root`, outside EXEMPT. */
export function checkSql(root: string, files: readonly SourceFile[] = parseTree(root)): string[] {
  return files.filter((f) => !EXEMPT.some((d) => f.rel.startsWith(`${d}/`))).flatMap(sqlFindings);
}

export const sqlCheck: Check = {
  run: (root, files) => ({ findings: checkSql(root, files) }),
  failed: (n) => `${n} place(s) outside src/db talk to the database directly`,
  passed: "sql: every statement and database driver is in src/db",
};

runAsMain(import.meta, sqlCheck, checkRoot());
