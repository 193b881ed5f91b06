import { describe, expect, it } from "vitest";
import {
  AuthorizeDeniedError,
  buildAuthorizeUrl,
  compareScopes,
  createPkce,
  DEFAULT_SCOPES,
  normaliseScopes,
  oauthEndpoints,
  parsePastedRedirect,
  s256,
  StateMismatchError,
  StateStore,
} from "../../src/api/oauth.ts";

describe("PKCE", () => {
  it("computes the RFC 7636 S256 challenge", () => {
    // RFC 7636 appendix B.
    expect(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });

  it("makes 64-character verifiers from the unreserved alphabet", () => {
    const pkce = createPkce();
    expect(pkce.verifier).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(pkce.method).toBe("S256");
    expect(pkce.challenge).toBe(s256(pkce.verifier));
    expect(createPkce().verifier).not.toBe(pkce.verifier);
  });
});

describe(StateStore.name, () => {
  it("accepts a state once", () => {
    const store = new StateStore();
    const state = store.issue();
    expect(state.length).toBeGreaterThanOrEqual(32);
    expect(store.consume("nope")).toBe("unknown");
    expect(store.consume(state)).toBe("ok");
    expect(store.consume(state)).toBe("unknown");
    expect(store.consume(undefined)).toBe("unknown");
  });

  it("expires states", () => {
    let now = 0;
    const store = new StateStore(1000, () => now);
    const state = store.issue();
    now = 1001;
    expect(store.consume(state)).toBe("expired");
  });
});

describe(buildAuthorizeUrl.name, () => {
  it("always sends PKCE S256 with the code flow, scopes space-separated", () => {
    const pkce = createPkce();
    const url = new URL(
      buildAuthorizeUrl({
        endpoints: oauthEndpoints("https://www.deviantart.com/"),
        clientId: "1001",
        redirectUri: "http://127.0.0.1:8788/callback",
        scopes: ["basic", "browse", "user"],
        state: "st",
        responseType: "code",
        pkce,
      }),
    );
    expect(url.origin + url.pathname).toBe("https://www.deviantart.com/oauth2/authorize");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      client_id: "1001",
      redirect_uri: "http://127.0.0.1:8788/callback",
      scope: "basic browse user",
      state: "st",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
    expect(url.toString()).not.toContain(pkce.verifier);
  });

  it("refuses a code flow without PKCE", () => {
    expect(() =>
      buildAuthorizeUrl({
        endpoints: oauthEndpoints("https://x"),
        clientId: "1",
        redirectUri: "http://a/b",
        scopes: ["basic"],
        state: "s",
        responseType: "code",
      }),
    ).toThrow(/PKCE/);
  });
});

describe(parsePastedRedirect.name, () => {
  it("reads code and state from the pasted URL and checks the state", () => {
    const states = new StateStore();
    const state = states.issue();
    const result = parsePastedRedirect(`  http://127.0.0.1:8788/callback?code=abc123&state=${state}\n`, { mode: "code", states });
    expect(result).toEqual({ kind: "code", code: "abc123", state });
  });

  it("rejects a state it did not issue, and a replay", () => {
    const states = new StateStore();
    const state = states.issue();
    expect(() => parsePastedRedirect("http://127.0.0.1:8788/callback?code=abc&state=forged", { mode: "code", states })).toThrow(StateMismatchError);
    parsePastedRedirect(`http://127.0.0.1:8788/callback?code=abc&state=${state}`, { mode: "code", states });
    expect(() => parsePastedRedirect(`http://127.0.0.1:8788/callback?code=abc&state=${state}`, { mode: "code", states })).toThrow(StateMismatchError);
  });

  it("reads the implicit grant's token from the fragment", () => {
    const states = new StateStore();
    const state = states.issue();
    const result = parsePastedRedirect(
      `https://127.0.0.1:8788/callback#access_token=tok123456&token_type=bearer&expires_in=3600&scope=basic+browse&state=${state}`,
      { mode: "token", states },
    );
    expect(result).toEqual({ kind: "token", accessToken: "tok123456", tokenType: "bearer", expiresIn: 3600, scope: "basic browse", state });
  });

  it("turns an error redirect into a sentence, and says when the app has no implicit grant", () => {
    const states = new StateStore();
    expect(() => parsePastedRedirect("http://h/cb?error=access_denied&error_description=no", { mode: "code", states })).toThrow(AuthorizeDeniedError);
    expect(() =>
      parsePastedRedirect("https://h/cb#error=unauthorized_client&error_description=The+implicit+grant+is+not+enabled", { mode: "token", states }),
    ).toThrow(/OAuth 2\.1 apps never do/);
    expect(() => parsePastedRedirect("https://h/cb?error=unauthorized_client", { mode: "token", states })).toThrow(/OAuth 2\.1 apps never do/);
  });

  it("says what is missing", () => {
    const states = new StateStore();
    expect(() => parsePastedRedirect("", { mode: "code", states })).toThrow(/nothing was pasted/);
    expect(() => parsePastedRedirect("http://h/cb?state=x", { mode: "code", states })).toThrow(/no `code` parameter/);
  });
});

describe("scopes", () => {
  it("default to read scopes only", () => {
    expect(DEFAULT_SCOPES).toEqual(["basic", "browse", "user", "message", "note", "feed"]);
    expect(DEFAULT_SCOPES.some((s) => /manage|post|publish|stash|collection|gallery/.test(s))).toBe(false);
  });

  it("normalise: union, de-duplicated, basic first, space/comma/plus separated", () => {
    expect(normaliseScopes(DEFAULT_SCOPES, "collection,gallery browse")).toEqual([
      "basic",
      "browse",
      "user",
      "message",
      "note",
      "feed",
      "collection",
      "gallery",
    ]);
    expect(normaliseScopes("user+browse")).toEqual(["user", "browse"]);
  });

  it("a grant of `basic` alone is a downgrade", () => {
    expect(compareScopes(["basic", "browse"], ["basic"])).toEqual({ missing: ["browse"], downgraded: true });
    expect(compareScopes(["basic", "browse", "note"], ["basic", "browse"])).toEqual({ missing: ["note"], downgraded: false });
    expect(compareScopes(["basic"], ["basic"])).toEqual({ missing: [], downgraded: false });
  });
});
