// `npm run check:imports`: every relative import of src/ and jobs/ against the layer rules of
// docs/ARCHITECTURE.md. One line per import that crosses them; exit 1 when there is any.
import fs from "node:fs";
import path from "node:path";
import { checkRoot, checkedFiles } from "./source-files.ts";

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
  "redis-lock",
  "redis-scan",
  "foreign-file",
  "make-dirs",
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
  crypto: ["errors", "secret-key"],
  // src/text: HTML escaping and the escape-by-default template, HTML to text, byte sizes, visible controls.
  text: [],
  "redis-lock": [],
  "redis-scan": [],
  timestamps: [],
  // Files of folders dvault does not own, opened as regular files only, bounded (src/foreign-file.ts).
  "foreign-file": ["text"],
  // Folders made at a path a person gave, one at a time (src/make-dirs.ts).
  "make-dirs": [],
  // The service, the database, the disk and the queues: each alone on the foundation.
  api: [...BASE],
  // Only src/db reaches the generated Prisma client: every statement goes through a repository.
  db: [...BASE, "generated"],
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
  // Entrances: the job handlers, the dashboard, the worker process, the CLI and the demo.
  jobs: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "import", "status"],
  http: [...BASE, "api", "db", "queue", "storage", "services", "status", "search", "digest", "metrics", "track-lists"],
  worker: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "jobs", "http", "metrics", "status"],
  demo: [...BASE, "api", "db", "queue", "storage", "services", "sync", "downloads", "digest", "jobs", "simulator", "worker", "status"],
  cli: [
    ...BASE,
    ...["api", "db", "queue", "storage", "services", "sync", "downloads", "import", "digest", "status", "search", "backup", "track-lists"],
    ...["metrics", "jobs", "http", "worker", "demo", "simulator"],
  ],
  // The simulator plays the service: it shares nothing with the code it is a model for.
  simulator: [],
};

const ROOT = checkRoot();

function areaOf(file: string): string {
  const rel = path.relative(ROOT, file).split(path.sep);
  if (rel[0] === "jobs") return "jobs";
  if (rel.length === 2) return (rel[1] ?? "").replace(/\.ts$/, "");
  return rel[1] ?? "";
}

const IMPORT =
  /^\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|^\s*import\s*["'](\.{1,2}\/[^"']+)["']|\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/gm;

const violations: string[] = [];
const unknown = new Set<string>();
for (const file of checkedFiles(ROOT)) {
  const from = areaOf(file);
  const allowed = RULES[from];
  if (!allowed) {
    unknown.add(from);
    continue;
  }
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3] ?? "";
    const target = path.resolve(path.dirname(file), spec);
    if (!target.startsWith(path.join(ROOT, "src")) && !target.startsWith(path.join(ROOT, "jobs"))) continue;
    const to = areaOf(target);
    if (to === from || allowed.includes(to)) continue;
    const line = text.slice(0, m.index).split("\n").length;
    violations.push(`${path.relative(ROOT, file)}:${line}: ${from} may not import ${to} (${spec}); see docs/ARCHITECTURE.md`);
  }
}
for (const area of unknown) violations.push(`src/${area}: an area docs/ARCHITECTURE.md does not name; add it to scripts/checks/imports.ts and the document`);
for (const v of violations) process.stdout.write(`${v}\n`);
if (violations.length > 0) {
  process.stdout.write(`${violations.length} import(s) across the layer rules\n`);
  process.exit(1);
}
process.stdout.write("imports: every import keeps to the layer rules\n");
