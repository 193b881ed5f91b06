// The first count of a counters migration (its last statement, a DO block that locks the counted table) and the wait
// for it to queue behind a writer: what the backfill tests run while a writer is under way.
import { readFileSync } from "node:fs";
import type pg from "pg";
import { expect } from "vitest";
import { connectPg } from "../../src/db/connect.ts";
import type { Queryable } from "../../src/db/with-transaction.ts";

/** The migration's first count, as it runs: its last statement. */
export function firstCount(migration: string): string {
  const sql = readFileSync(`prisma/migrations/${migration}/migration.sql`, "utf8");
  const at = sql.lastIndexOf("DO E'");
  expect(at).toBeGreaterThan(0);
  return sql.slice(at);
}

/** Until a statement waits for a lock of `locktype` (the count's table lock behind a writer's, say). */
export async function untilLockWaits(db: Queryable, locktype = "relation"): Promise<void> {
  await expect
    .poll(async () => (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND locktype = $1", [locktype])).rows[0]?.n, {
      timeout: 10_000,
      interval: 20,
    })
    .toBeGreaterThan(0);
}

/**
 * The first count of `migration` run while a writer is under way: `write` has written on its own connection (its
 * triggers have run) and not committed when the count starts. The count waits for the writer's lock to go (its ROW
 * EXCLUSIVE against the count's SHARE ROW EXCLUSIVE), then the writer commits and the count ends.
 */
export async function firstCountBehindWriter(
  db: { pool: Queryable; url: string },
  migration: string,
  write: (writer: pg.Client) => Promise<unknown>,
): Promise<void> {
  const writer = await connectPg(db.url);
  try {
    await writer.query("BEGIN");
    await write(writer);
    const count = db.pool.query(firstCount(migration));
    await untilLockWaits(db.pool);
    await writer.query("COMMIT");
    await count;
  } finally {
    await writer.end();
  }
}
