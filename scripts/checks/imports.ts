// `npm run check:imports`: every module that a file of src/ or jobs/ names, read from the parsed code
// (scripts/checks/parse.ts: import and export … from, import(), require, `import x = require`, `typeof
// import`), against the layer rules of docs/ARCHITECTURE.md, and the packages only one folder may import.
// An import() or require() whose module is not a plain string (a template, a variable) cannot be held to
// the rules and is itself a finding. A package's home folder may not hand its values on (re-exported under any
// name, then taken by a file outside the folder); its types may. One line per finding; exit 1 when there is any.
import path from "node:path";
import { type Check, literalString, moduleRefs, type Node, packageOf, parseTree, resolveSpecifier, runAsMain, type SourceFile } from "./parse.ts";
import { checkRoot } from "./source-files.ts";

/**
 * What each area may import besides itself (docs/ARCHITECTURE.md#what-each-folder-may-import). An area
 * is a folder of src/ (or a file directly in src/, by its name), or jobs. "base" stands for the areas
 * every layer may use.
 */
const BASE = [
  "errors",
  "log",
  "redact",
  "version",
  "config",
  "config-defaults",
  "secret-key",
  "free-port",
  "crypto",
  "text",
  "timestamps",
  "coord",
  "redis-scan",
  "foreign-file",
  "make-dirs",
  "write-atomically",
];
const RULES: Record<string, readonly string[]> = {
  // The foundation: nothing of dvault's own above it.
  errors: [],
  version: [],
  "config-defaults": [],
  redact: [],
  config: ["config-defaults", "errors"],
  // The pretty lines of a terminal escape controls with text's helper.
  log: ["config", "redact", "text"],
  "secret-key": ["config", "errors", "make-dirs"],
  "free-port": [],
  // The install's key as the checks read it (src/crypto/install-key.ts) names the settings' folders.
  crypto: ["config", "errors", "secret-key"],
  // src/text: HTML escaping and the escape-by-default template, HTML to text, byte sizes, visible controls.
  text: [],
  // The coordination seam (docs/ARCHITECTURE.md#the-coordination-seam): its PostgreSQL driver runs src/db's statements.
  coord: ["redis-scan", "db"],
  "redis-scan": [],
  timestamps: [],
  // Files of folders dvault does not own, opened as regular files only, bounded (src/foreign-file.ts).
  "foreign-file": ["text"],
  // Folders made at a path a person gave, one at a time (src/make-dirs.ts).
  "make-dirs": [],
  // A small file written to a temporary name, fsynced and renamed (src/write-atomically.ts).
  "write-atomically": [],
  // The service, the database, the disk and the queues: each alone on the foundation.
  api: [...BASE],
  // Only src/db reaches the generated Prisma client: every statement goes through a repository.
  db: [...BASE.filter((a) => a !== "coord"), "generated"],
  storage: [...BASE],
  queue: [...BASE],
  // The composition root: builds the clients, pools and connections the layers above share.
  services: [...BASE, "api", "db", "queue", "storage"],
  // What dvault does with them.
  sync: [...BASE, "api", "db", "queue", "storage", "services"],
  downloads: [...BASE, "api", "db", "queue", "storage", "services"],
  import: [...BASE, "api", "db", "queue", "storage", "services", "downloads"],
  digest: [...BASE, "db", "queue", "services", "storage"],
  status: [...BASE, "api", "db", "queue", "services"],
  search: [...BASE, "db"],
  backup: [...BASE, "db", "storage"],
  // A work added by its URL is stored as a sync stores it (src/track-lists/add-one.ts).
  "track-lists": [...BASE, "api", "db", "sync"],
  metrics: [...BASE, "api", "db", "queue", "status", "services"],
  // The install's move between engines (src/engine/move.ts), and what a worker installs in the queues at start.
  engine: [...BASE, "api", "db", "queue", "services", "sync", "downloads", "digest"],
  // Entrances: the job handlers, the dashboard, the worker process, the CLI and the demo.
  jobs: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "import", "status"],
  http: [...BASE, "api", "db", "queue", "storage", "services", "status", "search", "digest", "metrics", "track-lists"],
  worker: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "jobs", "http", "metrics", "status", "engine"],
  demo: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "jobs", "simulator", "worker", "status"],
  cli: [
    ...BASE,
    ...["api", "db", "queue", "storage", "services", "sync", "downloads", "import", "digest", "status", "search", "backup", "track-lists"],
    ...["metrics", "jobs", "http", "worker", "demo", "simulator", "engine"],
  ],
  // The simulator plays the service: it shares nothing with the code it is a model for.
  simulator: [],
};

