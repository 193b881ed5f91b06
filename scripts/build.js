// `npm run build`, and postinstall after the Prisma client: compiles src/ and jobs/ to dist/ with tsc
// --noCheck (transpiling only, a few seconds; `npm run typecheck` is the type check) and stamps dist/.built.
// bin/dvault.js runs dist/ while that stamp is newer than every source file, and the sources through tsx
// otherwise. Without TypeScript (npm ci --omit=dev) there is no dist/ and the sources run through tsx.
import { spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const root = path.resolve(import.meta.dirname, "..");
const dist = path.join(root, "dist");
if (!existsSync(path.join(root, "src/cli/main.ts"))) process.exit(0); // a partial copy (the Docker image's install stage)

let tsc;
try {
  tsc = path.join(path.dirname(require.resolve("typescript/package.json")), "bin/tsc");
} catch {
  process.stdout.write("dvault: TypeScript is not installed, so no dist/: bin/dvault.js runs the sources through tsx\n");
  process.exit(0);
}
// From scratch, so a file removed from src/ leaves nothing behind in dist/.
rmSync(dist, { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--noCheck"], { cwd: root, stdio: "inherit" });
if (result.status !== 0) {
  rmSync(dist, { recursive: true, force: true });
  process.stderr.write("dvault: the build to dist/ failed; bin/dvault.js runs the sources through tsx\n");
  process.exit(result.status ?? 1);
}
writeFileSync(path.join(dist, ".built"), `${new Date().toISOString()}\n`);
