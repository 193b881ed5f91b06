// The token lifecycle against the simulator over real sockets, on real Postgres and Redis: one refresh
// path (ahead of expiry and after a 401), single flight across processes, grants that are lost marked
// needs_reauth without a second token request, short-lived tokens, old refresh tokens, a wrong key.
import { describeNeedingRedis } from "../helpers/needs-redis.ts";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import readline from "node:readline";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureFreshToken, placebo } from "../../src/api/account-calls.ts";
import { ReauthRequiredError } from "../../src/api/token-errors.ts";
import { TokenManager } from "../../src/api/token-manager.ts";
import { REFRESH_RETRIES } from "../../src/api/oauth.ts";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";
import { AccountRepository } from "../../src/db/account.repository.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { CLIENT_ID, CLIENT_SECRET, createFixture, seedAccount, type Fixture } from "./tokens-fixture.ts";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describe(TokenManager.name, () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await createFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  it("refreshes ahead of expiry, once, and stores the new refresh token before handing out the access token", async () => {
    const { provider, issued } = await seedAccount(f);
    expect(await provider.getAccessToken()).toBe(issued.access_token);
    f.clock.advance(45 * MINUTE); // 15 min left: outside the 10 min margin
    expect(await provider.getAccessToken()).toBe(issued.access_token);
    expect(f.tokenRequests()).toHaveLength(0);

    f.clock.advance(6 * MINUTE); // 9 min left: inside it
    const fresh = await provider.getAccessToken();
    expect(fresh).not.toBe(issued.access_token);
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
    const row = await f.repo.findByName("alice");
    expect(row?.state).toBe("ok");
    expect(row?.lastRefreshAt?.getTime()).toBe(f.clock.now());
    expect(f.manager.revealAccessToken(row!)).toBe(fresh);
    expect(row?.refreshTokenFingerprint).not.toBe(f.cipher.fingerprint(issued.refresh_token));
    await placebo(f.transport(provider));
    // The old refresh token is spent at the service.
    await expect(f.oauth.refresh(issued.refresh_token)).rejects.toMatchObject({ status: 400, refreshTokenDead: true });
  });

  it("a process paused past its refresh lock's life never sends the refresh token another process spent meanwhile: it adopts that grant", async () => {
    const { issued } = await seedAccount(f);
    f.clock.advance(55 * MINUTE);
    const alice = (await f.repo.findByName("alice"))!;
    const lockKey = `${f.redis.prefix}:oauth:refresh-lock:${alice.id}`;
    let paused = false;
    // The pause falls after the paused process took the lock and read the row, before it sends the token: its lock
    // expires (as a TTL ends while a machine sleeps), and another process takes the lock and refreshes.
    const pausedRepo = Object.create(f.repo) as typeof f.repo;
    pausedRepo.proveWritable = async () => {
      await f.repo.proveWritable();
      if (paused) return;
      paused = true;
      const held = await f.coord.get(lockKey);
      expect(held).toBeDefined();
      await f.coord.removeIfEquals(lockKey, held!);
      await (await f.newManager().forAccount("alice")).getAccessToken();
    };
    const token = await (await f.newManager({ repo: pausedRepo }).forAccount("alice")).getAccessToken();
    expect(paused).toBe(true);
    // One refresh: the other process's. The paused one took the lock again, read the row and took that grant.
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
    const row = (await f.repo.findByName("alice"))!;
    expect(row.state).toBe("ok");
    expect(token).toBe(f.manager.revealAccessToken(row));
    expect(token).not.toBe(issued.access_token);
    expect(f.log.lines.join("\n")).toContain("the refresh lock ran out before the refresh token was sent");
  });

  it("never hands out a refreshed access token whose refresh token could not be stored", async () => {
    await seedAccount(f);
    class FailingRepo extends AccountRepository {
      override async saveRotatedToken(): Promise<boolean> {
        throw new Error("database went away");
      }
    }
    const manager = f.newManager({ repo: new FailingRepo(f.db.pool) });
    const provider = await manager.forAccount("alice");
    f.clock.advance(55 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toThrow("database went away");
    expect(f.tokenRequests()).toHaveLength(1);
    // No API call was made with the new token.
    expect(f.sim.log().filter((e) => e.route.endsWith("/placebo"))).toHaveLength(0);
  });

  it("a 401 mid-call refreshes once and the call succeeds", async () => {
    const { provider } = await seedAccount(f);
    const transport = f.transport(provider);
    await placebo(transport);
    f.sim.expireAccessTokens(); // the service says no although our clock says the token is fine
    await placebo(transport);
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
    const placebos = f.sim
      .log()
      .filter((e) => e.route.endsWith("/placebo"))
      .map((e) => e.status);
    expect(placebos).toEqual([200, 401, 200]);
  });

  it("a dead refresh token marks the account needs_reauth with the command to run, and is never tried again once settled", async () => {
    const { provider, issued } = await seedAccount(f);
    // Another machine spent the refresh token behind dvault's back.
    await f.oauth.refresh(issued.refresh_token);
    f.sim.clearLog();
    f.clock.advance(55 * MINUTE);

    const err = await provider.getAccessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReauthRequiredError);
    const message = (err as Error).message;
    expect(message).toContain('account "alice" must be authorized again');
    expect(message).toContain("The refresh_token is invalid.");
    expect(message).toContain("dvault auth login --account alice");
    expect(message).toContain("dvault auth import --refresh-token <token> --account alice");
    const row = await f.repo.findByName("alice");
    expect(row?.state).toBe("needs_reauth");
    expect(row?.stateReason).toMatch(/rejected its refresh token/);

    // Every later caller, in this manager or a new one, gets the same answer without a token request.
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(ReauthRequiredError);
    const other = await f.newManager().forAccount("alice");
    await expect(other.getAccessToken()).rejects.toBeInstanceOf(ReauthRequiredError);
    await expect(placebo(f.transport(other))).rejects.toThrow(/dvault auth login --account alice/);
    // A 400 may also be an answer that was not processed (docs/service-behaviour.md#unknown-grant-type):
    // the same token is sent again a few times (a spent one is refused again, costing nothing), then never.
    expect(f.tokenRequests()).toEqual(Array.from({ length: REFRESH_RETRIES + 1 }, () => ({ grant: "refresh_token", status: 400 })));
  });

  it('an "Unknown grant_type" answer is sent again with the same refresh token and succeeds', async () => {
    const { provider, issued } = await seedAccount(f);
    f.sim.faults.add({ route: "/oauth2/token", kind: "unknown_grant_type", times: 2 });
    f.clock.advance(58 * MINUTE);
    await expect(provider.getAccessToken()).resolves.toEqual(expect.any(String));
    expect(f.tokenRequests()).toEqual([
      { grant: "refresh_token", status: 400 },
      { grant: "refresh_token", status: 400 },
      { grant: "refresh_token", status: 200 },
    ]);
    expect(
      f.sim
        .log()
        .filter((e) => e.route === "/oauth2/token")
        .map((e) => e.form.refresh_token),
    ).toEqual([issued.refresh_token, issued.refresh_token, issued.refresh_token]);
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
  });

  it("a refresh whose answer was lost is sent once more: refused, the account needs_reauth at once", async () => {
    const { provider, issued } = await seedAccount(f);
    f.sim.faults.add({ route: "/oauth2/token", kind: "reset", times: 1 });
    f.clock.advance(58 * MINUTE);
    const err = await provider.getAccessToken().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReauthRequiredError);
    expect((err as Error).message).toMatch(/answer was lost/);
    expect((err as Error).message).not.toMatch(/grant is intact/);
    expect((await f.repo.findByName("alice"))?.state).toBe("needs_reauth");
    await expect(provider.getAccessToken()).rejects.toBeInstanceOf(ReauthRequiredError);
    // The reset came after the service had spent the token: the one retry is refused, and that settles it.
    expect(f.tokenRequests()).toEqual([
      { grant: "refresh_token", status: 0 },
      { grant: "refresh_token", status: 400 },
    ]);
    await expect(f.oauth.refresh(issued.refresh_token)).rejects.toMatchObject({ status: 400 });
  });

  it("a refresh that never left (endpoint unreachable) keeps the grant and defers", async () => {
    await seedAccount(f);
    const { OAuthClient } = await import("../../src/api/oauth.ts");
    const unreachable = new OAuthClient({ serviceBase: "http://127.0.0.1:1", clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, timeoutMs: 2000 });
    const provider = await f.newManager({ oauth: unreachable }).forAccount("alice");
    f.clock.advance(55 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toMatchObject({ name: "TokenRefreshDeferredError" });
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
  });

  it("a service error on refresh (500) keeps the grant and defers", async () => {
    const { provider } = await seedAccount(f);
    f.sim.faults.add({ route: "/oauth2/token", kind: "status_500", times: 1 });
    f.clock.advance(55 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toMatchObject({ name: "TokenRefreshDeferredError" });
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
    await expect(provider.getAccessToken()).resolves.toEqual(expect.any(String));
    expect(f.tokenRequests().map((r) => r.status)).toEqual([500, 200]);
  });

  it("flags a refresh token older than 80 days as expiring (not an error); the next refresh clears it", async () => {
    const { provider } = await seedAccount(f);
    await f.db.pool.query("UPDATE accounts SET refresh_issued_at = $1 WHERE name = 'alice'", [new Date(f.clock.now() - 81 * DAY)]);
    await expect(provider.getAccessToken()).resolves.toEqual(expect.any(String));
    let row = await f.repo.findByName("alice");
    expect(row?.state).toBe("expiring");
    expect(row?.stateReason).toMatch(/81 days old/);
    expect(f.tokenRequests()).toHaveLength(0);
    f.clock.advance(55 * MINUTE);
    await provider.getAccessToken();
    row = await f.repo.findByName("alice");
    expect(row?.state).toBe("ok");
    expect(row?.refreshIssuedAt?.getTime()).toBe(f.clock.now());
  });

  it("ensureFreshToken refreshes before long work when the token would not last, then checks it with the placebo", async () => {
    const { provider } = await seedAccount(f);
    const transport = f.transport(provider);
    f.clock.advance(20 * MINUTE); // 40 min left
    await ensureFreshToken({ tokens: provider, transport, minValidityMs: 30 * MINUTE });
    expect(f.tokenRequests()).toHaveLength(0);
    f.clock.advance(15 * MINUTE); // 25 min left
    await ensureFreshToken({ tokens: provider, transport, minValidityMs: 30 * MINUTE });
    expect(f.tokenRequests()).toHaveLength(1);
    expect(
      f.sim
        .log()
        .filter((e) => e.route.endsWith("/placebo"))
        .map((e) => e.status),
    ).toEqual([200, 200]);
  });

  it("a grant without a refresh token (implicit) is usable until it expires, then needs reauth with no token request", async () => {
    const issued = f.sim.issueUserToken();
    await f.manager.storeGrant({
      name: "imp",
      kind: "user",
      grantType: "implicit",
      grant: { accessToken: issued.access_token, tokenType: "Bearer", expiresIn: 3600, refreshToken: undefined, scopes: ["basic"] },
      clientAuth: "basic",
      requestedAt: f.clock.now(),
    });
    const provider = await f.manager.forAccount("imp");
    expect((await f.repo.findByName("imp"))?.state).toBe("expiring");
    f.clock.advance(55 * MINUTE);
    await expect(provider.getAccessToken()).resolves.toBe(issued.access_token);
    f.clock.advance(5 * MINUTE);
    await expect(provider.getAccessToken()).rejects.toThrow(/no refresh token/);
    expect((await f.repo.findByName("imp"))?.state).toBe("needs_reauth");
    expect(f.tokenRequests()).toHaveLength(0);
  });

  it("client credentials are renewed by asking for a new token (on expiry and after a 401)", async () => {
    const provider = await f.manager.forClient();
    expect(provider.identity()).toMatchObject({ kind: "client", clientId: CLIENT_ID, account: "client:1001" });
    const transport = f.transport(provider);
    await placebo(transport);
    f.clock.advance(59 * MINUTE);
    await placebo(transport);
    f.sim.expireAccessTokens();
    await placebo(transport);
    expect(f.tokenRequests()).toEqual([
      { grant: "client_credentials", status: 200 },
      { grant: "client_credentials", status: 200 },
      { grant: "client_credentials", status: 200 },
    ]);
    const row = await f.repo.findByName("client:1001");
    expect(row).toMatchObject({ kind: "client", grantType: "client_credentials", refreshTokenEnc: null });
  });

  it("a wrong secret key is a missing login naming the key, not garbage, and nothing is sent", async () => {
    await seedAccount(f);
    const otherKey = new TokenCipher({ key: randomBytes(32), source: "file", path: "/home/u/.config/dvault/secret.key", created: false });
    const provider = await f.newManager({ cipher: otherKey }).forAccount("alice");
    const err = await provider.getAccessToken().catch((e: unknown) => e);
    // A missing login to every run and job (rows stay wanted, jobs skipped, exit code 4), not a failure of the work.
    expect(err).toBeInstanceOf(ReauthRequiredError);
    expect((err as Error).message).toBe(
      'account "alice" must be authorized again: its stored tokens were encrypted with another key than DVAULT_SECRET_KEY or the key file ' +
        "/home/u/.config/dvault/secret.key (restore that key, or log in again). Run: dvault auth login --account alice — or, on a headless server: " +
        "dvault auth import --refresh-token <token> --account alice",
    );
    expect(f.sim.log()).toHaveLength(0);
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
  });
});

