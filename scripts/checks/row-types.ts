// `npm run check:rows`: no hand-written row type in src/db (docs/ARCHITECTURE.md#db). The tables are described
// once, in prisma/schema/, and every query's rows are typed from the Kysely types generated from it
// (src/generated/kysely/types.ts, with the columns the generator leaves out added in src/db/schema.ts).
//
// How it knows, from the parsed code (scripts/checks/parse.ts):
// - the columns of every table are read from the generated types (each `DB` member names a type whose
//   properties are the table's columns);
// - a hand-written row type is an object type (a type literal, an interface, a type argument) in src/db in
//   which at least two properties are columns of one table and at least half of them columns of any tables (a
//   join's rows, padded with computed values), each typed by hand (a keyword such as `string`, a literal, a union
//   of those, `Date`, an array of them) instead of taken from the schema (`Row<"t">["c"]`, `Pick<Row<"t">, …>`,
//   an enum the generator made); names are compared lower-cased without underscores (`lastError` is last_error);
// - a row type is what a statement's result is said to be: the T of `sql<T>`, of a driver call (`q.query<T>(…)`,
//   `execute<T>`) or of an `as T` assertion onto a statement's result (not onto a jsonb field of a row): a call,
//   an await, a `.rows`, a name `rows`, or a name bound from one of those (`const { rows: r } = await …`),
//   followed through the aliases and interfaces T names;
// - a driver call given the type of its rows by hand (`q.query<T>(…)`) is one too, whatever T is: the typed
//   path is Kysely's, whose builder infers the rows and whose `sql<T>` tag this check reads.
// - a statement whose rows go untyped is named too: `sql<any>`/`sql<unknown>` that is not a column or a fragment
//   (`.as("c")`, a substitution into another statement), and an untyped `sql` executed in a function whose
//   declared return type is a hand-written row type.
// Files that describe something other than rows are listed in NOT_ROWS, each with what it describes.
import fs from "node:fs";
import path from "node:path";
import { bare, type Check, type Node, parseFile, parseText, parseTree, runAsMain, type SourceFile, walk } from "./parse.ts";
import { checkRoot } from "./source-files.ts";

/** Files of src/db whose object types are not rows of a query, with what they are instead. */
export const NOT_ROWS: Readonly<Record<string, string>> = {
  "src/db/queue-jobs.repository.ts": "BullMQ's own tables in their schema (src/queue/backend.ts), described by BullMQ's migrations, not prisma/schema",
  "src/db/mirror-input.ts": "the service's answers as the repositories take them (fields named as the API names them)",
  "src/db/schema.ts": "the schema itself: the generated types and the columns the generator leaves out",
};

const GENERATED = "src/generated/kysely/types.ts";

/** Table → its columns, read from the generated types. */
export function tableColumns(generated: SourceFile): Map<string, Set<string>> {
  const types = new Map<string, Node>();
  let db: Node | null = null;
  for (const stmt of generated.program.body as Node[]) {
    const decl = stmt.type === "ExportNamedDeclaration" ? stmt.declaration : stmt;
    if (decl?.type !== "TSTypeAliasDeclaration" && decl?.type !== "TSInterfaceDeclaration") continue;
    const body = decl.type === "TSInterfaceDeclaration" ? decl.body : decl.typeAnnotation;
    if (decl.id.name === "DB") db = body;
    else types.set(decl.id.name, body);
  }
  const tables = new Map<string, Set<string>>();
  for (const member of members(db)) {
    const ref = member.typeAnnotation?.typeAnnotation;
    const typeName = ref?.type === "TSTypeReference" ? ref.typeName?.name : null;
    const table = propertyName(member);
    if (!table || !typeName) continue;
    tables.set(
      table,
      new Set(
        members(types.get(typeName) ?? null)
          .map(propertyName)
          .filter((n): n is string => n !== null),
      ),
    );
  }
  return tables;
}

function members(body: Node | null | undefined): Node[] {
  if (!body) return [];
  if (body.type === "TSTypeLiteral") return body.members ?? [];
  if (body.type === "TSInterfaceBody") return body.body ?? [];
  return [];
}

function propertyName(member: Node): string | null {
  if (member.type !== "TSPropertySignature") return null;
  const key = member.key;
  if (key?.type === "Identifier") return key.name;
  if (key?.type === "Literal" && typeof key.value === "string") return key.value;
  return null;
}

