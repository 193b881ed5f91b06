// postinstall: generates the Prisma client and the query types of src/db (prisma-kysely: src/generated/kysely,
// see docs/ARCHITECTURE.md#db) without touching the network. `prisma generate` falls back to downloading a
// query engine when DATABASE_URL is unset, so give it the app's default URL.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
if (!existsSync(new URL("../prisma/schema", import.meta.url))) process.exit(0);

const env = { ...process.env };
env.DATABASE_URL ||= "postgresql://postgres@127.0.0.1:5432/dvault";
env.PRISMA_HIDE_UPDATE_MESSAGE = "1";
env.CHECKPOINT_DISABLE = "1";
// The kysely generator's provider is the prisma-kysely command: npm puts node_modules/.bin on PATH for
// postinstall, not for `node scripts/prisma-generate.js` run by hand.
env.PATH = [path.join(path.dirname(require.resolve("prisma-kysely/package.json")), "..", ".bin"), env.PATH].filter(Boolean).join(path.delimiter);

const prismaCli = require.resolve("prisma/build/index.js");
const result = spawnSync(process.execPath, [prismaCli, "generate"], {
  cwd: new URL("..", import.meta.url),
  env,
  stdio: "inherit",
});
process.exit(result.status ?? 1);
