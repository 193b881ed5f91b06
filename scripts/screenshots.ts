// `npm run screenshots`: refreshes the dashboard's pictures in docs/img (light, dark, 360 px, the lightbox)
// from the browser tests' archive — a simulator synced into a scratch database. Not run in CI.
//   npm run screenshots [-- --out docs/img]
// Needs PostgreSQL and Redis as the tests do, and Debian's chromium (apt-get install -y chromium) or CHROMIUM=/path.
import { spawnSync } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { out: { type: "string", default: "docs/img" } } });
const run = spawnSync("npx", ["vitest", "run", "--config", "vitest.screenshots.config.ts"], {
  stdio: "inherit",
  env: { ...process.env, DVAULT_SCREENSHOTS_DIR: path.resolve(values.out ?? "docs/img") },
});
process.exit(run.status ?? 1);