const HAND_KEYWORDS = new Set([
  "TSStringKeyword",
  "TSNumberKeyword",
  "TSBooleanKeyword",
  "TSBigIntKeyword",
  "TSNullKeyword",
  "TSUndefinedKeyword",
  "TSUnknownKeyword",
  "TSAnyKeyword",
  "TSLiteralType",
]);

/** A type spelled out by hand: keywords, literals, Date, and unions or arrays of them. */
function writtenByHand(type: Node | null | undefined): boolean {
  if (!type) return true;
  if (HAND_KEYWORDS.has(type.type)) return true;
  if (type.type === "TSUnionType") return (type.types as Node[]).every(writtenByHand);
  if (type.type === "TSArrayType") return writtenByHand(type.elementType);
  if (type.type === "TSTypeReference") return type.typeName?.type === "Identifier" && ["Date", "Record"].includes(type.typeName.name);
  return false;
}

/** A name as a column is compared: lower case, underscores removed (`lastError`, `LAST_ERROR` and `last_error` are one). */
function normalised(name: string): string {
  return name.toLowerCase().replaceAll("_", "");
}

/** The tables a property re-declares a column of by hand (by its normalised name), or none. */
function handColumnOf(p: Node, tables: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const name = propertyName(p);
  if (name === null || !writtenByHand(p.typeAnnotation?.typeAnnotation)) return [];
  const key = normalised(name);
  return [...tables].filter(([, columns]) => [...columns].some((c) => normalised(c) === key)).map(([table]) => table);
}

/**
 * Whether an object type re-declares rows by hand: at least two of its properties are hand-typed columns of one
 * table, and at least half of them are hand-typed columns of any tables (a join's rows, padded with computed
 * values). What it re-declares, table by table (each column under the table most of them come from), else null.
 */
function rowOf(body: Node, tables: ReadonlyMap<string, ReadonlySet<string>>): { table: string; what: string } | null {
  const props = members(body).filter((m) => m.type === "TSPropertySignature");
  if (props.length < 2) return null;
  const hand = props.map((p) => ({ name: propertyName(p) ?? "", tables: handColumnOf(p, tables) })).filter((h) => h.tables.length > 0);
  const count = new Map<string, number>();
  for (const h of hand) for (const t of h.tables) count.set(t, (count.get(t) ?? 0) + 1);
  const most = Math.max(0, ...count.values());
  if (most < 2 || hand.length * 2 < props.length) return null;
  // Each column goes under the table that holds most of the type's columns among those it could be of.
  const byTable = new Map<string, string[]>();
  for (const h of hand) {
    const table = h.tables.reduce((a, b) => ((count.get(b) ?? 0) > (count.get(a) ?? 0) ? b : a));
    byTable.set(table, [...(byTable.get(table) ?? []), h.name]);
  }
  const groups = [...byTable].sort((a, b) => b[1].length - a[1].length);
  return { table: groups[0]?.[0] ?? "", what: groups.map(([table, columns]) => `${columns.join(", ")} of ${table}`).join("; ") };
}

/** Every object type (type literal or interface) named by a type alias or interface, by name, over the files given. */
export function typeDeclarations(files: readonly SourceFile[]): Map<string, { body: Node; src: SourceFile }> {
  const decls = new Map<string, { body: Node; src: SourceFile }>();
  for (const src of files)
    walk(src.program, (n) => {
      if (n.type === "TSTypeAliasDeclaration") decls.set(n.id.name, { body: n.typeAnnotation, src });
      else if (n.type === "TSInterfaceDeclaration") decls.set(n.id.name, { body: n.body, src });
    });
  return decls;
}

type Decls = ReadonlyMap<string, { body: Node; src: SourceFile }>;

/** The object types a result type is made of: its literals and those of the aliases it names, followed through. */
function objectTypes(type: Node, src: SourceFile, decls: Decls, seen = new Set<string>()): Array<{ body: Node; src: SourceFile }> {
  const out: Array<{ body: Node; src: SourceFile }> = [];
  walk(type, (n) => {
    // `Entry["kind"]` is the type of one member: only that member is followed, not the rest of Entry.
    const member = memberOf(n, decls);
    if (member) {
      out.push(...objectTypes(member.type, member.src, decls, seen));
      return "skip";
    }
    if (n.type === "TSTypeLiteral" || n.type === "TSInterfaceBody") out.push({ body: n, src });
    else if (n.type === "TSTypeReference" && n.typeName?.type === "Identifier") {
      const name: string = n.typeName.name;
      const decl = decls.get(name);
      if (decl && !seen.has(name)) {
        seen.add(name);
        out.push(...objectTypes(decl.body, decl.src, decls, seen));
      }
    }
  });
  return out;
}

