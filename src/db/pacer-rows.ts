// The pacer's rows in PostgreSQL, for the store of src/api/pacer-sql-store.ts (DVAULT_ENGINE=postgres): one
// row per key of a namespace in dvault_pacer.pace, its state hash and its three sorted sets as JSON (the shape
// src/api/pacer-rules.ts declares: src/db may not import src/api, so src/services.ts checks the two agree).
// The schema is the pacer's own, created here on first use under an advisory lock (two processes starting at
// once do not race on CREATE … IF NOT EXISTS), outside prisma/migrations: it holds coordination, not the
// mirror, and a backup leaves it out as it leaves Redis out. Releases are announced with pg_notify on one
// channel, delivered when the transaction commits, and heard on one LISTEN connection per store, opened on the
// first wait that needs it; its socket does not keep a process alive (a waiter's own timer does).
import type { Socket } from "node:net";
import pg from "pg";
import type { PgPool } from "./connect.ts";
import { withTransaction } from "./with-transaction.ts";

/** The row as src/api/pacer-rules.ts reads it. */
type Row = {
  state: Record<string, number>;
  stateTtlMs: number;
  holders: Record<string, number>;
  queue: Record<string, number>;
  alive: Record<string, number>;
};

/** Every store's releases, of every namespace: a payload is [namespace, key, notice]. */
const CHANNEL = "dvault_pacer_released";
/** pg_advisory_xact_lock's key for creating the schema: "dvpacer" as an integer. */
const SCHEMA_LOCK = 0x6476706163657200n;

const emptyRow = (): Row => ({ state: {}, stateTtlMs: 0, holders: {}, queue: {}, alive: {} });
/** The database's clock in epoch ms: an expiry is kept by it, as Redis keeps a TTL by its own. */
const DB_NOW_MS = "extract(epoch FROM clock_timestamp()) * 1000";
const COLUMNS = `state, state_expires_at - ${DB_NOW_MS} AS state_ttl_ms, holders, queue, alive`;

/** A JSON column as an object of numbers (anything else is a row written by hand: read as empty). */
function numbers(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (!value || typeof value !== "object" || Array.isArray(value)) return out;
  for (const [k, v] of Object.entries(value)) if (typeof v === "number" && Number.isFinite(v)) out[k] = v;
  return out;
}

function rowOf(r: Record<string, unknown>): Row {
  return {
    state: numbers(r.state),
    stateTtlMs: Number(r.state_ttl_ms) || 0,
    holders: numbers(r.holders),
    queue: numbers(r.queue),
    alive: numbers(r.alive),
  };
}

/** A notice's [namespace, key, releaser]; anything else on the channel (someone's hand-sent NOTIFY) is nothing. */
function parseNotice(payload: string): Array<string | undefined> {
  try {
    const parsed: unknown = JSON.parse(payload);
    if (Array.isArray(parsed) && parsed.length === 3 && parsed.every((v) => typeof v === "string")) return parsed;
  } catch {
    // not ours
  }
  return [];
}

/** Creates the schema and its table once per database, under an advisory lock; drops rows long forgotten. */
async function prepareSchema(pool: PgPool): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK.toString()]);
    await tx.query("CREATE SCHEMA IF NOT EXISTS dvault_pacer");
    await tx.query(
      `CREATE TABLE IF NOT EXISTS dvault_pacer.pace (
        namespace text NOT NULL,
        key text NOT NULL,
        state jsonb NOT NULL DEFAULT '{}',
        state_expires_at double precision NOT NULL DEFAULT 0,
        holders jsonb NOT NULL DEFAULT '{}',
        queue jsonb NOT NULL DEFAULT '{}',
        alive jsonb NOT NULL DEFAULT '{}',
        PRIMARY KEY (namespace, key)
      )`,
    );
    // A key whose state expired (by the database's clock) and that nobody holds or waits for is gone, as in Redis.
    await tx.query(
      `DELETE FROM dvault_pacer.pace
        WHERE state_expires_at < ${DB_NOW_MS} AND holders = '{}' AND queue = '{}'`,
    );
  });
}

