// What the checks of scripts/checks read: each TypeScript source of a tree parsed once with oxc-parser (which
// parses the TypeScript 7 syntax this repository is written in), and what every check asks of a parsed file:
// its walk, the modules it names (import, export … from, import(), require (and any name createRequire's result
// is bound to, and module.require), `import x = require`, `typeof import`), the text a string, template or
// concatenation spells, and lines. A check reads code, not text: a comment or a regular expression that looks
// like an import or a statement is neither.
import fs from "node:fs";
import path from "node:path";
import { parseSync } from "oxc-parser";
import { sourceFiles } from "./source-files.ts";

// oxc's ESTree nodes, read structurally: every node has a type and UTF-16 offsets.
// biome-ignore lint/suspicious/noExplicitAny: the checks read many node shapes; each looks only at the fields it names
export type Node = { type: string; start: number; end: number; [key: string]: any };

export type SourceFile = {
  /** Absolute path. */
  file: string;
  /** Path from the checked root, with "/" separators (as findings print it). */
  rel: string;
  text: string;
  program: Node;
  /** The line (1-based) of a UTF-16 offset. */
  lineAt(offset: number): number;
  /** Lines as an editor counts them: a last line without a final newline counts. */
  lines: number;
};

const cache = new Map<string, SourceFile>();

/** One file parsed (once per process: every check of a run shares the tree). */
export function parseFile(root: string, file: string): SourceFile {
  const hit = cache.get(file);
  if (hit && hit.rel === toRel(root, file)) return hit;
  const parsed = parseText(root, file, fs.readFileSync(file, "utf8"));
  cache.set(file, parsed);
  return parsed;
}

/** Source text parsed as the file `file` of `root` (not read from disk, not kept). */
export function parseText(root: string, file: string, text: string): SourceFile {
  const lang = /\.[mc]?js$/.test(file) ? "js" : "ts";
  const { program, errors } = parseSync(file, text, { lang, sourceType: "module" });
  const fatal = errors.filter((e) => e.severity === "Error");
  if (fatal.length > 0) throw new Error(`${file}: oxc-parser cannot read it: ${fatal[0]?.message}`);
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  const lineAt = (offset: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? 0) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const lines = text.length === 0 ? 0 : starts.length - (text.endsWith("\n") ? 1 : 0);
  return { file, rel: toRel(root, file), text, program: program as unknown as Node, lineAt, lines };
}

function toRel(root: string, file: string): string {
  return path.relative(root, file).split(path.sep).join("/");
}

/** The parsed sources of the given folders of `root` (default src/ and jobs/), generated code and node_modules aside. */
export function parseTree(root: string, dirs: readonly string[] = ["src", "jobs"], skip: readonly string[] = []): SourceFile[] {
  const skipped = skip.map((d) => path.join(root, d));
  return dirs.flatMap((d) => sourceFiles(path.join(root, d), skipped)).map((f) => parseFile(root, f));
}

function isNode(v: unknown): v is Node {
  return typeof v === "object" && v !== null && typeof (v as Node).type === "string";
}

/** Visits every node below `node`, depth first, with the chain of its ancestors (nearest last). */
export function walk(node: Node, visit: (node: Node, ancestors: readonly Node[]) => unknown): void {
  const ancestors: Node[] = [];
  const go = (n: Node): void => {
    if (visit(n, ancestors) === "skip") return;
    ancestors.push(n);
    for (const key in n) {
      if (key === "parent") continue;
      const v = n[key];
      if (Array.isArray(v)) {
        for (const c of v) if (isNode(c)) go(c);
      } else if (isNode(v)) go(v);
    }
    ancestors.pop();
  };
  go(node);
}

/** A module a file names, however it names it. */
export type ModuleRef = {
  /** The specifier, when the code spells it statically (a string, or a template without substitutions). */
  specifier: string | null;
  kind: "import" | "export" | "dynamic" | "require" | "import-equals" | "type-import";
  /** Only types cross (`import type`, `export type … from`, `typeof import(…)`, or every name imported is `type`). */
  typeOnly: boolean;
  /** The argument of import()/require() is not a plain string literal (a template, a variable, an expression). */
  computed: boolean;
  line: number;
  node: Node;
};

