// A second process for the cross-process refresh test: shares the database, the Redis prefix and the
// simulator with the test, waits for "go" on stdin, then runs N concurrent callers and prints the result.
// Run as: node --import tsx test/medium/tokens-child.ts (configuration in the environment).
import readline from "node:readline";
import { createHttpTransport } from "../../src/api/http.ts";
import { OAuthClient } from "../../src/api/oauth.ts";
import { createPacer } from "../../src/api/pacer.ts";
import { redisPacerStore } from "../../src/api/pacer-redis-store.ts";
import { placebo } from "../../src/api/account-calls.ts";
import { TokenManager } from "../../src/api/token-manager.ts";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";
import { AccountRepository } from "../../src/db/account.repository.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { createLogger } from "../../src/log.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { redisCoordinator } from "../../src/coord/redis.ts";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`tokens-child: ${name} is not set`);
  return value;
};

const db = createPgPool(env("CHILD_DATABASE_URL"), 4);
const redis = createRedis(env("CHILD_REDIS_URL"));
await redis.connect();
const prefix = env("CHILD_REDIS_PREFIX");
const log = createLogger({ level: "warn", pretty: false });
const oauth = new OAuthClient({
  serviceBase: env("CHILD_SIM_URL"),
  clientId: env("CHILD_CLIENT_ID"),
  clientSecret: env("CHILD_CLIENT_SECRET"),
  timeoutMs: 5000,
});
const cipher = new TokenCipher({ key: Buffer.from(env("CHILD_KEY_HEX"), "hex"), source: "env", created: false });
let now = 0;
const manager = new TokenManager({
  repo: new AccountRepository(db),
  pendingDir: env("CHILD_PENDING_DIR"),
  cipher,
  oauth,
  coord: redisCoordinator(redis),
  redisPrefix: prefix,
  log,
  now: () => now,
  pollMs: 20,
});
const provider = await manager.forAccount(env("CHILD_ACCOUNT"));
const transport = createHttpTransport({ apiBase: env("CHILD_SIM_URL"), tokens: provider, pacer: createPacer({ store: redisPacerStore(redis, prefix) }), log });
const callers = Number(env("CHILD_CALLERS"));

process.stdout.write("ready\n");
const rl = readline.createInterface({ input: process.stdin });
const go = await new Promise<string>((resolve) => rl.once("line", resolve));
rl.close();
now = Number(go);

const results = await Promise.all(
  Array.from({ length: callers }, async () => {
    try {
      const token = await provider.getAccessToken();
      await placebo(transport);
      return { ok: true, fingerprint: cipher.fingerprint(token) };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  }),
);
process.stdout.write(`${JSON.stringify(results)}\n`);
await redis.quit();
await db.end();
