// The query builder of every repository (docs/ARCHITECTURE.md#db): Kysely over dvault's one pool, typed by
// src/db/schema.ts. A repository is given a Queryable (the pool, the client of a withTransaction, or a test's
// counting wrapper); `kysely(q)` is the builder whose statements run on exactly that, so one pool and one
// way of holding a transaction stay, and what runs is what the Queryable sees.
import { CamelCasePlugin, Kysely, PostgresDialect } from "kysely";
import type { CamelKeys, DB } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

export type Database = Kysely<DB>;

/** The tables under camelCase names (`access_token_enc`: `accessTokenEnc`), for a repository whose callers read them so. */
export type CamelDB = { [T in keyof DB]: CamelKeys<DB[T]> };

const builders = new WeakMap<Queryable, Database>();

/**
 * The typed builder running on `q`, one per Queryable. Kysely borrows a "connection" per statement:
 * here that is `q` itself, released to no one (the pool checks a client out for each statement as
 * `pool.query` always did; a transaction's client stays with its withTransaction). A transaction is therefore
 * always withTransaction's, never Kysely's own `transaction()`: on the pool, its BEGIN and its statements would
 * each take whichever pooled client is free.
 */
export function kysely(q: Queryable): Database {
  let db = builders.get(q);
  if (!db) {
    const connection = { query: (text: string, values: unknown[]) => q.query(text, values), release: () => undefined };
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: { connect: async () => connection, end: async () => undefined } as never }) });
    builders.set(q, db);
  }
  return db;
}

const camelCase = new CamelCasePlugin();

/**
 * `kysely(q)` under camelCase names: Kysely's CamelCasePlugin renames both ways (what the builder names and the
 * rows' keys), so the SQL names the real columns. Raw `sql` fragments are not renamed.
 */
export function kyselyCamel(q: Queryable): Kysely<CamelDB> {
  return kysely(q).withPlugin(camelCase) as unknown as Kysely<CamelDB>;
}

export { sql, type RawBuilder, type Selectable, type Insertable, type Updateable } from "kysely";
