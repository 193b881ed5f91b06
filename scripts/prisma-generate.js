// postinstall: generates the Prisma client without touching the network. `prisma generate` falls back
// to downloading a query engine when DATABASE_URL is unset, so give it the app's default URL.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
if (!existsSync(new URL("../prisma/schema", import.meta.url))) process.exit(0);

const env = { ...process.env };
env.DATABASE_URL ||= "postgresql://postgres@127.0.0.1:5432/dvault";
env.PRISMA_HIDE_UPDATE_MESSAGE = "1";
env.CHECKPOINT_DISABLE = "1";

const prismaCli = require.resolve("prisma/build/index.js");
const result = spawnSync(process.execPath, [prismaCli, "generate"], {
  cwd: new URL("..", import.meta.url),
  env,
  stdio: "inherit",
});
process.exit(result.status ?? 1);
