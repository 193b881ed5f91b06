// The statements of the coordination seam's PostgreSQL driver (src/coord/postgres.ts): values with an expiry,
// hashes and sets as rows, in a schema of their own (dvault_coord unless a test names another), created and
// upgraded by migrateCoordSchema under an advisory lock with a version row, as BullMQ's runMigrations does for its
// `bullmq` schema. An expired value is gone to every reader the moment it expires: each statement compares
// `expires_at_ms` with the caller's clock, and sweepExpired only reclaims the space (docs/ARCHITECTURE.md#the-coordination-seam).
import type pg from "pg";
import { tableExists } from "./catalog.ts";
import { quoteIdent } from "./connect.ts";
import type { Queryable } from "./with-transaction.ts";

/** The schema of the coordination tables in the mirror's database. */
export const COORD_SCHEMA = "dvault_coord";

/** Each step takes the schema (quoted) to the next version; never edit one that has shipped, add a step. */
const STEPS: readonly ((s: string) => string[])[] = [
  (s) => [
    `CREATE TABLE ${s}.value (key text PRIMARY KEY, value text NOT NULL, expires_at_ms bigint)`,
    `CREATE INDEX value_expiry ON ${s}.value (expires_at_ms) WHERE expires_at_ms IS NOT NULL`,
    `CREATE TABLE ${s}.hash_field (key text NOT NULL, field text NOT NULL, value text NOT NULL, PRIMARY KEY (key, field))`,
    `CREATE TABLE ${s}.set_member (key text NOT NULL, member text NOT NULL, PRIMARY KEY (key, member))`,
  ],
];

/** The version migrateCoordSchema brings a schema to. */
export const COORD_SCHEMA_VERSION = STEPS.length;

function schemaIdent(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`not a schema name for the coordination tables: "${schema}"`);
  return quoteIdent(schema);
}

/**
 * Creates or upgrades the schema: one process at a time (an advisory lock held to the end of the transaction),
 * each step once (the version row). A schema of a newer version than this code knows is refused.
 */
export async function migrateCoordSchema(client: pg.PoolClient, schema: string): Promise<number> {
  const s = schemaIdent(schema);
  // A schema already at this version is read, never written: a read-only database (a standby, a disk full) still
  // opens, and what then refuses a write says so itself.
  if ((await coordSchemaVersion(client, schema, s)) === STEPS.length) return STEPS.length;
  await client.query("BEGIN");
  try {
    await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`dvault_coord:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${s}.version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)`);
    const found = await client.query(`SELECT version FROM ${s}.version`);
    const from = found.rows[0] ? Number(found.rows[0].version) : 0;
    if (from > STEPS.length) {
      throw new Error(
        `the coordination tables (schema ${schema}) are of version ${from}, newer than this dvault knows (${STEPS.length}): run the newer version`,
      );
    }
    for (const step of STEPS.slice(from)) for (const statement of step(s)) await client.query(statement);
    await client.query(`INSERT INTO ${s}.version (one, version) VALUES (true, $1) ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version`, [STEPS.length]);
    await client.query("COMMIT");
    return from;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  }
}

/** The schema's version, undefined when it has no version table yet (no lock; src/db/catalog.ts says why not a plain read). */
async function coordSchemaVersion(client: pg.PoolClient, schema: string, s: string): Promise<number | undefined> {
  if (!(await tableExists(client, schema, "version"))) return undefined;
  const found = await client.query(`SELECT version FROM ${s}.version`);
  return found.rows[0] ? Number(found.rows[0].version) : undefined;
}

/** Drops the schema and every coordination row in it (the compliance tests' own schemas). */
export async function dropCoordSchema(db: Queryable, schema: string): Promise<void> {
  await db.query(`DROP SCHEMA IF EXISTS ${schemaIdent(schema)} CASCADE`);
}

const LIVE = "(expires_at_ms IS NULL OR expires_at_ms > $NOW)";

/** One statement per method; `now` is the driver's clock in epoch ms, against which every expiry is judged. */
export class CoordRepository {
  private readonly s: string;

  constructor(
    private readonly db: Queryable,
    schema: string,
  ) {
    this.s = schemaIdent(schema);
  }

  private live(at: number): string {
    return LIVE.replace("$NOW", `$${at}`);
  }

  async readValue(key: string, now: number): Promise<string | undefined> {
    const r = await this.db.query(`SELECT value FROM ${this.s}.value WHERE key = $1 AND ${this.live(2)}`, [key, now]);
    return r.rows[0] ? String(r.rows[0].value) : undefined;
  }

  async readValues(keys: readonly string[], now: number): Promise<Map<string, string>> {
    const r = await this.db.query(`SELECT key, value FROM ${this.s}.value WHERE key = ANY($1::text[]) AND ${this.live(2)}`, [keys, now]);
    return new Map(r.rows.map((row) => [String(row.key), String(row.value)]));
  }

  async writeValue(key: string, value: string, expiresAtMs: number | null): Promise<void> {
    await this.db.query(
      `INSERT INTO ${this.s}.value (key, value, expires_at_ms) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms`,
      [key, value, expiresAtMs],
    );
  }

  /** Inserts, or takes over an expired row; the row lock of ON CONFLICT makes exactly one of racing callers win. */
  async writeValueIfAbsent(key: string, value: string, expiresAtMs: number | null, now: number): Promise<boolean> {
    const r = await this.db.query(
      `INSERT INTO ${this.s}.value AS v (key, value, expires_at_ms) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at_ms = EXCLUDED.expires_at_ms
       WHERE v.expires_at_ms IS NOT NULL AND v.expires_at_ms <= $4
       RETURNING 1 AS won`,
      [key, value, expiresAtMs, now],
    );
    return (r.rowCount ?? 0) > 0;
  }

