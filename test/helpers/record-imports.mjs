// Records every module URL this process resolves into the file DVAULT_RECORD_IMPORTS names, one a line
// (test/unit/cli-startup.test.ts: which packages a command loads). Used as `node --import <this file>`;
// plain JavaScript because the hooks thread runs it before any TypeScript loader.
import { appendFileSync } from "node:fs";
import { register } from "node:module";
import { isMainThread } from "node:worker_threads";

// The same file is the hooks module: the main thread registers it, the hooks thread runs the hooks below.
if (isMainThread) {
  if (!process.env.DVAULT_RECORD_IMPORTS) throw new Error("record-imports.mjs: set DVAULT_RECORD_IMPORTS to a file path");
  register(new URL(import.meta.url), { data: process.env.DVAULT_RECORD_IMPORTS });
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
