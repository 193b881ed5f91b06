// Part of scripts/build.js: bundles the packages that dist/ loads as hundreds of small modules each (kysely 263,
// bullmq with its helpers about 250, zod 95, got's and sanitize-html's trees) into a few files under
// dist/vendor/, and points dist/'s imports of them there. Node spends most of a command's start-up resolving,
// reading and linking modules (docs/PERFORMANCE.md#start-up), and Node 20 keeps no compile cache, so one file
// for a package's 263 costs a tenth of the time. The sources (tsx, vitest) still import node_modules.
//
// What keeps one instance of each package in a process:
// - every vendored package is an entry of the same build, so what two of them share is one chunk;
// - a package dvault itself depends on (package.json) stays external in that build, so a vendored package and
//   dvault's own code import the same copy from node_modules (ioredis: a connection dvault makes is handed to
//   bullmq; pg; cron-parser);
// - each vendored entry re-exports exactly the names Node gives the package's own import, so dist/ sees the
//   interface it was compiled against.
// One exception, new with the bundle: the dashboard's @bull-board/api requires bullmq from node_modules itself, so a
// worker serving /queues holds that copy beside the bundled one (before, both imports reached bullmq's one CommonJS
// build). bull-board's adapter takes dvault's queues by the version they report ("bullmq:…") where `instanceof`
// fails, and only calls their methods; test/newcomer/demo.test.ts reads the board's API from a worker run from dist/.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

/** The packages bundled into dist/vendor/, by what they cost a start-up. */
export const VENDORED = ["kysely", "zod", "got", "bullmq", "sanitize-html"];

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** `export { a, b, default } from "<name>"` for exactly the names Node's own import of the package gives. */
async function entryOf(name) {
  const namespace = await import(name);
  const names = Object.keys(namespace).filter((n) => IDENTIFIER.test(n));
  return `export { ${names.join(", ")} } from ${JSON.stringify(name)};\n`;
}

let parseModule;

/** oxc-parser's parseSync, loaded once; throws where it cannot load (vendorPackages then leaves dist/ as it is). */
function parser() {
  parseModule ??= createRequire(import.meta.url)("oxc-parser").parseSync;
  return parseModule;
}

/** Where `source` names a module (import, export … from, import("…") with a literal), read as code by oxc-parser. */
function specifiersOf(source, file) {
  const { module } = parser()(file, source);
  const spans = [
    ...module.staticImports.map((i) => i.moduleRequest),
    ...module.staticExports.flatMap((e) => e.entries.flatMap((entry) => entry.moduleRequest ?? [])),
    ...module.dynamicImports.map((d) => d.moduleRequest),
  ];
  const bySpan = new Map();
  for (const { start, end } of spans) {
    const quote = source[start];
    if ((quote === '"' || quote === "'") && source[end - 1] === quote) bySpan.set(start, { start, end, quote, spec: source.slice(start + 1, end - 1) });
  }
  return [...bySpan.values()].sort((a, b) => b.start - a.start);
}

/**
 * Points the specifiers of a vendored package in one file at dist/vendor/: those of imports, `export … from` and
 * `import("…")`. A comment or a string that only reads like an import is left as it is.
 */
export function pointAtVendor(source, file, vendorDir) {
  let out = source;
  for (const { start, end, quote, spec } of specifiersOf(source, file)) {
    const pkg = VENDORED.find((name) => spec === name || spec.startsWith(`${name}/`));
    if (pkg === undefined) continue;
    // A subpath would load a second copy of the package from node_modules beside the bundled one.
    if (spec !== pkg)
      throw new Error(
        `${file} imports "${spec}": dist/vendor/ bundles only "${pkg}" itself; import from "${pkg}", or remove it from VENDORED in scripts/vendor.js`,
      );
    let rel = path
      .relative(path.dirname(file), path.join(vendorDir, `${spec}.js`))
      .split(path.sep)
      .join("/");
    if (!rel.startsWith(".")) rel = `./${rel}`;
    out = `${out.slice(0, start)}${quote}${rel}${quote}${out.slice(end)}`;
  }
  return out;
}

/** What vendorPackages answers when this machine cannot bundle: the error's first line is the reason the build prints. */
function notVendored(err) {
  return { vendored: false, reason: (err instanceof Error ? err.message : String(err)).split("\n")[0] };
}

function jsFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...jsFiles(p));
    else if (entry.name.endsWith(".js")) out.push(p);
  }
  return out;
}

/**
 * Builds dist/vendor/ and points dist/src and dist/jobs at it: `{ vendored: true }`. When esbuild or oxc-parser cannot be
 * loaded, or esbuild cannot bundle (its platform binary left out, as `npm ci --omit=optional` does, or a bundling
 * error; test/unit/cli-startup.test.ts expects a real build to bundle), `{ vendored: false, reason }`, and dist/ is
 * left importing node_modules as tsc wrote it: slower to start, the same program. A subpath import of a vendored package
 * throws, before anything is written: that is a change to make in the code, not a machine's limit.
 */
export async function vendorPackages(root, dist, { loadEsbuild = () => import("esbuild") } = {}) {
  const vendorDir = path.join(dist, "vendor");
  try {
    parser();
  } catch (err) {
    return notVendored(err);
  }
  // Every file is read and rewritten in memory first: a subpath found halfway must not leave half of dist/ on the
  // bundle and half on node_modules, nor a failed bundle any file pointing at it.
  const changed = [];
  for (const dir of ["src", "jobs"]) {
    for (const file of jsFiles(path.join(dist, dir))) {
      const before = readFileSync(file, "utf8");
      const after = pointAtVendor(before, file, vendorDir);
      if (after !== before) changed.push([file, after]);
    }
  }
  const entries = path.join(dist, ".vendor-entries");
  try {
    const esbuild = await loadEsbuild();
    const entryPoints = {};
    mkdirSync(entries, { recursive: true });
    for (const name of VENDORED) {
      const file = path.join(entries, `${name}.js`);
      writeFileSync(file, await entryOf(name));
      entryPoints[name] = file;
    }
    const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
    const external = Object.keys(pkg.dependencies ?? {}).filter((d) => !VENDORED.includes(d));
    await esbuild.build({
      entryPoints,
      outdir: vendorDir,
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      external: [...external, ...external.map((d) => `${d}/*`)],
      // CommonJS bundled into ESM (sanitize-html's parsers, bullmq's semver) calls require() for Node's own modules.
      banner: { js: 'import { createRequire as __dvaultRequire } from "node:module"; const require = __dvaultRequire(import.meta.url);' },
      chunkNames: "chunks/[name]-[hash]",
      absWorkingDir: root,
      logLevel: "silent",
      legalComments: "inline",
      // A bundle's one scope renames what two modules both declare (bullmq's Queue becomes Queue2): keep each
      // function's and class's own name, which bullmq's errors take as theirs (UnrecoverableError's name, the first
      // line of a failed job's stack trace) and logs print (src/redact.ts).
      keepNames: true,
      // Not minified: a stack frame in a bundled package names a line under its `// node_modules/<package>/…`
      // marker, not column 25 000 of one line, and minifying saved no measurable start-up.
    });
  } catch (err) {
    rmSync(vendorDir, { recursive: true, force: true });
    return notVendored(err);
  } finally {
    rmSync(entries, { recursive: true, force: true });
  }
  for (const [file, text] of changed) writeFileSync(file, text);
  return { vendored: true };
}