  /** Deletes every row of the keys; how many keys had a live value, a hash or a set. */
  async deleteKeys(keys: readonly string[], now: number): Promise<number> {
    const r = await this.db.query(
      `WITH v AS (DELETE FROM ${this.s}.value WHERE key = ANY($1::text[]) RETURNING key, expires_at_ms),
            h AS (DELETE FROM ${this.s}.hash_field WHERE key = ANY($1::text[]) RETURNING key),
            m AS (DELETE FROM ${this.s}.set_member WHERE key = ANY($1::text[]) RETURNING key)
       SELECT count(*)::int AS removed FROM (
         SELECT key FROM v WHERE ${this.live(2)} UNION SELECT key FROM h UNION SELECT key FROM m
       ) AS gone`,
      [keys, now],
    );
    return Number(r.rows[0]?.removed ?? 0);
  }

  async kindOfKey(key: string, now: number): Promise<"none" | "value" | "other"> {
    const r = await this.db.query(
      `SELECT CASE
         WHEN EXISTS (SELECT 1 FROM ${this.s}.value WHERE key = $1 AND ${this.live(2)}) THEN 'value'
         WHEN EXISTS (SELECT 1 FROM ${this.s}.hash_field WHERE key = $1) OR EXISTS (SELECT 1 FROM ${this.s}.set_member WHERE key = $1) THEN 'other'
         ELSE 'none' END AS kind`,
      [key, now],
    );
    const kind = String(r.rows[0]?.kind ?? "none");
    return kind === "value" || kind === "other" ? kind : "none";
  }

  async listKeysStartingWith(prefix: string, now: number): Promise<string[]> {
    const r = await this.db.query(
      `SELECT key FROM ${this.s}.value WHERE starts_with(key, $1) AND ${this.live(2)}
       UNION SELECT key FROM ${this.s}.hash_field WHERE starts_with(key, $1)
       UNION SELECT key FROM ${this.s}.set_member WHERE starts_with(key, $1)`,
      [prefix, now],
    );
    return r.rows.map((row) => String(row.key));
  }

  async deleteValueIfEquals(key: string, expected: string, now: number): Promise<boolean> {
    const r = await this.db.query(`DELETE FROM ${this.s}.value WHERE key = $1 AND value = $2 AND ${this.live(3)}`, [key, expected, now]);
    return (r.rowCount ?? 0) > 0;
  }

  async extendValueIfEquals(key: string, expected: string, expiresAtMs: number, now: number): Promise<boolean> {
    const r = await this.db.query(`UPDATE ${this.s}.value SET expires_at_ms = $3 WHERE key = $1 AND value = $2 AND ${this.live(4)}`, [
      key,
      expected,
      expiresAtMs,
      now,
    ]);
    return (r.rowCount ?? 0) > 0;
  }

  async writeHashFields(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    const names = Object.keys(fields);
    if (names.length === 0) return;
    await this.db.query(
      `INSERT INTO ${this.s}.hash_field (key, field, value) SELECT $1, f, v FROM unnest($2::text[], $3::text[]) AS t (f, v)
       ON CONFLICT (key, field) DO UPDATE SET value = EXCLUDED.value`,
      [key, names, names.map((n) => fields[n])],
    );
  }

  async readHashFields(key: string): Promise<Record<string, string>> {
    const r = await this.db.query(`SELECT field, value FROM ${this.s}.hash_field WHERE key = $1`, [key]);
    return Object.fromEntries(r.rows.map((row) => [String(row.field), String(row.value)]));
  }

  async readHashField(key: string, field: string): Promise<string | undefined> {
    const r = await this.db.query(`SELECT value FROM ${this.s}.hash_field WHERE key = $1 AND field = $2`, [key, field]);
    return r.rows[0] ? String(r.rows[0].value) : undefined;
  }

  async deleteHashFields(key: string, fields: readonly string[]): Promise<void> {
    if (fields.length > 0) await this.db.query(`DELETE FROM ${this.s}.hash_field WHERE key = $1 AND field = ANY($2::text[])`, [key, fields]);
  }

  async addSetMembers(key: string, members: readonly string[]): Promise<void> {
    if (members.length === 0) return;
    await this.db.query(`INSERT INTO ${this.s}.set_member (key, member) SELECT $1, m FROM unnest($2::text[]) AS t (m) ON CONFLICT DO NOTHING`, [
      key,
      [...new Set(members)],
    ]);
  }

  async deleteSetMembers(key: string, members: readonly string[]): Promise<void> {
    if (members.length > 0) await this.db.query(`DELETE FROM ${this.s}.set_member WHERE key = $1 AND member = ANY($2::text[])`, [key, members]);
  }

  async readSetMembers(key: string): Promise<string[]> {
    const r = await this.db.query(`SELECT member FROM ${this.s}.set_member WHERE key = $1`, [key]);
    return r.rows.map((row) => String(row.member));
  }

  /** Reclaims the space of expired values (readers already ignore them); how many went. */
  /** The server's clock in epoch ms (its transaction-independent clock_timestamp()). */
  async serverTimeMs(): Promise<number> {
    const r = await this.db.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms");
    return Number(r.rows[0]?.ms);
  }

  async sweepExpired(now: number): Promise<number> {
    const r = await this.db.query(`DELETE FROM ${this.s}.value WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= $1`, [now]);
    return r.rowCount ?? 0;
  }

  async ping(): Promise<void> {
    await this.db.query(`SELECT 1 FROM ${this.s}.version`);
  }
}
