// Which servers `dvault demo` (= npm run demo) runs on, so that the README's first command works on a machine with
// Node alone (docs/ARCHITECTURE.md#the-embedded-postgresql-server). What is configured is used as it is: a set
// DATABASE_URL, REDIS_URL or DVAULT_ENGINE holds, and a configured server that is down stays an error (the first
// connection says so, src/db/connect.ts), never a reason to run elsewhere. Only what is unset falls back: the default
// PostgreSQL (src/config-defaults.ts) not answering gives an embedded server of the demo's own, its data in the demo's
// folder (nothing there can be taken for an install's); the default Redis not answering gives PostgreSQL alone
// (DVAULT_ENGINE=postgres). The choice is said in one line.
import path from "node:path";
import type { Config } from "../config.ts";
import { attachEmbedded } from "../db/embedded/attach.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { postgresAnswers } from "../db/server-answers.ts";
import { checkRedis, redisAnswers } from "../queue/redis.ts";
import { maskUrl } from "../redact.ts";

/** The demo's own embedded server keeps its data (DVAULT_DATA_DIR) here, in the demo's folder; a new run keeps it. */
export const DEMO_SERVER_DIR = "server";

export type DemoServers = Readonly<{
  /** The config with a real DATABASE_URL and the engine the demo runs on. */
  config: Config;
  /** The DVAULT_DATA_DIR of the demo's own embedded server, when it runs on one: its database is the server's `dvault`. */
  ownServer: string | undefined;
  /** The one line saying which servers it chose and why. */
  line: string;
  release(): void;
}>;

type Env = Record<string, string | undefined>;

const isSet = (env: Env, name: string) => (env[name] ?? "") !== "";

/** The engine: as configured (a configured Redis that is down is said at once, exit 3), else Redis when the default answers, else PostgreSQL alone. */
async function chooseEngine(config: Config, env: Env): Promise<{ engine: Config["engine"]; says: string }> {
  if (config.engine === "postgres") return { engine: "postgres", says: "PostgreSQL alone (DVAULT_ENGINE=postgres)" };
  if (isSet(env, "DVAULT_ENGINE") || isSet(env, "REDIS_URL")) {
    await checkRedis(config.redisUrl);
    return { engine: "redis", says: `Redis at ${maskUrl(config.redisUrl)}` };
  }
  if (await redisAnswers(config.redisUrl)) return { engine: "redis", says: `Redis at ${maskUrl(config.redisUrl)}` };
  return { engine: "postgres", says: `PostgreSQL alone (DVAULT_ENGINE=postgres: no Redis answers at the default ${maskUrl(config.redisUrl)})` };
}

/**
 * The demo's servers, given the settings as the command read them (`env`: the environment with the settings file
 * layered in) and the demo's folder. Release when the demo is done: the demo's own server stops then.
 */
export async function demoServers(config: Config, env: Env, dir: string): Promise<DemoServers> {
  const { engine, says } = await chooseEngine(config, env);
  const queues = `queues, locks and the pace on ${says}`;
  const withEngine = (c: Config): Config => Object.freeze({ ...c, engine });
  if (isSet(env, "DATABASE_URL") || (await postgresAnswers(config.databaseUrl))) {
    // A configured server (or DATABASE_URL=embedded, the install's own embedded server), or the default that answers.
    const resolved = await resolveDatabase(config, { migrate: false, create: true });
    const where = config.databaseUrl === "embedded" ? "the embedded server (DATABASE_URL=embedded)" : maskUrl(resolved.config.databaseUrl);
    return { config: withEngine(resolved.config), ownServer: undefined, line: `servers: PostgreSQL at ${where}; ${queues}`, release: resolved.release };
  }
  const dataDir = path.join(path.resolve(dir), DEMO_SERVER_DIR);
  const server = await attachEmbedded({ dataDir });
  return {
    config: withEngine(Object.freeze({ ...config, databaseUrl: server.url, dataDir })),
    ownServer: dataDir,
    line: `servers: PostgreSQL on an embedded server of the demo's own, its data in ${dataDir} (none answers at the default ${maskUrl(config.databaseUrl)}); ${queues}`,
    release: () => server.release(),
  };
}
