// Records every module URL this process resolves into the file DVAULT_RECORD_IMPORTS names, one a line
// (test/unit/cli-startup.test.ts: which packages a command loads). Used as `node --import <this file>`;
// plain JavaScript because the hooks thread runs it before any TypeScript loader.
import { appendFileSync } from "node:fs";
import { createRequire, register } from "node:module";
import { pathToFileURL } from "node:url";
import { isMainThread } from "node:worker_threads";

// The same file is the hooks module: the main thread registers it, the hooks thread runs the hooks below.
if (isMainThread) {
  if (!process.env.DVAULT_RECORD_IMPORTS) throw new Error("record-imports.mjs: set DVAULT_RECORD_IMPORTS to a file path");
  const file = process.env.DVAULT_RECORD_IMPORTS;
  register(new URL(import.meta.url), { data: file });
  // CommonJS loaded by require() (createRequire included) passes no ESM hook: add the require cache at exit.
  const cache = createRequire(import.meta.url).cache;
  process.on("exit", () =>
    appendFileSync(
      file,
      Object.keys(cache)
        .map((p) => `${pathToFileURL(p).href}\n`)
        .join(""),
    ),
  );
}

let out;
export function initialize(file) {
  out = file;
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  appendFileSync(out, `${result.url}\n`);
  return result;
}
