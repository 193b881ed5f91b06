// `dvault feeds revoke <name-or-id>` stops one reader: a token whose name is digits and the token whose id is
// those digits are two readers, and revoking by that word must leave the other one working.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgPool, type PgPool } from "../../src/db/connect.ts";
import { FeedTokenRepository } from "../../src/db/feed-token.repository.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/db.ts";

let db: TestDatabase;
let pool: PgPool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPgPool(db.url);
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe("FeedTokenRepository.revokeFeedToken", () => {
  it("revokes the token named by the word before the one whose id it is, and only one", async () => {
    const repo = new FeedTokenRepository(pool);
    const at = new Date("2026-11-20T10:00:00.000Z");
    const make = (name: string, n: number) => repo.createFeedToken({ name, nonce: Buffer.alloc(16, n), tokenSha256: Buffer.alloc(32, n), scope: null, at });
    const phone = await make("phone", 1);
    const digits = await make(String(phone), 2);
    expect(phone).not.toBeNull();
    expect(digits).not.toBeNull();
    // The second token is named after the first one's id.
    const revoked = await repo.revokeFeedToken(String(phone), at);
    expect(revoked?.id).toBe(digits);
    expect((await repo.liveFeedTokens()).map((t) => t.name)).toEqual(["phone"]);
    // With no live token of that name left, the word is the first token's id.
    expect((await repo.revokeFeedToken(String(phone), at))?.name).toBe("phone");
    expect(await repo.liveFeedTokens()).toEqual([]);
    expect(await repo.revokeFeedToken(String(phone), at)).toBeNull();
  });
});
