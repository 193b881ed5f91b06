import { Writable } from "node:stream";
import got, { HTTPError } from "got";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { maskUrl, registerSecret, scrubError, scrubString, scrubValue } from "../../src/redact.ts";

const ACCESS = "at-9f8e7d6c5b4a39281706f5e4d3c2b1a0";
const REFRESH = "rt-0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const SECRET = "cs-very-secret-client-secret-value";
const CODE = "authcode-4b7c9d2e1f";
const VERIFIER = "verifier-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0";
const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZXZpYXRpb24iLCJleHAiOjE3MDAwMDB9.c2lnbmF0dXJlLXBhcnQ";
const ALL = [ACCESS, REFRESH, SECRET, CODE, VERIFIER, JWT, "hunter2"];

function captureLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  return { log: createLogger({ level: "trace", destination, pretty: false }), lines };
}

function expectClean(text: string) {
  for (const secret of ALL) expect(text).not.toContain(secret);
}

describe(scrubString.name, () => {
  it("masks bearer and basic credentials written as text", () => {
    expectClean(scrubString(`Authorization: Bearer ${ACCESS}`));
    expect(scrubString(`Bearer ${ACCESS}`)).toBe("Bearer [redacted]");
  });

  it("masks tokens in query strings and form bodies but keeps error_code", () => {
    const url = `https://x.test/oauth2/token?grant_type=refresh_token&refresh_token=${REFRESH}&client_secret=${SECRET}&code=${CODE}&code_verifier=${VERIFIER}&error_code=2`;
    const out = scrubString(url);
    expectClean(out);
    expect(out).toContain("grant_type=refresh_token");
    expect(out).toContain("error_code=2");
  });

  it("masks passwords inside URLs and signed-URL tokens", () => {
    expect(scrubString("postgresql://dv:hunter2@db:5432/dvault")).toBe("postgresql://dv:***@db:5432/dvault");
    expectClean(scrubString(`https://images-wixmp.test/f/abc.png?token=${JWT}`));
    expectClean(scrubString(`signed ${JWT} in a message`));
  });

  it("masks the token of a Discord webhook URL, even one never registered, and the keys that hold such URLs", () => {
    expect(scrubString("POST https://discord.com/api/webhooks/1234567890/Zx9-abc_DEF0123456789?wait=true failed")).toBe(
      "POST https://discord.com/api/webhooks/1234567890/[redacted]?wait=true failed",
    );
    expect(scrubString("https://discord.com/api/v10/webhooks/1/Zx9-abc_DEF012")).toBe("https://discord.com/api/v10/webhooks/1/[redacted]");
    expect(scrubValue({ webhookUrl: "https://x/y", DVAULT_NTFY_TOKEN: "tk_abc", url: "https://ntfy.sh/" })).toEqual({
      webhookUrl: "[redacted]",
      DVAULT_NTFY_TOKEN: "[redacted]",
      url: "https://ntfy.sh/",
    });
  });

  it("masks secrets quoted in JSON bodies", () => {
    const body = JSON.stringify({ access_token: ACCESS, refresh_token: REFRESH, expires_in: 3600 });
    const out = scrubString(body);
    expectClean(out);
    expect(out).toContain('"expires_in":3600');
  });

  it("masks registered secret values wherever they appear", () => {
    registerSecret("opaque-value-without-any-marker");
    expect(scrubString("x opaque-value-without-any-marker y")).toBe("x [redacted] y");
  });
});

describe(scrubValue.name, () => {
  it("masks secret keys at any depth and keeps diagnostic error codes", () => {
    const out = scrubValue({
      headers: { Authorization: `Bearer ${ACCESS}`, "user-agent": "dvault" },
      nested: { deeper: { refresh_token: REFRESH, clientSecret: SECRET, code: CODE } },
      err: { code: "ECONNREFUSED" },
    }) as Record<string, Record<string, unknown>>;
    expectClean(JSON.stringify(out));
    expect(out.headers?.["user-agent"]).toBe("dvault");
    expect((out.err as { code: string }).code).toBe("ECONNREFUSED");
  });

  it("survives cycles", () => {
    const a: Record<string, unknown> = { name: "a" };
    a.self = a;
    expect(scrubValue(a)).toEqual({ name: "a", self: "[circular]" });
  });
});

describe("log lines", () => {
  let server: ReturnType<typeof createServer>;
  let base = "";
  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.statusCode = 403;
      res.end("forbidden");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("never carry a secret from a message string", () => {
    const { log, lines } = captureLogger();
    log.info(`refreshing with refresh_token=${REFRESH} and Bearer ${ACCESS}`);
    expect(lines).toHaveLength(1);
    expectClean(lines.join(""));
  });

  it("never carry a secret from bound fields, headers or nested objects", () => {
    const { log, lines } = captureLogger();
    log
      .child({ account: "alice", access_token: ACCESS })
      .warn(
        { req: { headers: { authorization: `Bearer ${ACCESS}` } }, form: { client_secret: SECRET, code: CODE, code_verifier: VERIFIER } },
        "token exchange",
      );
    expectClean(lines.join(""));
    expect(lines.join("")).toContain('"account":"alice"');
  });

  it("never carry a secret from an HTTP client error, which holds the request's headers and URL", async () => {
    const { log, lines } = captureLogger();
    let error: unknown;
    try {
      await got(`${base}/oauth2/token?refresh_token=${REFRESH}&token=${JWT}`, {
        headers: { authorization: `Bearer ${ACCESS}` },
        retry: { limit: 0 },
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(HTTPError);
    log.error({ err: error }, "call failed");
    const text = lines.join("");
    expectClean(text);
    expect(text).toContain('"statusCode":403');
    expect(text).toContain("/oauth2/token");
  });

  it("never carry a secret from an error's message or stack", () => {
    const { log, lines } = captureLogger();
    log.error({ err: new Error(`token endpoint said {"refresh_token":"${REFRESH}"} for code=${CODE}`) }, "boom");
    expectClean(lines.join(""));
  });
});

describe(scrubError.name, () => {
  it("returns an error of the same class whose message, stack and fields are clean", () => {
    class TokenError extends Error {
      accessToken = ACCESS;
      account = "alice";
    }
    const original = new TokenError(`refresh failed for refresh_token=${REFRESH}`);
    const safe = scrubError(original);
    expect(safe).toBeInstanceOf(TokenError);
    expectClean(`${safe.message} ${safe.stack} ${JSON.stringify(safe)}`);
    expect(safe.account).toBe("alice");
  });
});

describe(maskUrl.name, () => {
  it("hides the password and secret query parameters", () => {
    expect(maskUrl("redis://:hunter2@cache:6379/0")).toBe("redis://:***@cache:6379/0");
    expect(maskUrl("postgresql://u:p%40ss@h/db?sslmode=require")).toBe("postgresql://u:***@h/db?sslmode=require");
  });
});