/** Unwraps parentheses, `as`, `satisfies` and `!`. */
export function bare(node: Node): Node {
  let n = node;
  while (
    n.type === "ParenthesizedExpression" ||
    n.type === "TSAsExpression" ||
    n.type === "TSSatisfiesExpression" ||
    n.type === "TSNonNullExpression" ||
    n.type === "TSTypeAssertion"
  )
    n = n.expression;
  return n;
}

/** The value of a string literal or a template literal without substitutions, else null. */
export function literalString(node: Node | null | undefined): string | null {
  if (!node) return null;
  const n = bare(node);
  if (n.type === "Literal" && typeof n.value === "string") return n.value;
  if (n.type === "TemplateLiteral" && n.expressions.length === 0) return n.quasis[0]?.value.cooked ?? null;
  return null;
}

/**
 * The names a file binds to a require: `require` itself, and any name bound to createRequire(…)'s result
 * (`const req = createRequire(import.meta.url)`), createRequire imported under any name or read off node:module.
 */
function requireNames(src: SourceFile): { isCreateRequire(callee: Node): boolean; requires: Set<string> } {
  const creators = new Set(["createRequire"]);
  const modules = new Set<string>();
  walk(src.program, (n) => {
    if (n.type !== "ImportDeclaration" || !/^(node:)?module$/.test(literalString(n.source) ?? "")) return;
    for (const s of n.specifiers ?? []) {
      if (s.type === "ImportSpecifier" && (s.imported.name ?? s.imported.value) === "createRequire") creators.add(s.local.name);
      if (s.type === "ImportDefaultSpecifier" || s.type === "ImportNamespaceSpecifier") modules.add(s.local.name);
    }
  });
  const isCreateRequire = (callee: Node): boolean => {
    const c = bare(callee);
    if (c.type === "Identifier") return creators.has(c.name);
    if (c.type !== "MemberExpression") return false;
    const name = c.computed ? literalString(c.property) : c.property.name;
    return name === "createRequire";
  };
  const requires = new Set(["require"]);
  walk(src.program, (n) => {
    if (n.type !== "VariableDeclarator" && n.type !== "AssignmentExpression") return;
    const id = n.type === "VariableDeclarator" ? n.id : n.left;
    const init = n.type === "VariableDeclarator" ? n.init : n.right;
    if (id?.type !== "Identifier" || !init) return;
    const v = bare(init);
    if ((v.type === "CallExpression" && isCreateRequire(v.callee)) || (v.type === "Identifier" && requires.has(v.name))) requires.add(id.name);
  });
  return { isCreateRequire, requires };
}

function isRequireCallee(callee: Node, names: ReturnType<typeof requireNames>): boolean {
  const c = bare(callee);
  if (c.type === "Identifier") return names.requires.has(c.name);
  // createRequire(import.meta.url)("x")
  if (c.type === "CallExpression") return names.isCreateRequire(c.callee);
  // module.require("x"), req.require("x")
  if (c.type === "MemberExpression" && !c.computed && c.property.name === "require") {
    const o = bare(c.object);
    return o.type === "Identifier" && (o.name === "module" || names.requires.has(o.name));
  }
  return false;
}

/** Every module the file names, in source order. */
export function moduleRefs(src: SourceFile): ModuleRef[] {
  const out: ModuleRef[] = [];
  const requires = requireNames(src);
  const add = (node: Node, arg: Node | null, kind: ModuleRef["kind"], typeOnly: boolean): void => {
    const specifier = literalString(arg);
    const computed = !arg || bare(arg).type !== "Literal";
    out.push({ specifier, kind, typeOnly, computed, line: src.lineAt(node.start), node });
  };
  walk(src.program, (n) => {
    switch (n.type) {
      case "ImportDeclaration": {
        const specs: Node[] = n.specifiers ?? [];
        const typeOnly = n.importKind === "type" || (specs.length > 0 && specs.every((s) => s.importKind === "type"));
        add(n, n.source, "import", typeOnly);
        break;
      }
      case "ExportAllDeclaration":
      case "ExportNamedDeclaration":
        if (n.source) {
          const specs: Node[] = n.specifiers ?? [];
          const typeOnly = n.exportKind === "type" || (specs.length > 0 && specs.every((s) => s.exportKind === "type"));
          add(n, n.source, "export", typeOnly);
        }
        break;
      case "ImportExpression":
        add(n, n.source, "dynamic", false);
        break;
      case "CallExpression":
        if (isRequireCallee(n.callee, requires)) add(n, n.arguments[0] ?? null, "require", false);
        break;
      case "TSImportEqualsDeclaration":
        if (n.moduleReference?.type === "TSExternalModuleReference") add(n, n.moduleReference.expression, "import-equals", n.importKind === "type");
        break;
      case "TSImportType": {
        const arg = n.source ?? n.argument;
        add(n, arg?.type === "TSLiteralType" ? arg.literal : arg, "type-import", true);
        break;
      }
    }
  });
  return out;
}

