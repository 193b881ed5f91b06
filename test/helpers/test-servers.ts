// The servers a test run uses (test/helpers/global-setup.ts), so that `npm test` works on a machine with Node alone
// (issue #31). A server named by DVAULT_TEST_DATABASE_URL or DVAULT_TEST_REDIS_URL is used as it is, and one that
// does not answer fails the run (its word holds). At the defaults (test/helpers/env.ts): PostgreSQL not answering
// gives an embedded server in a temporary data folder, stopped and removed at the run's end; Redis not answering gives
// DVAULT_TEST_ENGINE=postgres, and the tests about Redis itself skip (test/helpers/redis.ts, describeNeedingRedis).
// What is chosen reaches the test workers through the environment: vitest starts them after the global setup, with
// its process.env.
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { attachEmbedded } from "../../src/db/embedded/attach.ts";
import { stopEmbedded } from "../../src/db/embedded/status.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { postgresAnswers } from "../../src/db/server-answers.ts";
import { ServiceUnavailableError } from "../../src/errors.ts";
import { checkRedis } from "../../src/queue/redis.ts";
import { maskUrl } from "../../src/redact.ts";

/** Set in the workers' environment when the run has no Redis: the tests about Redis itself skip. */
export const NO_REDIS_ENV = "DVAULT_TEST_NO_REDIS";

type Env = Record<string, string | undefined>;

export type TestServers = { line: string; stop(): void };

/** The embedded server of this run, in a folder of its own under the system's temporary folder. */
async function embeddedForRun(): Promise<{ url: string; folder: string; stop(): void }> {
  // Mode 755: run as root, the server's own user must enter it (src/db/embedded/layout.ts).
  const root = mkdtempSync(path.join(os.tmpdir(), "dvault-test-postgres-"));
  chmodSync(root, 0o755);
  const dataDir = path.join(root, "data");
  const server = await attachEmbedded({ dataDir });
  return {
    url: withDatabase(server.url, "postgres"),
    folder: server.folder,
    stop() {
      server.release();
      stopEmbedded({ dataDir, force: true });
      rmSync(root, { recursive: true, force: true });
    },
  };
}

async function redisAnswers(url: string): Promise<boolean> {
  try {
    await checkRedis(url);
    return true;
  } catch (err) {
    if (err instanceof ServiceUnavailableError) return false;
    throw err;
  }
}

/**
 * Settles the run's servers and writes the choice into `env` (the process's, which the workers inherit):
 * DVAULT_TEST_DATABASE_URL for an embedded server, DVAULT_TEST_ENGINE and DVAULT_TEST_NO_REDIS without Redis.
 */
export async function settleTestServers(env: Env, defaults: { pg: string; redis: string }): Promise<TestServers> {
  const pgNamed = (env.DVAULT_TEST_DATABASE_URL ?? "") !== "";
  const redisNamed = (env.DVAULT_TEST_REDIS_URL ?? "") !== "";
  const redisUrl = redisNamed ? (env.DVAULT_TEST_REDIS_URL as string) : defaults.redis;
  if (redisNamed) await checkRedis(redisUrl);
  const redis = redisNamed || (await redisAnswers(redisUrl));
  if (!redis) {
    env.DVAULT_TEST_ENGINE = "postgres";
    env[NO_REDIS_ENV] = "1";
  }
  const engine = env.DVAULT_TEST_ENGINE === "postgres" ? "PostgreSQL alone (DVAULT_TEST_ENGINE=postgres)" : "Redis (DVAULT_TEST_ENGINE=redis)";
  const redisSays = redis
    ? `Redis at ${maskUrl(redisUrl)}; dvault's engine: ${engine}`
    : `no Redis answers at ${maskUrl(redisUrl)}: dvault's engine is PostgreSQL alone (DVAULT_TEST_ENGINE=postgres) and the tests about Redis itself are skipped`;
  const pgUrl = pgNamed ? (env.DVAULT_TEST_DATABASE_URL as string) : defaults.pg;
  if (pgNamed || (await postgresAnswers(pgUrl))) return { line: `test servers: PostgreSQL at ${maskUrl(pgUrl)}; ${redisSays}`, stop: () => undefined };
  const embedded = await embeddedForRun();
  env.DVAULT_TEST_DATABASE_URL = embedded.url;
  return {
    line: `test servers: PostgreSQL on an embedded server of this run, in ${embedded.folder} (none answers at ${maskUrl(pgUrl)}; stopped and removed at the end); ${redisSays}`,
    stop: embedded.stop,
  };
}
