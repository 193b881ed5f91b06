// `npm run build`, and postinstall after the Prisma client: compiles src/ and jobs/ to dist/ with tsc
// --noCheck (transpiling only, a few seconds; `npm run typecheck` is the type check), copies the files that
// are not TypeScript (the dashboard's assets, read next to the module that serves them), bundles the packages
// that cost a start-up most into dist/vendor/ (scripts/vendor.js), and stamps dist/.built. bin/dvault.js runs
// dist/ while that stamp is newer than every file of src/ and jobs/ and, with dist/vendor/, than the last npm
// install (bin/dist-current.js), and the sources through tsx otherwise. Without TypeScript (npm ci --omit=dev)
// there is no dist/ and the sources run through tsx.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { vendorPackages } from "./vendor.js";

/** Copies every file of `from` that is not TypeScript to the same place under `to`; returns their paths relative to `from`. */
export function copyAssets(from, to) {
  const copied = [];
  const walk = (rel) => {
    for (const entry of readdirSync(path.join(from, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(child);
      else if (!entry.name.endsWith(".ts")) {
        mkdirSync(path.dirname(path.join(to, child)), { recursive: true });
        copyFileSync(path.join(from, child), path.join(to, child));
        copied.push(child);
      }
    }
  };
  walk("");
  return copied;
}

async function build(root) {
  const dist = path.join(root, "dist");
  if (!existsSync(path.join(root, "src/cli/main.ts"))) return 0; // a partial copy (the Docker image's install stage)
  let tsc;
  try {
    tsc = path.join(path.dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin/tsc");
  } catch {
    process.stdout.write("dvault: TypeScript is not installed, so no dist/: bin/dvault.js runs the sources through tsx\n");
    return 0;
  }
  // From scratch, so a file removed from src/ leaves nothing behind in dist/.
  rmSync(dist, { recursive: true, force: true });
  const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--noCheck"], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) {
    rmSync(dist, { recursive: true, force: true });
    process.stderr.write("dvault: the build to dist/ failed; bin/dvault.js runs the sources through tsx\n");
    return result.status ?? 1;
  }
  for (const dir of ["src", "jobs"]) copyAssets(path.join(root, dir), path.join(dist, dir));
  let vendor;
  try {
    vendor = await vendorPackages(root, dist);
  } catch (err) {
    rmSync(dist, { recursive: true, force: true });
    process.stderr.write(`dvault: the build to dist/ failed: ${err instanceof Error ? err.message : err}; bin/dvault.js runs the sources through tsx\n`);
    return 1;
  }
  if (!vendor.vendored) {
    process.stdout.write(`dvault: no dist/vendor/ (${vendor.reason}): dist/ loads its packages from node_modules, a slower start\n`);
  }
  writeFileSync(path.join(dist, ".built"), `${new Date().toISOString()}\n`);
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exit(await build(path.resolve(import.meta.dirname, "..")));
