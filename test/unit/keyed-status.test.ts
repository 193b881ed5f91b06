// An account's status as this install's key sees it (src/api/token-manager.ts keyedStatus): tokens sealed under
// another key, or under a key this install does not have, cannot be used, so `status` and `auth status` say the
// account must log in again (or get its key back), never "ok".
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type AccountStatus, keyedStatus } from "../../src/api/token-manager.ts";
import { TokenCipher } from "../../src/crypto/token-cipher.ts";

const keyOf = (path: string) => new TokenCipher({ key: randomBytes(32), source: "file", path, created: false });
const ours = keyOf("/cfg/dvault/secret.key");
const theirs = keyOf("/old/dvault/secret.key");

const status = (state: AccountStatus["state"]): AccountStatus => ({
  id: 1,
  name: "alice",
  kind: "user",
  username: "alice",
  userId: "u1",
  clientId: "1001",
  grantType: "authorization_code",
  scopes: ["basic"],
  state,
  stateReason: null,
  accessExpiresAt: null,
  refreshTokenAgeDays: 0,
  hasRefreshToken: true,
  grantStartedAt: null,
  lastRefreshAt: null,
});
const sealedBy = (cipher: TokenCipher) => ({
  accessTokenEnc: cipher.encrypt("access", { accountId: 1, field: "access_token" }),
  refreshTokenEnc: cipher.encrypt("refresh", { accountId: 1, field: "refresh_token" }),
});

describe(keyedStatus.name, () => {
  it("leaves an account whose tokens this key sealed as its row says", () => {
    expect(keyedStatus(status("ok"), sealedBy(ours), { cipher: ours })).toEqual(status("ok"));
    expect(keyedStatus(status("expiring"), sealedBy(ours), { cipher: ours }).state).toBe("expiring");
  });

  it("says an account with tokens of another key must log in again, naming the key it has", () => {
    expect(keyedStatus(status("ok"), sealedBy(theirs), { cipher: ours })).toMatchObject({
      state: "needs_reauth",
      stateReason:
        "its stored tokens were encrypted with another key than DVAULT_SECRET_KEY or the key file /cfg/dvault/secret.key (restore that key, or log in again)",
    });
    // One of the two under another key is enough: a refresh would need the other.
    const mixed = { accessTokenEnc: sealedBy(ours).accessTokenEnc, refreshTokenEnc: sealedBy(theirs).refreshTokenEnc };
    expect(keyedStatus(status("ok"), mixed, { cipher: ours }).state).toBe("needs_reauth");
  });

  it("says so when no key is found at all, naming where it was looked for", () => {
    expect(
      keyedStatus(status("ok"), sealedBy(theirs), {
        none: "its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file /cfg/dvault/secret.key (restore that key, or log in again)",
      }),
    ).toMatchObject({
      state: "needs_reauth",
      stateReason:
        "its stored tokens cannot be read, since no key was found in DVAULT_SECRET_KEY or the key file /cfg/dvault/secret.key (restore that key, or log in again)",
    });
  });

  it("changes nothing for a revoked account or one without tokens", () => {
    expect(keyedStatus(status("revoked"), sealedBy(theirs), { cipher: ours }).state).toBe("revoked");
    expect(keyedStatus(status("ok"), { accessTokenEnc: new Uint8Array(), refreshTokenEnc: null }, { none: "x" }).state).toBe("ok");
  });
});