/** Packages only one folder may import: the database's driver and builders, and the queue library. */
const PACKAGE_HOMES: Readonly<Record<string, string>> = {
  pg: "db",
  kysely: "db",
  "@prisma/client": "db",
  bullmq: "queue",
};

/**
 * Files of src/ that may compute the module they load (a template, a variable): none today. src/cli/program.ts
 * loads each command with a plain string, so the rules read every one of its imports.
 */
const LOADERS: readonly string[] = [];

const HANDED_ON = "only its types may leave the folder (docs/ARCHITECTURE.md)";

/** A package's value exported again by a file of its home folder: the names it goes by ("*": any). */
type HandedOn = { file: string; area: string; names: ReadonlySet<string> | "*"; at: number; line: string };

/** The names an `export … from` hands on as values ("*" for `export *`). */
function exportedNames(node: Node): ReadonlySet<string> | "*" {
  if (node.type === "ExportAllDeclaration") return "*";
  return new Set((node.specifiers ?? []).filter((s: Node) => s.exportKind !== "type").map((s: Node) => s.exported.name ?? s.exported.value));
}

/** The name `local` goes by in an `export { local as name }`. */
function exportedAs(stmt: Node, local: string): string {
  const s = (stmt.specifiers ?? []).find((x: Node) => (x.local.name ?? x.local.value) === local);
  return s?.exported.name ?? s?.exported.value ?? local;
}

/** Whether a module reference takes one of `names` (an import or export of them by name; any other way, any). */
function takes(node: Node, names: ReadonlySet<string> | "*"): boolean {
  if (names === "*") return true;
  if (node.type !== "ImportDeclaration" && node.type !== "ExportNamedDeclaration") return true;
  return (node.specifiers ?? []).some((s: Node) => {
    if (s.importKind === "type" || s.exportKind === "type") return false;
    if (s.type === "ImportDefaultSpecifier") return names.has("default");
    if (s.type === "ImportNamespaceSpecifier") return true;
    const taken = s.type === "ImportSpecifier" ? s.imported : s.local;
    return names.has(taken.name ?? taken.value);
  });
}

/**
 * Names a file of a package's home folder imports of that package's values and exports again (`import { Queue }
 * from "bullmq"; export { Queue as JobQueue }`, `export default Queue`): the package handed on under another name.
 */
function handedOn(src: SourceFile, area: string): HandedOn[] {
  const values = new Map<string, string>();
  for (const stmt of src.program.body) {
    if (stmt.type !== "ImportDeclaration" || stmt.importKind === "type") continue;
    const spec = literalString(stmt.source);
    if (spec === null || resolveSpecifier(src.file, spec) !== null || PACKAGE_HOMES[packageOf(spec)] !== area) continue;
    for (const s of stmt.specifiers ?? []) if (s.importKind !== "type") values.set(s.local.name, packageOf(spec));
  }
  const out: HandedOn[] = [];
  for (const stmt of src.program.body) {
    const names: Array<{ name: string; at: number }> = [];
    if (stmt.type === "ExportNamedDeclaration" && !stmt.source && stmt.exportKind !== "type")
      for (const s of stmt.specifiers ?? []) if (s.exportKind !== "type") names.push({ name: s.local.name ?? s.local.value, at: s.start });
    if (stmt.type === "ExportDefaultDeclaration" && stmt.declaration?.type === "Identifier") names.push({ name: stmt.declaration.name, at: stmt.start });
    for (const { name, at } of names) {
      const pkg = values.get(name);
      if (pkg)
        out.push({
          file: src.file,
          area,
          names: new Set([stmt.type === "ExportDefaultDeclaration" ? "default" : exportedAs(stmt, name)]),
          at,
          line: `${src.rel}:${src.lineAt(at)}: exports ${pkg}'s ${name} out of src/${area}; ${HANDED_ON}`,
        });
    }
  }
  return out;
}

