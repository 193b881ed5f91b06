// The raw repositories through Prisma: the same rows as through pg, pg's row counts and error codes, and one
// transaction holding a Prisma model write and a raw repository write.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AccountRepository, type GrantRecord } from "../../src/db/account.repository.ts";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { DigestSectionsRepository } from "../../src/db/digest-sections.repository.ts";
import { createPrisma, type Db } from "../../src/db/prisma.ts";
import { prismaQueryable, returnsRows, withPrismaTransaction } from "../../src/db/prisma-queryable.ts";
import { StatusRepository } from "../../src/db/status.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import type { Queryable } from "../../src/db/with-transaction.ts";
import { at, createMirrorDb, insertAccount, makeDeviation, makeUser, type MirrorDb } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let prisma: Db;
let viaPrisma: Queryable;

beforeEach(async () => {
  m = await createMirrorDb();
  prisma = createPrisma(m.pool);
  viaPrisma = prismaQueryable(prisma);
});

afterEach(async () => {
  await prisma.$disconnect();
  await m.drop();
});

describe(prismaQueryable.name, () => {
  it("reads rows as pg does: int8 and numeric as strings, times as Dates, json as objects", async () => {
    await insertAccount(m.pool, "reader");
    await new DeviationRepository(m.pool).upsertDeviations(
      [makeDeviation({ n: 1, favourites: 7 }), makeDeviation({ n: 2, kind: "journal" })],
      at("2026-11-20T10:00:00Z"),
    );
    const statements = [
      "SELECT deviationid, title, raw, published_at, stats_favourites, last_seen_at, type FROM deviations ORDER BY deviationid",
      "SELECT count(*) AS n, sum(stats_favourites) AS favs, array_agg(deviationid ORDER BY deviationid) AS ids FROM deviations",
      "SELECT '2026-11-23'::date AS day, 1.5::numeric AS price, ARRAY[1, 2]::int8[] AS big, NULL::text AS nothing",
    ];
    for (const text of statements) {
      const [pg, prism] = await Promise.all([m.pool.query(text), viaPrisma.query(text)]);
      expect(prism.rows).toEqual(pg.rows);
      expect(prism.rowCount).toBe(pg.rowCount);
    }
    expect((await viaPrisma.query<{ n: unknown }>(statements[1] as string)).rows[0]?.n).toBe("2");
    // A numeric's value is kept, not its scale (Prisma's Decimal drops trailing zeros): cast where the digits matter.
    const mean = "SELECT avg(stats_favourites) AS mean FROM deviations";
    const [pgMean, prismaMean] = await Promise.all([m.pool.query<{ mean: string }>(mean), viaPrisma.query<{ mean: string }>(mean)]);
    expect([pgMean.rows[0]?.mean, prismaMean.rows[0]?.mean]).toEqual(["8.5000000000000000", "8.5"]);
    // The read models give the same answers on either path.
    for (const read of [(q: Queryable) => new StatusRepository(q).countDownloadsByStatus(), (q: Queryable) => new DigestSectionsRepository(q).listAccounts()]) {
      expect(await read(viaPrisma)).toEqual(await read(m.pool));
    }
  });

  it("counts the rows a write without RETURNING changed, and returns the rows of one with RETURNING", async () => {
    await new UserRepository(viaPrisma).upsertUsers([makeUser(1), makeUser(2), makeUser(3)], at("2026-11-20T10:00:00Z"));
    const updated = await viaPrisma.query("UPDATE users SET usericon = NULL WHERE username <> $1", ["artist1"]);
    expect(updated.rowCount).toBe(2);
    expect(updated.rows).toEqual([]);
    const returned = await viaPrisma.query<{ username: string }>("UPDATE users SET usericon = 'x' WHERE username = $1 RETURNING username", ["artist3"]);
    expect(returned.rows).toEqual([{ username: "artist3" }]);
    expect(returned.rowCount).toBe(1);
    expect(returnsRows("SELECT * FROM downloads FOR UPDATE SKIP LOCKED")).toBe(true);
    expect(returnsRows("WITH x AS (SELECT 1) DELETE FROM users")).toBe(false);
  });

  it("fails with the database's SQLSTATE in `code`, as pg does", async () => {
    await expect(viaPrisma.query("SELECT * FROM no_such_table")).rejects.toMatchObject({ code: "42P01" });
  });
});

describe(withPrismaTransaction.name, () => {
  const count = async (table: "accounts" | "users") => Number((await m.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`)).rows[0]?.n);

  it("commits an account write and a mirror write together, or neither", async () => {
    await expect(
      withPrismaTransaction(prisma, async ({ tx, sql }) => {
        await tx.account.create({ data: { name: "rolled-back" } });
        await new UserRepository(sql).upsertUsers([makeUser(10)], at("2026-11-20T10:00:00Z"));
        throw new Error("the page failed");
      }),
    ).rejects.toThrow("the page failed");
    expect([await count("accounts"), await count("users")]).toEqual([0, 0]);

    await withPrismaTransaction(prisma, async ({ tx, sql }) => {
      await tx.account.create({ data: { name: "kept" } });
      await new UserRepository(sql).upsertUsers([makeUser(11)], at("2026-11-20T10:00:00Z"));
    });
    expect([await count("accounts"), await count("users")]).toEqual([1, 1]);
  });

  it("holds the account repository's writes and a mirror repository's writes in one transaction", async () => {
    const id = await insertAccount(m.pool, "owner");
    const accounts = new AccountRepository(prisma);
    const now = at("2026-11-20T10:00:00Z");
    await expect(
      withPrismaTransaction(prisma, async ({ tx, sql }) => {
        expect(await new AccountRepository(tx).markNeedsReauth({ id, reason: "refresh token rejected", now })).toBe(true);
        await new UserRepository(sql).upsertUsers([makeUser(12)], now);
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
    const created = await withPrismaTransaction(prisma, async ({ tx, sql }) => {
      const row = await new AccountRepository(tx).createOrUpdateFromGrant(grant);
      await new UserRepository(sql).upsertUsers([makeUser(13)], now);
      return row;
    });
    expect(created.accessTokenEnc).toEqual(new Uint8Array([created.id]));
    expect((await accounts.findByName("second"))?.id).toBe(created.id);
    expect([await count("accounts"), await count("users")]).toEqual([2, 1]);
  });
});
