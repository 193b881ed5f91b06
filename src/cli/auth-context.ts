// What every `dvault auth` command opens: the config, the database, Redis, the key and the token manager,
// checked so that a failure shows as one line before any token is spent.
import { createHttpTransport } from "../api/http.ts";
import { OAuthClient } from "../api/oauth.ts";
import type { TokenProvider } from "../api/token-provider.ts";
import type { TokenManager } from "../api/token-manager.ts";
import { loadConfig, type Config } from "../config.ts";
import { installKey } from "../crypto/install-key.ts";
import { TokenCipher } from "../crypto/token-cipher.ts";
import { AccountRepository } from "../db/account.repository.ts";
import { createPgPool } from "../db/connect.ts";
import { assertDatabaseReady } from "../db/schema-check.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { UserError } from "../errors.ts";
import type { Logger } from "../log.ts";
import { cliLogger } from "./output/mode.ts";
import { registerSecret } from "../redact.ts";
import { existingSecretKey, keyCreatedMessage, keyFilePath, loadSecretKey, type SecretKey } from "../secret-key.ts";
import { printErr } from "./output/print.ts";
import { appTokenManager, openCoordination, pacerOf } from "../services.ts";
import { closeRedis } from "../queue/redis.ts";

export type AuthContext = {
  config: Config;
  log: Logger;
  repo: AccountRepository;
  oauth: OAuthClient;
  tokens: TokenManager;
  secret: SecretKey;
  cipher: TokenCipher;
  /** A transport for calls made as `provider` (whoami, placebo). */
  transportFor(provider: TokenProvider): ReturnType<typeof createHttpTransport>;
  close(): Promise<void>;
};

/**
 * What `auth status` and `auth logout` open on an install that has no key (no DVAULT_SECRET_KEY, no key file): the
 * accounts can be listed, and no token read, refreshed or made; only a command that stores a grant makes a key.
 */
export type KeylessContext = Pick<AuthContext, "config" | "repo" | "close"> & {
  /** Why no stored token can be read (src/crypto/install-key.ts), and where a key was looked for. */
  noKey: string;
  keyFile: string;
};

/**
 * Opens what every auth command needs; fails with one line when something is missing. With `makeKey: false` (a
 * command that stores no grant) a missing key is not made: the context says there is none (KeylessContext).
 */
export async function openContext(): Promise<AuthContext>;
export async function openContext(options: { makeKey: false }): Promise<AuthContext | KeylessContext>;
export async function openContext({ makeKey = true }: { makeKey?: boolean } = {}): Promise<AuthContext | KeylessContext> {
  const loaded = loadConfig();
  if (!loaded.clientId) {
    throw new UserError(
      "DVAULT_CLIENT_ID is not set: register an application on the service (its applications page gives a client_id and a client_secret) and set DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET",
    );
  }
  registerSecret(loaded.clientSecret);
  const log = cliLogger(loaded);
  // DATABASE_URL=embedded: the server dvault runs, held until close() (src/db/embedded/resolve.ts).
  const { config: configured, release } = await resolveDatabase(loaded);
  // One clear line for an unreachable, missing or unmigrated database before a driver gets a chance to be verbose,
  // and before any token is spent (assertReadyToSpend).
  try {
    await assertDatabaseReady(configured.databaseUrl);
  } catch (err) {
    release();
    throw err;
  }
  const db = createPgPool(configured.databaseUrl, 2);
  const { config, coord, redis } = await openCoordination(configured, db).catch(async (err: unknown) => {
    await db.end().catch(() => undefined);
    release();
    throw err;
  });
  const close = async (pacer?: { close(): Promise<void> }) => {
    await pacer?.close();
    await coord.close();
    if (redis) await closeRedis(redis);
    await db.end();
    release();
  };
  let secret: SecretKey | undefined;
  try {
    secret = makeKey ? loadSecretKey(config) : existingSecretKey(config);
  } catch (err) {
    // A key file that cannot be read or holds no key: its one line, and nothing left open to keep the process alive.
    await close().catch(() => undefined);
    throw err;
  }
  const repo = new AccountRepository(db);
  if (!secret) {
    const key = installKey(config);
    return { config, repo, close: () => close(), noKey: "none" in key ? key.none : "", keyFile: keyFilePath(config) };
  }
  const cipher = new TokenCipher(secret);
  const oauth = new OAuthClient({ serviceBase: config.apiBase, clientId: loaded.clientId, clientSecret: config.clientSecret, log });
  const tokens = appTokenManager({ config, accounts: repo, cipher, oauth, coord, log });
  const pacer = pacerOf(config, { redis, pool: db });
  return {
    config,
    log,
    repo,
    oauth,
    tokens,
    secret,
    cipher,
    transportFor: (provider) =>
      createHttpTransport({ apiBase: config.apiBase, tokens: provider, pacer, log, retry: { serverRetries: 1, networkRetries: 1, throttleRetries: 1 } }),
    close: () => close(pacer),
  };
}

/**
 * Everything a new grant needs to be stored, checked before the request that spends a single-use refresh
 * token or authorization code: once the service has answered, a failure to store loses the grant. The
 * config, the key and the schema (every migration applied) were checked by openContext; this adds whether the
 * database takes writes and whether the key is the one the stored tokens use.
 */
export async function assertReadyToSpend(ctx: AuthContext): Promise<void> {
  // The grant is written to the accounts table: a database that refuses writes (a standby, read-only) is said now.
  await ctx.repo.proveWritable();
  // A key file created just now beside tokens sealed under another key: most likely the config directory
  // (a container volume) is not the one that holds secret.key, and the new file may not outlive this run.
  if (ctx.secret.created) {
    const sealed = (await ctx.repo.list()).flatMap((r) => [r.accessTokenEnc, r.refreshTokenEnc]).filter((e) => e !== null);
    if (sealed.some((e) => !ctx.cipher.sealedWithThisKey(e))) {
      throw new UserError(
        `no key file was found, so a new one was created at ${ctx.secret.path}, but the stored tokens were encrypted with another key: ` +
          "point DVAULT_CONFIG_DIR at the directory that holds the original secret.key (or set DVAULT_SECRET_KEY) and run this again; " +
          "if that key is lost for good, run this again to go on with the new one",
      );
    }
    // The grant about to be stored is sealed with this new key: printed, not logged (the README promises the path).
    if (ctx.secret.path) printErr(`dvault: ${keyCreatedMessage(ctx.secret.path)}`);
  }
}

export async function withContext(run: (ctx: AuthContext) => Promise<void>): Promise<void> {
  const ctx = await openContext();
  try {
    await run(ctx);
  } finally {
    await ctx.close();
  }
}

/** As withContext, a missing key not made (KeylessContext): for the commands that store no grant (status, logout). */
export async function withExistingKey(run: (ctx: AuthContext | KeylessContext) => Promise<void>): Promise<void> {
  const ctx = await openContext({ makeKey: false });
  try {
    await run(ctx);
  } finally {
    await ctx.close();
  }
}