/** The rows of `namespace` (config.redisPrefix's counterpart: tests and benchmarks keep theirs apart). */
export function pacerRows(pool: PgPool, { namespace }: { namespace: string }) {
  let prepared: Promise<void> | undefined;
  const ready = () => {
    prepared ??= prepareSchema(pool).catch((err: unknown) => {
      prepared = undefined;
      throw err;
    });
    return prepared;
  };
  const notices = noticeListener(pool, namespace);

  async function locked(tx: pg.PoolClient, key: string): Promise<Row> {
    const select = `SELECT ${COLUMNS} FROM dvault_pacer.pace WHERE namespace = $1 AND key = $2 FOR UPDATE`;
    const found = await tx.query(select, [namespace, key]);
    if (found.rows[0]) return rowOf(found.rows[0]);
    // The key's first use: two processes may both get here; the second waits on the first's row, then reads it.
    await tx.query("INSERT INTO dvault_pacer.pace (namespace, key) VALUES ($1, $2) ON CONFLICT DO NOTHING", [namespace, key]);
    const again = await tx.query(select, [namespace, key]);
    return again.rows[0] ? rowOf(again.rows[0]) : emptyRow();
  }

  return {
    async change<T>(key: string, step: (row: Row) => T, notice?: string): Promise<T> {
      await ready();
      return withTransaction(pool, async (tx) => {
        const row = await locked(tx, key);
        const result = step(row);
        const values = [namespace, key, row.state, row.stateTtlMs, row.holders, row.queue, row.alive].map((v) =>
          typeof v === "object" ? JSON.stringify(v) : v,
        );
        await tx.query(
          `WITH saved AS (
            UPDATE dvault_pacer.pace SET state = $3, state_expires_at = ${DB_NOW_MS} + $4, holders = $5, queue = $6, alive = $7
             WHERE namespace = $1 AND key = $2 RETURNING 1
          )
          SELECT pg_notify($8, $9) FROM saved WHERE $9 IS NOT NULL`,
          [...values, CHANNEL, notice === undefined ? null : JSON.stringify([namespace, key, notice])],
        );
        return result;
      });
    },

    async read(key: string): Promise<Row | null> {
      await ready();
      const r = await pool.query(`SELECT ${COLUMNS} FROM dvault_pacer.pace WHERE namespace = $1 AND key = $2`, [namespace, key]);
      return r.rows[0] ? rowOf(r.rows[0]) : null;
    },

    async keys(): Promise<string[]> {
      await ready();
      const r = await pool.query(
        `SELECT key FROM dvault_pacer.pace
          WHERE namespace = $1 AND state <> '{}' AND state_expires_at > ${DB_NOW_MS}`,
        [namespace],
      );
      // Sorted as the Redis store sorts them (by code unit, not by the database's collation).
      return r.rows.map((row) => String(row.key)).sort();
    },

    listen: notices.listen,
    close: notices.close,
  };
}

/**
 * The LISTEN connection of one store: opened by the first wait that needs it, again after it is lost; its socket
 * does not keep a process alive (a waiter's own timer does).
 */
function noticeListener(pool: PgPool, namespace: string) {
  let listening: Promise<void> | undefined;
  let listener: pg.Client | undefined;
  return {
    listen(onNotice: (key: string, notice: string) => void): Promise<void> {
      listening ??= (async () => {
        const client = new pg.Client(pool.options);
        const lost = () => {
          // Heard no more: the next wait listens again; meanwhile waiting is polling.
          if (listener === client) listener = undefined;
          listening = undefined;
          client.end().catch(() => undefined);
        };
        client.on("error", lost);
        client.on("end", lost);
        client.on("notification", (msg) => {
          if (msg.channel !== CHANNEL || !msg.payload) return;
          const [ns, key, notice] = parseNotice(msg.payload);
          if (ns === namespace && key !== undefined && notice !== undefined) onNotice(key, notice);
        });
        listener = client;
        await client.connect();
        (client.connection.stream as Partial<Socket>).unref?.();
        await client.query(`LISTEN ${CHANNEL}`);
      })().catch((err: unknown) => {
        listening = undefined;
        throw err;
      });
      return listening;
    },

    async close(): Promise<void> {
      const client = listener;
      listener = undefined;
      listening = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