/** The member `T["k"]` names, when T is an object type declared in src/db and k a literal; else null. */
function memberOf(n: Node, decls: Decls): { type: Node; src: SourceFile } | null {
  if (n.type !== "TSIndexedAccessType" || n.objectType?.type !== "TSTypeReference" || n.objectType.typeName?.type !== "Identifier") return null;
  const key = n.indexType?.type === "TSLiteralType" ? n.indexType.literal?.value : undefined;
  const decl = decls.get(n.objectType.typeName.name);
  if (typeof key !== "string" || !decl) return null;
  const prop = members(decl.body).find((m) => propertyName(m) === key);
  const type = prop?.typeAnnotation?.typeAnnotation;
  return type ? { type, src: decl.src } : null;
}

/** A driver's or executor's methods that take the rows' type as a type argument. */
const DRIVER_CALLS = new Set(["query", "execute", "executeQuery", "$queryRaw", "$queryRawUnsafe"]);

/**
 * Whether an asserted value can be a statement's rows: an awaited or called result, a `.rows`, anything named
 * `rows`, or a name bound from a statement's result (`bound`: `const r = await …`, `const { rows: found } = …`).
 * A field of a row (a jsonb value read apart, `r.gaps as …`) is the service's JSON, which the schema types as
 * unknown, not rows.
 */
function fromStatement(expression: Node, bound: ReadonlySet<string> = new Set()): boolean {
  const e = bare(expression);
  if (e.type === "AwaitExpression" || e.type === "CallExpression") return true;
  if (e.type === "Identifier") return e.name === "rows" || bound.has(e.name);
  return e.type === "MemberExpression" && !e.computed && e.property?.name === "rows";
}

/** The names a file binds from a statement's result: each name a declaration's pattern binds, when what it is given is one. */
function boundFromStatements(src: SourceFile): Set<string> {
  const bound = new Set<string>();
  walk(src.program, (n) => {
    if (n.type !== "VariableDeclarator" || !n.init || !fromStatement(n.init)) return;
    walk(n.id, (p, ancestors) => {
      // In `{ rows: found = [] }` the names bound are the pattern's values, not its keys or defaults.
      const parent = ancestors[ancestors.length - 1];
      if (parent?.type === "Property" && parent.key === p && !parent.shorthand) return;
      if (parent?.type === "AssignmentPattern" && parent.right === p) return "skip";
      if (p.type === "Identifier") bound.add(p.name);
    });
  });
  return bound;
}

/** Whether a call is `sql<T>` (Kysely's tag, called or as a tag) or a driver's `q.query<T>(…)`. */
function resultTypeOf(n: Node): { kind: "sql" | "query"; type: Node } | null {
  const args = n.typeArguments?.params as Node[] | undefined;
  if (!args?.[0]) return null;
  const callee = n.type === "TaggedTemplateExpression" ? n.tag : n.type === "CallExpression" ? n.callee : null;
  if (!callee) return null;
  if (callee.type === "Identifier" && callee.name === "sql") return { kind: "sql", type: args[0] };
  if (n.type === "CallExpression" && callee.type === "MemberExpression" && DRIVER_CALLS.has(callee.property?.name)) return { kind: "query", type: args[0] };
  return null;
}

/** The hand-written row types and hand-typed driver calls of one file (`decls`: the type declarations of src/db). */
export function rowTypesIn(src: SourceFile, tables: ReadonlyMap<string, ReadonlySet<string>>, decls: Decls = typeDeclarations([src])): string[] {
  const found = new Set<string>();
  const bound = boundFromStatements(src);
  walk(src.program, (n) => {
    if (n.type === "TSAsExpression" || n.type === "TSSatisfiesExpression") {
      if (!fromStatement(n.expression, bound)) return;
      for (const { body, src: at } of objectTypes(n.typeAnnotation, src, decls)) {
        const row = rowOf(body, tables);
        if (row) found.add(`${at.rel}:${at.lineAt(body.start)}: a hand-written row type (${row.what}) asserted onto a value: take the rows from the schema`);
      }
      return;
    }
    const result = resultTypeOf(n);
    if (!result) return;
    if (result.kind === "query")
      found.add(
        `${src.rel}:${src.lineAt(n.start)}: a driver call given its rows' type by hand (query<…>): build it with kysely(q) so the rows come from the schema`,
      );
    for (const { body, src: at } of objectTypes(result.type, src, decls)) {
      const row = rowOf(body, tables);
      if (row)
        found.add(
          `${at.rel}:${at.lineAt(body.start)}: a hand-written row type (${row.what}): take it from the schema, Row<"${row.table}"> or Kysely's inferred rows`,
        );
    }
  });
  for (const f of untypedStatements(src, tables, decls)) found.add(f);
  return [...found];
}

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

