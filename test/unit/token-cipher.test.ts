import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { CorruptTokenError, TokenCipher, WrongSecretKeyError } from "../../src/crypto/token-cipher.ts";
import { EXIT_NEEDS_LOGIN } from "../../src/errors.ts";

const fileKey = (key = randomBytes(32)) => ({ key, source: "file" as const, path: "/cfg/dvault/secret.key", created: false });

describe(TokenCipher.name, () => {
  it("round-trips a token, with a fresh IV every time and the plaintext nowhere in the envelope", () => {
    const cipher = new TokenCipher(fileKey());
    const aad = { accountId: 7, field: "refresh_token" as const };
    const a = cipher.encrypt("secret-refresh-token-value", aad);
    const b = cipher.encrypt("secret-refresh-token-value", aad);
    expect(a.equals(b)).toBe(false);
    expect(a[0]).toBe(1); // envelope version
    expect(a.length).toBe(1 + 4 + 12 + 16 + "secret-refresh-token-value".length);
    expect(a.toString("latin1")).not.toContain("secret-refresh");
    expect(cipher.decrypt(a, aad)).toBe("secret-refresh-token-value");
    expect(cipher.decrypt(new Uint8Array(b), aad)).toBe("secret-refresh-token-value");
  });

  it("binds the ciphertext to its account and field", () => {
    const cipher = new TokenCipher(fileKey());
    const sealed = cipher.encrypt("tok", { accountId: 1, field: "access_token" });
    expect(() => cipher.decrypt(sealed, { accountId: 2, field: "access_token" })).toThrow(CorruptTokenError);
    expect(() => cipher.decrypt(sealed, { accountId: 1, field: "refresh_token" })).toThrow(CorruptTokenError);
  });

  it("detects tampering", () => {
    const cipher = new TokenCipher(fileKey());
    const aad = { accountId: 1, field: "access_token" as const };
    const sealed = cipher.encrypt("token-value", aad);
    sealed[sealed.length - 1]! ^= 1;
    expect(() => cipher.decrypt(sealed, aad)).toThrow(CorruptTokenError);
    expect(() => cipher.decrypt(Buffer.from([1, 2, 3]), aad)).toThrow(CorruptTokenError);
  });

  it("a different key is a clear error naming the key source, never garbage", () => {
    const aad = { accountId: 1, field: "access_token" as const };
    const sealed = new TokenCipher(fileKey()).encrypt("token-value", aad);
    const fromFile = new TokenCipher(fileKey());
    expect(() => fromFile.decrypt(sealed, aad)).toThrow(WrongSecretKeyError);
    // The exit code of an account that must log in again (src/errors.ts), one of its two fixes.
    expect(new WrongSecretKeyError("DVAULT_SECRET_KEY").exitCode).toBe(EXIT_NEEDS_LOGIN);
    expect(() => fromFile.decrypt(sealed, aad)).toThrow(
      "cannot decrypt stored tokens: DVAULT_SECRET_KEY or the key file /cfg/dvault/secret.key is not the key they were encrypted with; restore the key or log in again with `dvault auth login`",
    );
    const fromEnv = new TokenCipher({ key: randomBytes(32), source: "env", created: false });
    expect(() => fromEnv.decrypt(sealed, aad)).toThrow(/^cannot decrypt stored tokens: DVAULT_SECRET_KEY is not the key/);
  });

  it("fingerprints are stable per key, differ across keys, and do not contain the token", () => {
    const key = randomBytes(32);
    const a = new TokenCipher(fileKey(key));
    const b = new TokenCipher(fileKey(key));
    const c = new TokenCipher(fileKey());
    expect(a.fingerprint("rt-1")).toBe(b.fingerprint("rt-1"));
    expect(a.fingerprint("rt-1")).not.toBe(a.fingerprint("rt-2"));
    expect(a.fingerprint("rt-1")).not.toBe(c.fingerprint("rt-1"));
    expect(a.fingerprint("rt-1")).toMatch(/^[0-9a-f]{64}$/);
  });
});
