// `npm run check:size`: no function of src/ or jobs/ longer than LIMIT lines (docs/ARCHITECTURE.md#file-size),
// read from the parsed code (scripts/checks/parse.ts): every function, method, arrow and getter, from its first
// line to its last. A function longer today is listed in LONGER_TODAY with its length: it may shrink, not grow,
// and a function not listed may not pass the limit. A file over FILE_LINES lines is named as a warning, not a
// failure: a long file is a smell to look at, not a law to split by.
import { type Check, type Node, parseTree, runAsMain, type SourceFile, sourceOf, walk } from "./parse.ts";
import { checkRoot } from "./source-files.ts";

export const LIMIT = 80;
export const FILE_LINES = 400;

/**
 * The functions over LIMIT today (file → qualified name → lines), each to be shortened along its seams; the list
 * may only shrink. A name is the function's own (a method as Class.method), under the names of the functions it
 * stands in (outer/inner); a callback is named by the call it is handed to.
 */
export const LONGER_TODAY: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  "src/api/client/deviation.ts": { DeviationMethods: 150 },
  "src/api/client/gallery.ts": { GalleryMethods: 130 },
  "src/api/client/messages.ts": { MessagesMethods: 113 },
  "src/api/client/user.ts": { UserMethods: 94 },
  "src/api/http.ts": { createHttpTransport: 151 },
  "src/api/http/got-client.ts": { createApiGot: 158 },
  "src/api/oauth/callback-listener.ts": { startCallbackListener: 99 },
  "src/api/pacer.ts": { createPacer: 137 },
  "src/api/paginate.ts": { paginateOffset: 88 },
  "src/cli/auth.ts": { registerAuthCommand: 181 },
  "src/cli/output/progress.ts": { liveView: 96 },
  "src/cli/status.ts": { formatStatus: 162 },
  "src/cli/track.ts": { registerTrackCommand: 108 },
  "src/db/archive-browser.repository.ts": { "ArchiveBrowserRepository.item": 89 },
  "src/demo/run-demo.ts": { runDemo: 154 },
  "src/digest/render-common.ts": { healthLines: 91 },
  "src/digest/render-text.ts": { digestText: 89 },
  "src/digest/run-digest.ts": { runDigest: 95 },
  "src/downloads/download-file.ts": { fetchOriginal: 96 },
  "src/downloads/transfer.ts": { transferToPartial: 138 },
  "src/downloads/verify.ts": { verifyArchive: 106 },
  "src/http/assets/app.js": { "(anonymous)": 272 },
  "src/http/routes/archive.ts": { archiveRoutes: 124 },
  "src/http/routes/connect.ts": { connectRoutes: 125 },
  "src/http/routes/reading.ts": { readingRoutes: 143 },
  "src/import/gallery-dl/adopt.ts": { adoptAll: 131, "adoptAll/adoptOne": 89 },
  "src/import/gallery-dl/import-folder.ts": { resolve: 102 },
  "src/metrics.ts": { createMetrics: 188 },
  "src/simulator/activity.ts": { applyActivity: 124 },
  "src/simulator/control.ts": { handleControl: 132 },
  "src/simulator/server.ts": { startSimulator: 152 },
  "src/sync/run-source.ts": { runSource: 165 },
  "src/worker.ts": { startWorker: 173 },
};

export type FunctionSize = { rel: string; name: string; line: number; lines: number };

const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

function keyName(key: Node | null | undefined, src: SourceFile): string {
  if (!key) return "";
  if (key.type === "Identifier" || key.type === "PrivateIdentifier") return key.type === "PrivateIdentifier" ? `#${key.name}` : key.name;
  if (key.type === "Literal") return String(key.value);
  return `[${sourceOf(src, key)}]`;
}