describe("a 20-second access token", () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await createFixture({ sim: { accessTokenLifetimeS: 20 } });
  });
  afterEach(async () => {
    await f.close();
  });

  it("keeps working for a simulated minute of calls with exactly one refresh per lifetime", async () => {
    const { provider } = await seedAccount(f);
    const transport = f.transport(provider);
    for (let second = 1; second <= 60; second++) {
      f.clock.advance(1000);
      await placebo(transport);
    }
    const log = f.sim.log();
    expect(log.filter((e) => e.route.endsWith("/placebo") && e.status !== 200)).toEqual([]);
    const refreshes = log.filter((e) => e.route === "/oauth2/token");
    // Margin = a fifth of 20 s = 4 s: refreshed at 16 s, 32 s, 48 s of a 60 s run.
    expect(refreshes.map((e) => e.status)).toEqual([200, 200, 200]);
    const start = new Date(log[0]!.at).getTime() - 1000;
    expect(refreshes.map((e) => (new Date(e.at).getTime() - start) / 1000)).toEqual([16, 32, 48]);
  });
});

// A child process on Redis (test/medium/tokens-child.ts): Redis's lock; skipped on a run without Redis.
describeNeedingRedis("refresh across processes", () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await createFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  it("8 concurrent callers in 2 processes: exactly one token request, and all 8 succeed", async () => {
    await seedAccount(f);
    f.clock.advance(55 * MINUTE); // inside the refresh margin for everyone
    // A slow token endpoint keeps the race window wide open.
    f.sim.faults.add({ route: "/oauth2/token", kind: "latency", latencyMs: 400, times: 5 });

    const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/tokens-child.ts")], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        CHILD_DATABASE_URL: f.db.url,
        CHILD_REDIS_URL: TEST_REDIS_URL,
        CHILD_REDIS_PREFIX: f.redis.prefix,
        CHILD_SIM_URL: f.sim.url,
        CHILD_CLIENT_ID: CLIENT_ID,
        CHILD_CLIENT_SECRET: CLIENT_SECRET,
        CHILD_KEY_HEX: f.key.key.toString("hex"),
        CHILD_PENDING_DIR: f.pendingDir,
        CHILD_ACCOUNT: "alice",
        CHILD_CALLERS: "4",
      },
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = readline.createInterface({ input: child.stdout! });
    const iterator = lines[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toBe("ready");

    const provider = await f.manager.forAccount("alice");
    const transport = f.transport(provider);
    child.stdin!.write(`${f.clock.now()}\n`);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const mine = await Promise.all(
      Array.from({ length: 4 }, async () => {
        try {
          const token = await provider.getAccessToken();
          await placebo(transport);
          return { ok: true, fingerprint: f.cipher.fingerprint(token) };
        } catch (err) {
          return { ok: false, error: (err as Error).message };
        }
      }),
    );
    const reply = await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the child did not answer")), 20_000)),
    ]).finally(() => child.kill());
    const theirs = JSON.parse(reply.value as string) as Array<{ ok: boolean; fingerprint?: string; error?: string }>;
    await exited;

    const all = [...mine, ...theirs];
    expect(all).toHaveLength(8);
    expect(all.every((r) => r.ok)).toBe(true);
    expect(new Set(all.map((r) => r.fingerprint)).size).toBe(1);
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
    const placebos = f.sim.log().filter((e) => e.route.endsWith("/placebo"));
    expect(placebos).toHaveLength(8);
    expect(placebos.every((e) => e.status === 200)).toBe(true);
    expect((await f.repo.findByName("alice"))?.state).toBe("ok");
  });
});

