// dvault's version and package root, from the package.json above this file: the same code runs from src/ (tsx)
// and from dist/src/ (npm run build), at different depths.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function findPackageJson(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "package.json");
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, "utf8")) as { name?: string }).name === "dvault") return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`dvault's package.json was not found above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

const packageJson = findPackageJson();

/** The directory holding package.json, prisma/ and scripts/. */
export const PACKAGE_ROOT = path.dirname(packageJson);

export const VERSION = (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