/** The file a relative specifier names (".js" written for ".ts" too, a folder's index), or null for a package. */
export function resolveSpecifier(fromFile: string, specifier: string): string | null {
  if (!specifier.startsWith("./") && !specifier.startsWith("../") && specifier !== "." && specifier !== "..") return null;
  const target = path.resolve(path.dirname(fromFile), specifier);
  const candidates = [
    target,
    target.replace(/\.[mc]?js$/, ".ts"),
    `${target}.ts`,
    `${target}.js`,
    path.join(target, "index.ts"),
    path.join(target, "index.js"),
  ];
  return candidates.find((c) => fs.existsSync(c) && fs.statSync(c).isFile()) ?? target;
}

/** The package a bare specifier names: "@prisma/client/runtime" → "@prisma/client", "node:fs" → "node:fs". */
export function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

/** A piece of spelled-out text with the line its first character stands on. */
export type TextPiece = { text: string; line: number; multiline: boolean };

/** Which branch of a conditional (`c ? a : b`) staticText reads: each is read in a pass of its own. */
export type Branch = "consequent" | "alternate";

/**
 * What a string expression spells, as far as the code says it: a string, a template (its substitutions spelled
 * where they are static, else "?"), a `+` concatenation, `[…].join(sep)` (the array written there or a const
 * bound to it), `"…".concat(…)`, the `branch` of a conditional, and names of consts this file binds to such text.
 * Null when nothing of it is static text.
 */
export function staticText(
  node: Node,
  src: SourceFile,
  consts: ReadonlyMap<string, Node> = new Map(),
  depth = 0,
  branch: Branch = "consequent",
): TextPiece[] | null {
  if (depth > 20) return null;
  const n = bare(node);
  const read = (e: Node, names = consts) => staticText(e, src, names, depth + 1, branch);
  const sub = (e: Node): TextPiece[] => read(e) ?? [{ text: "?", line: src.lineAt(e.start), multiline: false }];
  switch (n.type) {
    case "Literal":
      return typeof n.value === "string" ? [{ text: n.value, line: src.lineAt(n.start), multiline: false }] : null;
    case "TemplateLiteral": {
      const out: TextPiece[] = [];
      n.quasis.forEach((q: Node, i: number) => {
        out.push({ text: q.value.raw, line: src.lineAt(q.start), multiline: true });
        const e = n.expressions[i];
        if (e) out.push(...sub(e));
      });
      return out;
    }
    case "TaggedTemplateExpression":
      return read(n.quasi);
    case "ConditionalExpression":
      return read(n[branch]);
    case "BinaryExpression": {
      if (n.operator !== "+") return null;
      const l = read(n.left);
      const r = read(n.right);
      if (!l && !r) return null;
      return [...(l ?? sub(n.left)), ...(r ?? sub(n.right))];
    }
    case "Identifier": {
      const bound = consts.get(n.name);
      return bound && bound !== n ? read(bound, new Map([...consts].filter(([k]) => k !== n.name))) : null;
    }
    case "CallExpression": {
      const callee = bare(n.callee);
      if (callee.type !== "MemberExpression" || callee.computed) return null;
      const method = callee.property.name;
      const object = arrayOf(callee.object, consts);
      if (method === "join" && object) {
        const sep = n.arguments[0] ? (literalString(n.arguments[0]) ?? "?") : ",";
        const parts = object.elements.filter(Boolean).map((e: Node) => sub(e));
        if (parts.every((p: TextPiece[]) => p.length === 1 && p[0]?.text === "?")) return null;
        return parts.flatMap((p: TextPiece[], i: number) => (i === 0 ? p : [{ text: sep, line: p[0]?.line ?? 0, multiline: false }, ...p]));
      }
      if (method === "concat") {
        const head = read(callee.object);
        if (!head) return null;
        return [...head, ...n.arguments.flatMap((a: Node) => sub(a))];
      }
      return null;
    }
    default:
      return null;
  }
}