// The lock's keys in Redis: Redis itself.
describeNeedingRedis("the refresh lock in Redis", () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await createFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  it("holds an account id key and a random lock id only, expires on its own, and is released after the refresh", async () => {
    const { provider } = await seedAccount(f);
    const row = await f.repo.findByName("alice");
    f.sim.faults.add({ route: "/oauth2/token", kind: "latency", latencyMs: 300, times: 1 });
    f.clock.advance(55 * MINUTE);
    const refreshing = provider.getAccessToken();
    const key = `${f.redis.prefix}:oauth:refresh-lock:${row!.id}`;
    // Its value and its time to live read together while it is held: read after the wait, it may have gone with the
    // refresh (its token answer takes only 300 ms).
    let ttl = 0;
    await expect
      .poll(
        async () => {
          const [value, left] = ((await f.redis.redis.multi().get(key).pttl(key).exec()) ?? []).map(([, reply]) => reply);
          ttl = Number(left);
          return value;
        },
        { timeout: 500, interval: 10 },
      )
      .toMatch(/^[0-9a-f]{32}$/);
    expect(ttl).toBeGreaterThan(0);
    // The lock outlives a whole refresh, its retries included (docs/service-behaviour.md#unknown-grant-type).
    expect(ttl).toBeLessThanOrEqual(f.oauth.refreshBudgetMs + 30_000);
    await refreshing;
    expect(await f.redis.redis.exists(key)).toBe(0);
  });

  it("a lock left by a dead process only delays: once it expires the refresh goes ahead", async () => {
    const { provider } = await seedAccount(f);
    const row = await f.repo.findByName("alice");
    await f.redis.redis.set(`${f.redis.prefix}:oauth:refresh-lock:${row!.id}`, "deadbeef", "PX", 300);
    f.clock.advance(55 * MINUTE);
    const started = Date.now();
    await provider.getAccessToken();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(f.tokenRequests()).toEqual([{ grant: "refresh_token", status: 200 }]);
  });

  it("a token request is never retried by the HTTP client", async () => {
    // Belt and braces for the single-use rule: a 502 from the token endpoint is one request, not three.
    const { issued } = await seedAccount(f);
    f.sim.faults.add({ route: "/oauth2/token", kind: "status_502", times: 3 });
    await expect(f.oauth.refresh(issued.refresh_token)).rejects.toMatchObject({ status: 502 });
    expect(f.tokenRequests()).toHaveLength(1);
  });
});
