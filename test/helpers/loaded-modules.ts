// What a child process loaded, as test/helpers/record-imports.mjs records it: run the child with
// `--import <RECORD_IMPORTS>` and DVAULT_RECORD_IMPORTS=<file>, then read the file back here.
import { readFileSync } from "node:fs";
import path from "node:path";

export const RECORD_IMPORTS = path.resolve(import.meta.dirname, "record-imports.mjs");

/** Packages that a command making no API call, serving no page and sending no mail has no use for. */
export const HEAVY_PACKAGES = ["got", "express", "@bull-board/api", "@bull-board/express", "nodemailer", "sql.js", "sharp", "pino-pretty", "prom-client"];

/** The TypeScript loader that runs the sources (bin/dvault.js without a current dist/), not dvault's own load. */
const LOADER_PACKAGES = new Set(["tsx", "esbuild", "get-tsconfig", "resolve-pkg-maps"]);

/** A package's name where a record shows it loaded: from node_modules, or bundled into dist/vendor/ (scripts/vendor.js). */
function packageOf(url: string): string | undefined {
  return /\/dist\/vendor\/([^/]+)\.js$/.exec(url)?.[1] ?? /\/node_modules\/((?:@[^/]+\/)?[^/.][^/]*)\//.exec(url)?.[1];
}

/**
 * The packages (by their node_modules name, the loader's left out; one bundled into dist/vendor/ by its name there) and
 * the repository's src/ files (src/… or dist/src/… alike) in a record.
 */
export function readLoaded(file: string): { packages: Set<string>; sources: Set<string> } {
  const urls = readFileSync(file, "utf8").split("\n").filter(Boolean);
  const names = urls.flatMap((u) => packageOf(u) ?? []);
  const packages = new Set(names.filter((name) => !LOADER_PACKAGES.has(name)));
  const sources = new Set(urls.flatMap((u) => /\/(src\/[^?]+)$/.exec(u)?.[1] ?? []));
  return { packages, sources };
}
