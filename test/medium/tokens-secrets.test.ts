// Runs the OAuth and token flows end to end and scans everything dvault wrote on the way — every log
// line, every error message (and its serialised form), everything it keeps outside the mirror on the run's
// engine (every Redis key and value under the prefix, or on PostgreSQL alone every row of the coordination,
// pace and queue tables) — for any token, the client secret, an authorization code or a PKCE verifier.
import { randomBytes } from "node:crypto";
import got from "got";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DEFAULT_SCOPES, interactiveLogin } from "../../src/api/oauth.ts";
import { placebo } from "../../src/api/account-calls.ts";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";
import { serializeError } from "../../src/redact.ts";
import { approveInBrowser, CLIENT_ID, CLIENT_SECRET, createFixture, dumpEngine, seedAccount, type Fixture } from "./tokens-fixture.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { freePort } from "../../src/free-port.ts";

const MINUTE = 60_000;
const SECRET_PARAMS = ["code", "code_verifier", "refresh_token", "access_token", "token", "client_secret"];

// Both engines: the Redis pass scans the prefix's keys and values, npm run test:postgres the tables outside the
// mirror (dumpEngine).
describe(`secrets never leak (engine: ${TEST_ENGINE})`, () => {
  let f: Fixture;
  let redirectUri: string;
  const secrets = new Set<string>([CLIENT_SECRET, Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")]);
  const errors: string[] = [];
  const engineSnapshots: string[] = [];

  const keep = (value: unknown) => {
    if (typeof value === "string" && value.length >= 6) secrets.add(value);
  };
  const keepParams = (params: URLSearchParams) => {
    for (const name of SECRET_PARAMS) keep(params.get(name));
  };
  /** Runs a step that is expected to fail and keeps what a user or a log would see of the error. */
  const failing = async (step: () => Promise<unknown>) => {
    try {
      await step();
    } catch (err) {
      const e = err as Error;
      errors.push(e.message, e.stack ?? "", String(e), JSON.stringify(serializeError(e)));
      return;
    }
    throw new Error("the step was expected to fail");
  };
  const snapshotEngine = async () => engineSnapshots.push(...(await dumpEngine(f)));
  const harvestRows = async () => {
    for (const row of await f.repo.list()) {
      keep(f.manager.revealAccessToken(row));
      keep(f.manager.revealRefreshToken(row));
    }
  };

  beforeAll(async () => {
    const port = await freePort();
    redirectUri = `http://127.0.0.1:${port}/callback`;
    f = await createFixture({
      sim: {
        clients: [{ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirectUri, "https://127.0.0.1:8788/callback"], implicit: true }],
      },
    });

    // Login through the listener, and pasted with form authentication.
    for (const paste of [false, true]) {
      let location = "";
      const result = await interactiveLogin({
        oauth: f.oauth,
        redirectUri,
        scopes: DEFAULT_SCOPES,
        mode: "code",
        auth: paste ? "form" : "basic",
        log: f.log.logger,
        onAuthorizeUrl: async (url) => {
          location = await approveInBrowser(url);
          keepParams(new URL(location).searchParams);
          if (!paste) await got(location);
        },
        ...(paste ? { readPastedUrl: async () => location } : {}),
      });
      await f.manager.storeGrant({
        name: paste ? "pasted" : "browser",
        kind: "user",
        grantType: "authorization_code",
        grant: result.grant,
        clientAuth: paste ? "form" : "basic",
        requestedAt: f.clock.now(),
      });
    }
    // A state mismatch and a denied login.
    await failing(() =>
      interactiveLogin({
        oauth: f.oauth,
        redirectUri,
        scopes: ["basic"],
        mode: "code",
        onAuthorizeUrl: () => undefined,
        readPastedUrl: async () => `${redirectUri}?code=abcdef123456&state=forged`,
      }),
    );
    // The implicit grant, pasted.
    let implicitLocation = "";
    const implicit = await interactiveLogin({
      oauth: f.oauth,
      redirectUri: "https://127.0.0.1:8788/callback",
      scopes: DEFAULT_SCOPES,
      mode: "token",
      onAuthorizeUrl: async (url) => {
        implicitLocation = await approveInBrowser(url);
        keepParams(new URLSearchParams(new URL(implicitLocation).hash.slice(1)));
      },
      readPastedUrl: async () => implicitLocation,
    });
    await f.manager.storeGrant({
      name: "implicit",
      kind: "user",
      grantType: "implicit",
      grant: implicit.grant,
      clientAuth: "basic",
      requestedAt: f.clock.now(),
    });

    // Client credentials, renewed.
    const client = await f.manager.forClient();
    await placebo(f.transport(client));
    f.sim.expireAccessTokens();
    await placebo(f.transport(client));
    await harvestRows();

    // Refresh ahead of expiry, with a slow token endpoint so the lock can be seen on the engine.
    const { provider, issued } = await seedAccount(f, "alice");
    keep(issued.access_token);
    keep(issued.refresh_token);
    f.sim.faults.add({ route: "/oauth2/token", kind: "latency", latencyMs: 200, times: 1 });
    f.clock.advance(55 * MINUTE);
    const refreshing = provider.getAccessToken();
    // The engine is kept as the wait found it, the lock in it: a dump of its own after the wait may come after the
    // refresh has ended and the lock has gone.
    let withLock: string[] = [];
    await vi.waitFor(
      async () => {
        withLock = await dumpEngine(f);
        expect(
          withLock.filter((text) => text.includes(":oauth:refresh-lock:")),
          "the refresh lock while the token endpoint is slow",
        ).toHaveLength(1);
      },
      { timeout: 2_000, interval: 10 },
    );
    // The wait above held only a dump that shows the lock: the engine scan below covers a held refresh lock.
    engineSnapshots.push(...withLock);
    keep(await refreshing);
    // A 401 mid-call.
    f.sim.expireAccessTokens();
    await placebo(f.transport(provider));
    await harvestRows();
    await snapshotEngine();

    // A dead refresh token, then a lost answer.
    const dead = await seedAccount(f, "bob", { user: 1 });
    keep(dead.issued.refresh_token);
    keep((await f.oauth.refresh(dead.issued.refresh_token)).refreshToken);
    await harvestRows();
    f.clock.advance(55 * MINUTE);
    await failing(() => dead.provider.getAccessToken());
    await failing(() => placebo(f.transport(dead.provider)));
    const lost = await seedAccount(f, "carol", { user: 2 });
    await harvestRows();
    f.sim.faults.add({ route: "/oauth2/token", kind: "reset", times: 1 });
    f.clock.advance(55 * MINUTE);
    await failing(() => lost.provider.getAccessToken());
    await failing(() => f.oauth.refresh(lost.issued.refresh_token));

    // Revoke, both forms.
    await harvestRows();
    const revokeFull = await seedAccount(f, "dave", { user: 3 });
    const revokeRefresh = await seedAccount(f, "erin", { user: 4 });
    await harvestRows();
    await f.manager.logout((await f.repo.findByName("dave"))!, { refreshOnly: false });
    await f.manager.logout((await f.repo.findByName("erin"))!, { refreshOnly: true });
    await failing(() => revokeFull.provider.getAccessToken());
    await failing(() => revokeRefresh.provider.getAccessToken());
    await failing(() => f.manager.logout({ ...revokeFull.provider.row }, { refreshOnly: true }));

    // The wrong key.
    const stranger = new TokenCipher({ key: randomBytes(32), source: "env", created: false });
    await failing(async () => (await f.newManager({ cipher: stranger }).forAccount("alice")).getAccessToken());
    await snapshotEngine();

    // Everything the simulator saw in a secret parameter counts too (codes, verifiers, tokens).
    for (const entry of f.sim.log()) {
      for (const name of SECRET_PARAMS) {
        keep(entry.form[name]);
        keep(entry.query[name]);
      }
    }
  }, 120_000);

  afterAll(async () => {
    await f.close();
  });

  it("the flows really ran and produced output to scan", () => {
    expect(secrets.size).toBeGreaterThan(25);
    expect(f.log.lines.length).toBeGreaterThan(20);
    expect(f.log.lines.some((l) => l.includes("refreshed the access token"))).toBe(true);
    expect(f.log.lines.some((l) => l.includes("needs to be authorized again"))).toBe(true);
    expect(errors.join("\n")).toMatch(/answer was lost/);
    expect(errors.join("\n")).toMatch(/The refresh_token is invalid/);
    expect(errors.join("\n")).toMatch(/its stored tokens were encrypted with another key than/);
    const verifiers = f.sim.log().filter((e) => e.form.code_verifier !== undefined);
    expect(verifiers).toHaveLength(2);
  });

  it("no log line contains a token, the client secret, a code or a verifier", () => {
    for (const line of f.log.lines) for (const secret of secrets) expect(line.includes(secret), `log line leaks a secret: ${line.slice(0, 120)}`).toBe(false);
  });

  it("no error message contains one", () => {
    for (const text of errors) for (const secret of secrets) expect(text.includes(secret), `error leaks a secret: ${text.slice(0, 120)}`).toBe(false);
  });

  it("nothing kept on the engine (Redis keys and values, or the tables outside the mirror) contains one", () => {
    expect(engineSnapshots.length).toBeGreaterThan(0);
    for (const text of engineSnapshots)
      for (const secret of secrets) expect(text.includes(secret), `${TEST_ENGINE} leaks a secret: ${text.slice(0, 120)}`).toBe(false);
  });

  it("the database holds ciphertexts and fingerprints, never a token", async () => {
    // bytea columns come out as \x<hex>: look for each secret as text and as hex.
    const { rows } = await f.db.pool.query<{ j: string }>("SELECT row_to_json(a)::text AS j FROM accounts a");
    const dump = rows.map((r) => r.j).join("\n");
    expect(rows.length).toBeGreaterThan(5);
    for (const secret of secrets) {
      expect(dump.includes(secret)).toBe(false);
      expect(dump.includes(Buffer.from(secret).toString("hex"))).toBe(false);
    }
  });
});