/** The name of a function from where it stands: its own name, its method's, its variable's, or the call it is handed to. */
function ownName(fn: Node, ancestors: readonly Node[], src: SourceFile): string {
  const parent = ancestors[ancestors.length - 1];
  if (fn.id?.name && fn.type === "FunctionDeclaration") return fn.id.name;
  if (parent?.type === "MethodDefinition" || parent?.type === "PropertyDefinition") {
    const cls = ancestors[ancestors.length - 3];
    const clsName = cls?.id?.name ?? (ancestors[ancestors.length - 4]?.type === "VariableDeclarator" ? ancestors[ancestors.length - 4]?.id?.name : undefined);
    const prefix = parent.kind === "get" ? "get " : parent.kind === "set" ? "set " : "";
    return `${prefix}${clsName ? `${clsName}.` : ""}${keyName(parent.key, src)}`;
  }
  if (parent?.type === "Property") return keyName(parent.key, src);
  if (parent?.type === "VariableDeclarator" && parent.id.type === "Identifier") return parent.id.name;
  if (parent?.type === "AssignmentExpression") return sourceOf(src, parent.left);
  if (fn.id?.name) return fn.id.name;
  if (parent?.type === "CallExpression" || parent?.type === "NewExpression") {
    const callee = sourceOf(src, parent.callee).replace(/\s+/g, "");
    return `${callee.length > 40 ? `${callee.slice(0, 40)}…` : callee}(…)`;
  }
  if (parent?.type === "ExportDefaultDeclaration") return "default";
  return "(anonymous)";
}

/** Every function of a parsed file, with its qualified name and length in lines. */
export function functionSizes(src: SourceFile): FunctionSize[] {
  const out: FunctionSize[] = [];
  const seen = new Map<string, number>();
  const names = new Map<Node, string>();
  walk(src.program, (n, ancestors) => {
    if (!FUNCTIONS.has(n.type) || !n.body) return undefined;
    let outer = "";
    for (let i = ancestors.length - 1; i >= 0; i--) {
      const a = ancestors[i] as Node;
      if (names.has(a)) {
        outer = names.get(a) as string;
        break;
      }
    }
    const own = ownName(n, ancestors, src);
    let name = outer ? `${outer}/${own}` : own;
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    if (count > 1) name = `${name}#${count}`;
    names.set(n, name);
    // A method's or a property's line with its name counts as the function's first.
    const parent = ancestors[ancestors.length - 1];
    const holder = parent && (parent.type === "MethodDefinition" || parent.type === "Property" || parent.type === "PropertyDefinition") ? parent : n;
    const first = src.lineAt(holder.start);
    const last = src.lineAt(Math.max(n.end - 1, n.start));
    out.push({ rel: src.rel, name, line: first, lines: last - first + 1 });
    return undefined;
  });
  return out;
}

/** Failures (functions over the limit, listed ones grown) and warnings (long files, listed ones now shorter). */
export function checkSize(
  root: string,
  files: readonly SourceFile[] = parseTree(root),
  listed: typeof LONGER_TODAY = LONGER_TODAY,
): { findings: string[]; notes: string[] } {
  const findings: string[] = [];
  const notes: string[] = [];
  const found = new Set<string>();
  for (const src of files) {
    if (src.lines > FILE_LINES) notes.push(`warning: ${src.rel}: ${src.lines} lines; a file this long is worth a look for a seam (not a failure)`);
    for (const f of functionSizes(src)) {
      const allowed = listed[f.rel]?.[f.name];
      if (allowed !== undefined) found.add(`${f.rel}\0${f.name}`);
      if (f.lines <= LIMIT) {
        if (allowed !== undefined) notes.push(`note: ${f.rel}: ${f.name} is ${f.lines} lines now: remove it from LONGER_TODAY`);
        continue;
      }
      if (allowed === undefined) findings.push(`${f.rel}:${f.line}: ${f.name} is ${f.lines} lines (the limit is ${LIMIT}): shorten it along a seam`);
      else if (f.lines > allowed)
        findings.push(`${f.rel}:${f.line}: ${f.name} grew to ${f.lines} lines (listed at ${allowed}; the limit is ${LIMIT}): shorten it`);
      else if (f.lines < allowed) notes.push(`note: ${f.rel}: ${f.name} is ${f.lines} lines now (listed at ${allowed}): lower it in LONGER_TODAY`);
    }
  }
  for (const [rel, fns] of Object.entries(listed))
    for (const name of Object.keys(fns)) if (!found.has(`${rel}\0${name}`)) notes.push(`note: ${rel}: ${name} is gone: remove it from LONGER_TODAY`);
  return { findings, notes };
}

export const sizeCheck: Check = {
  run: checkSize,
  failed: (n) => `${n} function(s) over ${LIMIT} lines`,
  passed: `size: every function of src/ and jobs/ is within ${LIMIT} lines or within its listed length`,
};

runAsMain(import.meta, sizeCheck, checkRoot());