/** The array literal an expression is: written there, or a const bound to one. */
function arrayOf(node: Node, consts: ReadonlyMap<string, Node>): Node | null {
  const n = bare(node);
  if (n.type === "ArrayExpression") return n;
  const bound = n.type === "Identifier" ? consts.get(n.name) : undefined;
  return bound?.type === "ArrayExpression" ? bound : null;
}

/**
 * The names this file binds to text once: `const X = "…"` (or a template, a concatenation, a conditional, an
 * array of text), with every `X += …` that follows folded in. Read by staticText, so a statement spelled across names is still read whole.
 */
export function textBindings(src: SourceFile): Map<string, Node> {
  const out = new Map<string, Node>();
  const spellsText = (e: Node) => staticText(e, src, out, 0, "consequent") ?? staticText(e, src, out, 0, "alternate");
  walk(src.program, (n) => {
    if (n.type === "VariableDeclarator" && n.id.type === "Identifier" && n.init) {
      const init = bare(n.init);
      if (["Literal", "TemplateLiteral", "BinaryExpression", "CallExpression", "ConditionalExpression"].includes(init.type) && spellsText(init))
        out.set(n.id.name, init);
      // An array of text, joined where it is used: `const parts = ["SELECT id", "FROM t"]; parts.join(" ")`.
      else if (init.type === "ArrayExpression" && init.elements.some((e: Node | null) => e && spellsText(e))) out.set(n.id.name, init);
    }
    if (n.type === "AssignmentExpression" && n.left.type === "Identifier") {
      const before = out.get(n.left.name);
      if (n.operator === "+=" && before) {
        out.set(n.left.name, { type: "BinaryExpression", operator: "+", left: before, right: n.right, start: before.start, end: n.end });
      } else if (n.operator === "=" && spellsText(n.right)) out.set(n.left.name, n.right);
    }
  });
  return out;
}

/** The joined text of pieces, and the line of an offset into it. */
export function joinPieces(pieces: readonly TextPiece[]): { text: string; lineOf(offset: number): number } {
  const text = pieces.map((p) => p.text).join("");
  return {
    text,
    lineOf(offset: number): number {
      let at = 0;
      for (const p of pieces) {
        if (offset < at + p.text.length) return p.line + (p.multiline ? (p.text.slice(0, offset - at).match(/\n/g)?.length ?? 0) : 0);
        at += p.text.length;
      }
      return pieces[pieces.length - 1]?.line ?? 0;
    },
  };
}

/** The source text of a node. */
export function sourceOf(src: SourceFile, node: Node): string {
  return src.text.slice(node.start, node.end);
}

/** A check of this folder that reads parsed code: what it finds, and the line it ends with. */
export type Check = {
  run(root: string, files?: readonly SourceFile[]): { findings: string[]; notes?: string[] };
  /** The closing line when it found `n` things. */
  failed(n: number): string;
  /** The closing line when it found nothing. */
  passed: string;
};

/** Runs checks over one parse of `root`'s files, printing each as it prints alone; whether all passed. */
export function runChecks(checks: readonly Check[], root: string, files?: readonly SourceFile[]): boolean {
  let ok = true;
  for (const check of checks) {
    const { findings, notes = [] } = check.run(root, files);
    for (const line of [...findings, ...notes]) process.stdout.write(`${line}\n`);
    process.stdout.write(`${findings.length > 0 ? check.failed(findings.length) : check.passed}\n`);
    ok &&= findings.length === 0;
  }
  return ok;
}

/** Runs one check as the program, on the repository its first argument names (else this one); exit 1 when it fails. */
export function runAsMain(meta: ImportMeta, check: Check, root: string): void {
  if (isMain(meta) && !runChecks([check], root)) process.exit(1);
}

/** Whether the module `meta` belongs to is the program being run (a check run from the command line, not imported). */
export function isMain(meta: ImportMeta): boolean {
  return Boolean(process.argv[1]) && path.resolve(process.argv[1] ?? "") === meta.filename;
}
