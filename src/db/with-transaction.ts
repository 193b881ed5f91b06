// The transaction helper of the repositories on the pg pool: a page, its cursor and its counters commit
// together or not at all. Repositories take a Queryable, so the same class runs on the pool or inside this
// (an account write and mirror writes alike: docs/ARCHITECTURE.md#db).
import type pg from "pg";

/** Anything that runs one SQL statement: a pg.Pool, a pg.PoolClient, or a wrapper that counts them. */
export type Queryable = {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
};

/** Runs `fn` inside BEGIN ... COMMIT on one pooled connection; ROLLBACK and rethrow on any error. */
export async function withTransaction<T>(pool: pg.Pool, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      // The connection is unusable: hand it back as broken so the pool discards it.
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw err;
  } finally {
    client.release(broken);
  }
}