/** Whether a type says nothing of the rows: `any`, `unknown`, an array or a Record of them. */
function saysNothing(type: Node): boolean {
  if (type.type === "TSAnyKeyword" || type.type === "TSUnknownKeyword") return true;
  if (type.type === "TSArrayType") return saysNothing(type.elementType);
  const args = type.typeArguments?.params as Node[] | undefined;
  if (type.type === "TSTypeReference" && type.typeName?.name === "Record" && args?.[1]) return saysNothing(args[1]);
  return false;
}

/** The node an expression is read by, past parentheses and type assertions, and the child it is reached through. */
function reader(ancestors: readonly Node[], n: Node): { parent: Node | undefined; child: Node } {
  let i = ancestors.length - 1;
  let child = n;
  while (i >= 0 && bare(ancestors[i] as Node) !== ancestors[i]) child = ancestors[i--] as Node;
  return { parent: ancestors[i], child };
}

/**
 * Statements whose rows go untyped: `sql<any>` or `sql<unknown>` (not a column or a fragment: `sql<unknown>\`d.raw -> 'x'\`.as("x")`,
 * a substitution into another statement), and an untyped `sql\`…\`.execute(…)` in a function whose declared
 * return type is a hand-written row type (the rows then reach it typed by nothing but that declaration).
 */
function untypedStatements(src: SourceFile, tables: ReadonlyMap<string, ReadonlySet<string>>, decls: Decls): string[] {
  const out: string[] = [];
  walk(src.program, (n, ancestors) => {
    const callee = n.type === "TaggedTemplateExpression" ? n.tag : n.type === "CallExpression" ? n.callee : null;
    if (callee?.type !== "Identifier" || callee.name !== "sql") return;
    const { parent, child } = reader(ancestors, n);
    const fragment = (parent?.type === "MemberExpression" && parent.object === child && parent.property?.name === "as") || parent?.type === "TemplateLiteral";
    const arg = (n.typeArguments?.params as Node[] | undefined)?.[0];
    if (arg && saysNothing(arg) && !fragment)
      out.push(`${src.rel}:${src.lineAt(n.start)}: an untyped result (sql<${src.text.slice(arg.start, arg.end)}>): type the rows from the schema`);
    const executed = parent?.type === "MemberExpression" && parent.object === child && parent.property?.name === "execute";
    if (arg || !executed) return;
    const fn = [...ancestors].reverse().find((a) => FUNCTIONS.has(a.type));
    const returns = fn?.returnType?.typeAnnotation;
    if (!returns) return;
    for (const { body, src: at } of objectTypes(returns, src, decls)) {
      const row = rowOf(body, tables);
      if (row)
        out.push(
          `${at.rel}:${at.lineAt(body.start)}: a hand-written row type (${row.what}) returned from an untyped statement (line ${src.lineAt(n.start)}): type it with sql<…> from the schema`,
        );
    }
  });
  return out;
}

export const rowTypesCheck: Check = {
  run(root, files) {
    const generatedPath = path.join(root, GENERATED);
    if (!fs.existsSync(generatedPath)) return { findings: [`${GENERATED}: missing: run \`node scripts/prisma-generate.js\` (npm ci runs it)`] };
    const tables = tableColumns(parseFile(root, generatedPath));
    const inDb = (files ?? parseTree(root, ["src/db"])).filter((f) => f.rel.startsWith("src/db/") && !(f.rel in NOT_ROWS));
    const decls = typeDeclarations(inDb);
    return { findings: inDb.flatMap((src) => rowTypesIn(src, tables, decls)) };
  },
  failed: (n) => `rows: ${n} hand-written row type(s) in src/db: type the query from src/db/schema.ts (docs/ARCHITECTURE.md#db)`,
  passed: "rows: every query in src/db is typed from the generated schema",
};

/** For tests: the findings of `text` as the file `rel` of a root whose generated types are `generated`. */
export function rowTypesOfText(rel: string, text: string, generated: string): string[] {
  const tables = tableColumns(parseText("/r", `/r/${GENERATED}`, generated));
  return rowTypesIn(parseText("/r", `/r/${rel}`, text), tables);
}

runAsMain(import.meta, rowTypesCheck, checkRoot());