function areaOf(root: string, file: string): string {
  const rel = path.relative(root, file).split(path.sep);
  if (rel[0] === "jobs") return "jobs";
  if (rel.length === 2) return (rel[1] ?? "").replace(/\.[mc]?[jt]s$/, "");
  return rel[1] ?? "";
}

/** The findings of the parsed files of `root` (default: src/ and jobs/ parsed afresh), and notes that do not fail. */
export function checkImports(root: string, files: readonly SourceFile[] = parseTree(root)): { findings: string[]; notes: string[] } {
  const findings: string[] = [];
  const handed: HandedOn[] = [];
  const unknown = new Set<string>();
  const inTree = (target: string) => target.startsWith(path.join(root, "src") + path.sep) || target.startsWith(path.join(root, "jobs") + path.sep);
  for (const src of files) {
    const from = areaOf(root, src.file);
    const allowed = RULES[from];
    if (!allowed) {
      unknown.add(from);
      continue;
    }
    handed.push(...handedOn(src, from));
    for (const ref of moduleRefs(src)) {
      const where = `${src.rel}:${ref.line}`;
      if (ref.computed && ref.kind !== "import" && ref.kind !== "export" && !LOADERS.includes(src.rel)) {
        const what = ref.specifier === null ? "a module it computes" : `a template (\`${ref.specifier}\`)`;
        findings.push(
          `${where}: ${ref.kind === "dynamic" ? "import()" : "require()"} of ${what}: name the module with a plain string so the layer rules can read it`,
        );
      }
      const spec = ref.specifier;
      if (spec === null) continue;
      const target = resolveSpecifier(src.file, spec);
      if (target === null) {
        const pkg = packageOf(spec);
        const home = PACKAGE_HOMES[pkg];
        if (home === undefined) continue;
        if (from === home) {
          // Its home folder may use it, not hand its values on to the rest of src/ under any name.
          if (ref.kind === "export" && !ref.typeOnly)
            handed.push({
              file: src.file,
              area: home,
              names: exportedNames(ref.node),
              at: ref.node.start,
              line: `${where}: re-exports ${pkg}'s values out of src/${home}; ${HANDED_ON}`,
            });
          continue;
        }
        findings.push(`${where}: only src/${home} may import ${pkg} (${from} does); see docs/ARCHITECTURE.md`);
        continue;
      }
      if (!inTree(target)) continue;
      const to = areaOf(root, target);
      if (to === from || allowed.includes(to)) continue;
      findings.push(`${where}: ${from} may not import ${to} (${spec}); see docs/ARCHITECTURE.md`);
    }
  }
  // A re-export is a finding when a file outside the folder takes a value it hands on.
  for (const h of handed.toSorted((a, b) => a.file.localeCompare(b.file) || a.at - b.at)) {
    const taken = files.some(
      (f) =>
        areaOf(root, f.file) !== h.area &&
        moduleRefs(f).some((r) => !r.typeOnly && r.specifier !== null && resolveSpecifier(f.file, r.specifier) === h.file && takes(r.node, h.names)),
    );
    if (taken) findings.push(h.line);
  }
  for (const area of unknown) findings.push(`src/${area}: an area docs/ARCHITECTURE.md does not name; add it to scripts/checks/imports.ts and the document`);
  return { findings, notes: [] };
}

export const importsCheck: Check = {
  run: checkImports,
  failed: (n) => `${n} import(s) across the layer rules`,
  passed: "imports: every import keeps to the layer rules",
};

runAsMain(import.meta, importsCheck, checkRoot());
