// One transaction of the pool holds an account write (the account repository) and mirror writes (the raw
// repositories) together: both commit, or neither (docs/ARCHITECTURE.md#db).
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AccountRepository, type GrantRecord } from "../../src/db/account.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { withTransaction } from "../../src/db/with-transaction.ts";
import { at, createMirrorDb, insertAccount, makeUser, type MirrorDb } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;

beforeEach(async () => {
  m = await createMirrorDb();
});

afterEach(async () => {
  await m.drop();
});

describe(withTransaction.name, () => {
  const count = async (table: "accounts" | "users") => Number((await m.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n);

  it("commits an account write and a mirror write together, or neither", async () => {
    await expect(
      withTransaction(m.pool, async (tx) => {
        await insertAccount(tx, "rolled-back");
        await new UserRepository(tx).upsertUsers([makeUser(10)], at("2026-11-20T10:00:00Z"));
        throw new Error("the page failed");
      }),
    ).rejects.toThrow("the page failed");
    expect([await count("accounts"), await count("users")]).toEqual([0, 0]);

    await withTransaction(m.pool, async (tx) => {
      await insertAccount(tx, "kept");
      await new UserRepository(tx).upsertUsers([makeUser(11)], at("2026-11-20T10:00:00Z"));
    });
    expect([await count("accounts"), await count("users")]).toEqual([1, 1]);
  });

  it("holds the account repository's writes and a mirror repository's writes in one transaction", async () => {
    const id = await insertAccount(m.pool, "owner");
    const accounts = new AccountRepository(m.pool);
    const now = at("2026-11-20T10:00:00Z");
    await expect(
      withTransaction(m.pool, async (tx) => {
        expect(await new AccountRepository(tx).markNeedsReauth({ id, reason: "refresh token rejected", now })).toBe(true);
        await new UserRepository(tx).upsertUsers([makeUser(12)], now);
        throw new Error("the page failed");
      }),
    ).rejects.toThrow("the page failed");
    expect((await accounts.findById(id))?.state).toBe("ok");
    expect(await count("users")).toBe(0);

    const grant: GrantRecord = {
      name: "second",
      kind: "user",
      clientId: "client",
      grantType: "authorization_code",
      clientAuth: "basic",
      scopes: ["browse"],
      state: "ok",
      stateReason: null,
      now,
      seal: (accountId) => ({
        accessTokenEnc: new Uint8Array([accountId]),
        accessIssuedAt: now,
        accessExpiresAt: now,
        refreshTokenEnc: null,
        refreshTokenFingerprint: null,
        refreshIssuedAt: null,
      }),
    };
    const created = await withTransaction(m.pool, async (tx) => {
      const row = await new AccountRepository(tx).createOrUpdateFromGrant(grant);
      await new UserRepository(tx).upsertUsers([makeUser(13)], now);
      return row;
    });
    expect([...(created.accessTokenEnc ?? [])]).toEqual([created.id]); // sealed for the row's id
    expect((await accounts.findByName("second"))?.id).toBe(created.id);
    expect([await count("accounts"), await count("users")]).toEqual([2, 1]);
  });
});
