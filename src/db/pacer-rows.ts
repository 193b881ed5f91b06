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
import { tableExists } from "./catalog.ts";
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

/** The rows of a simple query's last statement (pg answers an array when there were several). */
function lastRows(result: pg.QueryResult | pg.QueryResult[]): Array<Record<string, unknown>> {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return last?.rows ?? [];
}

/** Creates the schema and its table once per database, under an advisory lock; drops rows long forgotten. */
async function prepareSchema(pool: PgPool): Promise<void> {
  // Made already: only the sweep of forgotten rows, which a read-only database (a standby, a disk full) may refuse
  // without keeping the pace's reads from it.
  if (await tableExists(pool, "dvault_pacer", "pace")) {
    await pool.query(`DELETE FROM dvault_pacer.pace WHERE state_expires_at < ${DB_NOW_MS} AND holders = '{}' AND queue = '{}'`).catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== "25006") throw err;
    });
    return;
  }
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

  return {
    /**
     * Two round trips for a key in use (three on its first use): BEGIN and the locking read in one, the write, its
     * notice and COMMIT in another, each a simple query of several statements (values quoted by pg's
     * escapeLiteral, since a simple query takes no parameters); the row stays locked from the first to COMMIT or
     * ROLLBACK. A commit does not wait for its WAL to reach the disk (synchronous_commit off): what a crash of the
     * server could lose is the last moments of pace, which Redis's own persistence would lose too.
     */
    async change<T>(key: string, step: (row: Row) => T, notice?: string): Promise<T> {
      await ready();
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        const lit = (v: string) => client.escapeLiteral(v);
        const where = `namespace = ${lit(namespace)} AND key = ${lit(key)}`;
        const select = `SELECT ${COLUMNS} FROM dvault_pacer.pace WHERE ${where} FOR UPDATE`;
        let found = lastRows(await client.query(`BEGIN; SET LOCAL synchronous_commit TO off; ${select}`))[0];
        if (!found) {
          // The key's first use: two processes may both get here; the second waits on the first's row, then reads it.
          const insert = `INSERT INTO dvault_pacer.pace (namespace, key) VALUES (${lit(namespace)}, ${lit(key)}) ON CONFLICT DO NOTHING`;
          found = lastRows(await client.query(`${insert}; ${select}`))[0];
        }
        const row = found ? rowOf(found) : emptyRow();
        const result = step(row);
        const json = (v: Record<string, number>) => `${lit(JSON.stringify(v))}::jsonb`;
        const ttl = Number.isFinite(row.stateTtlMs) ? row.stateTtlMs : 0;
        const update = `UPDATE dvault_pacer.pace SET state = ${json(row.state)}, state_expires_at = ${DB_NOW_MS} + ${ttl},
          holders = ${json(row.holders)}, queue = ${json(row.queue)}, alive = ${json(row.alive)} WHERE ${where}`;
        const announce = notice === undefined ? "" : `SELECT pg_notify(${lit(CHANNEL)}, ${lit(JSON.stringify([namespace, key, notice]))}); `;
        await client.query(`${update}; ${announce}COMMIT`);
        return result;
      } catch (err) {
        await client.query("ROLLBACK").catch((rollbackError: unknown) => {
          // The connection is unusable: hand it back as broken so the pool discards it.
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
        throw err;
      } finally {
        client.release(broken);
      }
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
          if (listener !== client) return;
          listener = undefined;
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
