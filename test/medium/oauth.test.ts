// Every grant against the simulator over real sockets: authorization code with PKCE (through the loopback
// listener and pasted), public 2.1 clients, state checks, the implicit grant over an https redirect,
// client credentials, scope downgrades, and both forms of revoke.
import got from "got";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AuthorizeDeniedError,
  buildAuthorizeUrl,
  createPkce,
  DEFAULT_SCOPES,
  interactiveLogin,
  OAuthClient,
  OAuthEndpointError,
  s256,
  StateMismatchError,
  StateStore,
  compareScopes,
  type InteractiveLoginOptions,
} from "../../src/api/oauth.ts";
import { placebo } from "../../src/api/account-calls.ts";
import { ReauthRequiredError } from "../../src/api/token-errors.ts";
import type { SimClient } from "../../src/simulator/server.ts";
import { approveInBrowser, CLIENT_ID, CLIENT_SECRET, createFixture, seedAccount, type Fixture } from "./tokens-fixture.ts";
import { freePort } from "../../src/free-port.ts";

const HTTPS_REDIRECT = "https://127.0.0.1:8788/callback";

function clients(redirect: string): SimClient[] {
  return [
    { clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [redirect, HTTPS_REDIRECT], implicit: true },
    { clientId: "2002", redirectUris: [redirect, HTTPS_REDIRECT], oauth21: true },
    { clientId: "3003", clientSecret: "sim-secret-3003", redirectUris: [redirect, HTTPS_REDIRECT], oauth21: true },
  ];
}

describe("OAuth grants", () => {
  let f: Fixture;
  let redirectUri: string;
  let port: number;
  beforeEach(async () => {
    port = await freePort();
    redirectUri = `http://127.0.0.1:${port}/callback`;
    f = await createFixture({ sim: { clients: clients(redirectUri) } });
  });
  afterEach(async () => {
    await f.close();
  });

  const login = (overrides: Partial<InteractiveLoginOptions> & Pick<InteractiveLoginOptions, "onAuthorizeUrl">) =>
    interactiveLogin({ oauth: f.oauth, redirectUri, scopes: DEFAULT_SCOPES, mode: "code", timeoutMs: 20_000, now: f.clock.now, ...overrides });

  const simEntries = (route: string) => f.sim.log().filter((e) => e.route === route);

  it("authorization code through the loopback listener: PKCE S256, the same redirect_uri, HTTP Basic by default", async () => {
    const pages: string[] = [];
    const result = await login({
      onAuthorizeUrl: async (url) => {
        const location = await approveInBrowser(url);
        expect(location.startsWith(`${redirectUri}?`)).toBe(true);
        pages.push((await got(location)).body);
      },
    });
    expect(result.grantType).toBe("authorization_code");
    expect(result.grant.refreshToken).toEqual(expect.any(String));
    expect(result.grant.scopes).toEqual([...DEFAULT_SCOPES]);
    expect(pages[0]).toContain("You can close this window");

    const [authorize] = simEntries("/oauth2/authorize");
    const [token] = simEntries("/oauth2/token");
    expect(authorize?.query).toMatchObject({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: redirectUri,
      scope: DEFAULT_SCOPES.join(" "),
      code_challenge_method: "S256",
    });
    // The simulator checked the verifier against the challenge; here: it is the S256 of what was sent.
    expect(authorize?.query.code_challenge).toBe(s256(String(token?.form.code_verifier)));
    expect(token?.form).toMatchObject({ grant_type: "authorization_code", redirect_uri: redirectUri });
    expect(token?.form.client_secret).toBeUndefined();
    expect(token?.auth).toBe("basic");
    expect(token?.status).toBe(200);

    const row = await f.manager.storeGrant({
      name: "alice",
      kind: "user",
      grantType: result.grantType,
      grant: result.grant,
      clientAuth: "basic",
      requestedAt: result.requestedAt,
    });
    expect(row).toMatchObject({ state: "ok", grantType: "authorization_code", clientId: CLIENT_ID });
    await placebo(f.transport(await f.manager.forAccount("alice")));
  });

  it("the simulator verifies PKCE and the redirect_uri: a wrong verifier or another redirect_uri is refused", async () => {
    const pkce = createPkce();
    const states = new StateStore();
    const authorize = (state: string) =>
      buildAuthorizeUrl({ endpoints: f.oauth.endpoints, clientId: CLIENT_ID, redirectUri, scopes: ["basic"], state, responseType: "code", pkce });
    const codeOf = async () => new URL(await approveInBrowser(authorize(states.issue()))).searchParams.get("code")!;

    const wrongVerifier = await f.oauth.exchangeCode({ code: await codeOf(), redirectUri, verifier: createPkce().verifier }).catch((e: unknown) => e);
    expect(wrongVerifier).toBeInstanceOf(OAuthEndpointError);
    expect(wrongVerifier).toMatchObject({ status: 400, errorDescription: "The code_verifier is invalid." });

    const wrongRedirect = await f.oauth
      .exchangeCode({ code: await codeOf(), redirectUri: `${redirectUri}/other`, verifier: pkce.verifier })
      .catch((e: unknown) => e);
    expect(wrongRedirect).toMatchObject({ status: 400, errorDescription: expect.stringMatching(/redirect_uri/) });

    await expect(f.oauth.exchangeCode({ code: await codeOf(), redirectUri, verifier: pkce.verifier })).resolves.toMatchObject({ tokenType: "Bearer" });
  });

  it("paste mode: no listener; the pasted redirect URL is checked and exchanged (form client authentication)", async () => {
    let location = "";
    const result = await login({
      auth: "form",
      onAuthorizeUrl: async (url) => {
        location = await approveInBrowser(url);
      },
      readPastedUrl: async () => `  ${location}  `,
    });
    expect(result.grant.refreshToken).toEqual(expect.any(String));
    // Nothing listened: the redirect target is still closed.
    await expect(got(location, { retry: { limit: 0 }, timeout: { request: 1000 } })).rejects.toMatchObject({ code: "ECONNREFUSED" });
    const [token] = simEntries("/oauth2/token");
    expect(token?.auth).toBe("body");
    expect(token?.form).toMatchObject({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
  });

  it("a public OAuth 2.1 client logs in with PKCE alone (client_id in the form, no secret)", async () => {
    const publicClient = new OAuthClient({ serviceBase: f.sim.url, clientId: "2002" });
    const result = await login({
      oauth: publicClient,
      auth: publicClient.defaultAuth(),
      onAuthorizeUrl: async (url) => {
        await got(await approveInBrowser(url));
      },
    });
    expect(result.grant.refreshToken).toEqual(expect.any(String));
    const [token] = simEntries("/oauth2/token");
    expect(token?.auth).toBe("body");
    expect(token?.form.client_id).toBe("2002");
    expect(token?.form.client_secret).toBeUndefined();
  });

  it("a redirect with a state this login did not issue is rejected, and the real one still completes", async () => {
    const rejected: string[] = [];
    const result = await login({
      onRejected: (reason) => {
        rejected.push(reason);
      },
      onAuthorizeUrl: async (url) => {
        const location = new URL(await approveInBrowser(url));
        const forged = new URL(location);
        forged.searchParams.set("state", "forged-state");
        const answer = await got(forged, { throwHttpErrors: false });
        expect(answer.statusCode).toBe(400);
        expect(answer.body).toContain("does not match this login");
        await got(location);
        // A replay of the real redirect is refused too: states are single-use.
        expect((await got(location, { throwHttpErrors: false })).statusCode).toBe(409);
      },
    });
    expect(result.grant.refreshToken).toEqual(expect.any(String));
    expect(rejected).toEqual(["The redirect's state does not match this login."]);
    expect(simEntries("/oauth2/token")).toHaveLength(1);
  });

  it("a pasted URL with the wrong state is refused before any token request", async () => {
    const err = await login({
      onAuthorizeUrl: async () => undefined,
      readPastedUrl: async () => `${redirectUri}?code=stolen-code-123&state=not-ours`,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateMismatchError);
    expect(simEntries("/oauth2/token")).toHaveLength(0);
  });

  it("the user declining comes back as a clear error", async () => {
    const err = await login({
      onAuthorizeUrl: async (url) => {
        const location = await approveInBrowser(`${url}&sim_decision=deny`);
        await got(location, { throwHttpErrors: false });
      },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthorizeDeniedError);
    expect((err as Error).message).toMatch(/access_denied.*run `dvault auth login` again/);
  });

  it("scopes the service will not grant come back as `basic`: a downgrade dvault can warn about", async () => {
    const result = await login({
      scopes: ["basic", "browse", "not-a-scope"],
      onAuthorizeUrl: async (url) => {
        await got(await approveInBrowser(url));
      },
    });
    expect(result.grant.scopes).toEqual(["basic"]);
    expect(compareScopes(result.requestedScopes, result.grant.scopes ?? [])).toEqual({ missing: ["browse", "not-a-scope"], downgraded: true });
  });

  describe("the implicit grant", () => {
    it("over an https redirect: the landing page hands the fragment back to the listener", async () => {
      let listening = 0;
      const result = await login({
        mode: "token",
        redirectUri: HTTPS_REDIRECT,
        listenPort: 0,
        onListening: (p) => {
          listening = p;
        },
        onAuthorizeUrl: async (url) => {
          const location = new URL(await approveInBrowser(url));
          expect(location.protocol).toBe("https:");
          expect(location.search).toBe("");
          expect(location.hash).toMatch(/access_token=/);
          // The TLS proxy in front of the listener forwards the page request; the fragment stays in the browser.
          const behindProxy = `http://127.0.0.1:${listening}${location.pathname}`;
          const page = await got(behindProxy);
          expect(page.body).toContain("<script>");
          expect(page.body).toContain("location.hash");
          expect(page.headers["referrer-policy"]).toBe("no-referrer");
          // What the page's script does: post the fragment back, from the redirect's origin.
          const posted = await got.post(behindProxy, {
            body: location.hash.slice(1),
            headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://127.0.0.1:8788" },
          });
          expect(JSON.parse(posted.body)).toEqual({ message: expect.stringMatching(/received the authorization/) });
        },
      });
      expect(result.grantType).toBe("implicit");
      expect(result.grant.refreshToken).toBeUndefined();
      expect(simEntries("/oauth2/token")).toHaveLength(0);
      expect(simEntries("/oauth2/authorize")[0]?.query).toMatchObject({ response_type: "token", redirect_uri: HTTPS_REDIRECT });

      const row = await f.manager.storeGrant({
        name: "imp",
        kind: "user",
        grantType: "implicit",
        grant: result.grant,
        clientAuth: "basic",
        requestedAt: result.requestedAt,
      });
      expect(row.state).toBe("expiring");
      expect(row.stateReason).toMatch(/no refresh token/);
      await placebo(f.transport(await f.manager.forAccount("imp")));
    });

    it("a post from another origin is refused", async () => {
      let listening = 0;
      const attempt = login({
        mode: "token",
        redirectUri: HTTPS_REDIRECT,
        listenPort: 0,
        timeoutMs: 3000,
        onListening: (p) => {
          listening = p;
        },
        onAuthorizeUrl: async (url) => {
          const location = new URL(await approveInBrowser(url));
          const answer = await got.post(`http://127.0.0.1:${listening}/callback`, {
            body: location.hash.slice(1),
            headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" },
            throwHttpErrors: false,
          });
          expect(answer.statusCode).toBe(403);
        },
      });
      await expect(attempt).rejects.toThrow(/no redirect arrived/);
    });

    it("pasted: the token is read from the fragment", async () => {
      let location = "";
      const result = await login({
        mode: "token",
        redirectUri: HTTPS_REDIRECT,
        onAuthorizeUrl: async (url) => {
          location = await approveInBrowser(url);
        },
        readPastedUrl: async () => location,
      });
      expect(result.grant).toMatchObject({ tokenType: "Bearer", refreshToken: undefined, expiresIn: 3600 });
    });

    it("is refused up front for OAuth 2.1 apps, public clients and http redirects", async () => {
      const pasted = async () => "unused";
      await expect(
        login({ mode: "token", redirectUri: HTTPS_REDIRECT, oauthVersion: "2.1", onAuthorizeUrl: () => undefined, readPastedUrl: pasted }),
      ).rejects.toThrow(/implicit grant is not available: DVAULT_OAUTH_VERSION=2\.1/);
      const publicClient = new OAuthClient({ serviceBase: f.sim.url, clientId: "2002" });
      await expect(
        login({ oauth: publicClient, mode: "token", redirectUri: HTTPS_REDIRECT, onAuthorizeUrl: () => undefined, readPastedUrl: pasted }),
      ).rejects.toThrow(/no secret \(an OAuth 2\.1 public client\)/);
      await expect(login({ mode: "token", onAuthorizeUrl: () => undefined, readPastedUrl: pasted })).rejects.toThrow(/needs an https redirect URI/);
      expect(f.sim.log()).toHaveLength(0);
    });

    it("when dvault was not told, the service's refusal (a 2.1 app) is recognised and explained", async () => {
      const app21 = new OAuthClient({ serviceBase: f.sim.url, clientId: "3003", clientSecret: "sim-secret-3003" });
      let listening = 0;
      const err = await login({
        oauth: app21,
        mode: "token",
        redirectUri: HTTPS_REDIRECT,
        listenPort: 0,
        onListening: (p) => {
          listening = p;
        },
        onAuthorizeUrl: async (url) => {
          const location = new URL(await approveInBrowser(url));
          expect(location.searchParams.get("error")).toBe("unauthorized_client");
          await got(`http://127.0.0.1:${listening}${location.pathname}${location.search}`, { throwHttpErrors: false });
        },
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthorizeDeniedError);
      expect((err as Error).message).toMatch(/OAuth 2\.1 apps never do.*without --implicit/);
    });
  });

  it("client credentials: a client row per client_id, HTTP Basic or form parameters", async () => {
    const row = await f.manager.requestClientToken();
    expect(row).toMatchObject({
      name: "client:1001",
      kind: "client",
      grantType: "client_credentials",
      clientAuth: "basic",
      refreshTokenEnc: null,
      userId: null,
    });
    await placebo(f.transport(await f.manager.forAccount("client:1001")));
    await f.manager.requestClientToken({ auth: "form" });
    const tokenCalls = simEntries("/oauth2/token");
    expect(tokenCalls.map((e) => [e.form.grant_type, e.auth, e.status])).toEqual([
      ["client_credentials", "basic", 200],
      ["client_credentials", "body", 200],
    ]);
    expect((await f.repo.list()).filter((r) => r.kind === "client")).toHaveLength(1);
  });

  it("import: a refresh token from elsewhere is exchanged at once and its successor stored", async () => {
    const issued = f.sim.issueUserToken();
    const requestedAt = f.clock.now();
    const grant = await f.oauth.refresh(issued.refresh_token);
    await f.manager.storeGrant({ name: "headless", kind: "user", grantType: "imported", grant, clientAuth: "basic", requestedAt });
    const row = await f.repo.findByName("headless");
    expect(row).toMatchObject({ grantType: "imported", state: "ok" });
    expect(f.manager.revealRefreshToken(row!)).toBe(grant.refreshToken);
    expect(grant.refreshToken).not.toBe(issued.refresh_token);
  });

  describe("revoke", () => {
    it("default form: the whole grant is revoked at the service and the account is marked revoked", async () => {
      const { provider, issued } = await seedAccount(f);
      const row = await f.repo.findByName("alice");
      expect(await f.manager.logout(row!, { refreshOnly: false })).toBe("revoked");
      const [revoke] = simEntries("/oauth2/revoke");
      expect(revoke?.form).toEqual({ token: issued.refresh_token });
      expect(revoke?.status).toBe(200);
      // Both tokens are dead at the service.
      const direct = await got(`${f.sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${issued.access_token}` }, throwHttpErrors: false });
      expect(direct.statusCode).toBe(401);
      await expect(f.oauth.refresh(issued.refresh_token)).rejects.toMatchObject({ status: 400 });
      // And locally: no tokens left, and the provider says what to do.
      const after = await f.repo.findByName("alice");
      expect(after).toMatchObject({ state: "revoked", accessTokenEnc: null, refreshTokenEnc: null, refreshTokenFingerprint: null });
      await expect(provider.getAccessToken()).rejects.toBeInstanceOf(ReauthRequiredError);
    });

    it("revoke_refresh_only=true: only the refresh token dies; the access token lives until it expires", async () => {
      const { issued } = await seedAccount(f);
      const row = await f.repo.findByName("alice");
      expect(await f.manager.logout(row!, { refreshOnly: true })).toBe("revoked");
      const [revoke] = simEntries("/oauth2/revoke");
      expect(revoke?.form).toEqual({ token: issued.refresh_token, revoke_refresh_only: "true" });
      const direct = await got(`${f.sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${issued.access_token}` } });
      expect(direct.statusCode).toBe(200);
      await expect(f.oauth.refresh(issued.refresh_token)).rejects.toMatchObject({ status: 400 });
      const after = await f.repo.findByName("alice");
      expect(after).toMatchObject({ state: "revoked", refreshTokenEnc: null });
      expect(after?.accessTokenEnc).not.toBeNull();
      expect(after?.stateReason).toMatch(/logged out of this install/);
    });

    it("a full logout after --refresh-only ends the grant with the access token that was left", async () => {
      const { issued } = await seedAccount(f);
      await f.manager.logout((await f.repo.findByName("alice"))!, { refreshOnly: true });
      expect(await f.manager.logout((await f.repo.findByName("alice"))!, { refreshOnly: false })).toBe("revoked");
      const revokes = simEntries("/oauth2/revoke");
      expect(revokes.map((e) => e.form)).toEqual([{ token: issued.refresh_token, revoke_refresh_only: "true" }, { token: issued.access_token }]);
      const direct = await got(`${f.sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${issued.access_token}` }, throwHttpErrors: false });
      expect(direct.statusCode).toBe(401);
      expect(await f.repo.findByName("alice")).toMatchObject({ state: "revoked", accessTokenEnc: null });
    });

    it("a token the service already forgot still logs out locally", async () => {
      const { issued } = await seedAccount(f);
      await f.oauth.revoke(issued.refresh_token);
      const row = await f.repo.findByName("alice");
      expect(await f.manager.logout(row!, { refreshOnly: false })).toBe("already_invalid");
      expect((await f.repo.findByName("alice"))?.state).toBe("revoked");
    });
  });
});
