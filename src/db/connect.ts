// Opens PostgreSQL connections and turns connection failures into one clear line.
import pg from "pg";
import { DatabaseNotReadyError, ServiceUnavailableError, UserError } from "../errors.ts";
import { maskUrl } from "../redact.ts";
import { pgFields, withDatabase } from "./pg-fields.ts";
import { StorableTextClient } from "./storable-text.ts";

const START_HINT =
  "Start it (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start, or docker compose up -d postgres) or point DATABASE_URL at a running server.";

type PgError = Error & { code?: string };

/** The process's pool, as the layers above name it (they import no database driver: scripts/checks/sql-in-db.ts). */
export type PgPool = pg.Pool;

/** Maps a pg connection error to a UserError that says what to do. */
export function explainPgError(err: unknown, url: string): Error {
  const e = err as PgError;
  const fields = pgFields(url);
  switch (e.code) {
    case "ECONNREFUSED":
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ECONNRESET":
      return new ServiceUnavailableError("PostgreSQL", maskUrl(url), e.code, START_HINT);
    case "3D000":
      return databaseNotReady(url, "does not exist");
    case "28P01":
    case "28000":
      return new UserError(`PostgreSQL at ${maskUrl(url)} refused user "${fields.user}" (${e.message}). Check the user and password in DATABASE_URL.`);
    default:
      if (/does not support SSL/i.test(e.message ?? "") || TLS_TRUST.test(e.code ?? "")) return sslRefusal(e, url);
      if (/timeout/i.test(e.message ?? "")) {
        return new ServiceUnavailableError("PostgreSQL", maskUrl(url), "connection timed out", START_HINT);
      }
      return err instanceof Error ? err : new Error(String(err));
  }
}

/** Node's codes for a server certificate it cannot verify (an unknown CA, a self-signed one, another host's name). */
const TLS_TRUST =
  /^(UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT(_LOCALLY)?|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_HAS_EXPIRED|ERR_TLS_CERT_ALTNAME_INVALID)$/;

/** DATABASE_URL's sslmode and what the server did with it, in one line that says what to change. */
function sslRefusal(e: PgError, url: string): UserError {
  const mode = new URL(url).searchParams.get("sslmode") ?? "require";
  if (!TLS_TRUST.test(e.code ?? "")) {
    return new UserError(
      `PostgreSQL at ${maskUrl(url)} takes no SSL connections, and DATABASE_URL's sslmode=${mode} has dvault connect with SSL only: leave sslmode out (or set it to disable), or turn ssl on in the server's postgresql.conf`,
    );
  }
  return new UserError(
    `PostgreSQL at ${maskUrl(url)} offered a certificate that cannot be verified (${e.code}), which DATABASE_URL's sslmode=${mode} requires: give the server a certificate from a trusted CA, or name its CA's file in NODE_EXTRA_CA_CERTS`,
  );
}

/** The one line for a database that is not dvault's yet (src/errors.ts#DatabaseNotReadyError), from DATABASE_URL. */
export function databaseNotReady(url: string, problem: string): DatabaseNotReadyError {
  const { database, host, port } = pgFields(url);
  return new DatabaseNotReadyError(database, `${host}:${port}`, problem);
}

export async function connectPg(url: string, timeoutMs = 5000): Promise<pg.Client> {
  const client = new StorableTextClient({ ...pgFields(url), connectionTimeoutMillis: timeoutMs });
  client.on("error", () => {
    /* a dropped connection surfaces on the next query */
  });
  try {
    await client.connect();
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw explainPgError(err, url);
  }
}

/**
 * The process's pool of `max` connections; a query that finds every one in use waits `connectionTimeoutMs` for
 * one, then fails with pg-pool's timeout (src/db/pool-errors.ts tells it apart: the dashboard answers it 503).
 */
export function createPgPool(url: string, max = 5, { connectionTimeoutMs = 5000 }: { connectionTimeoutMs?: number } = {}): pg.Pool {
  // Every write of the raw-SQL repositories goes through this pool: its clients make text storable (docs/schema.md#text-from-the-service).
  // No JIT compilation and no parallel workers on the pool's connections: the dashboard's larger statements (search's
  // union of four kinds, the grid's page) have cost estimates past jit_above_cost and the parallel thresholds while
  // they read a few thousand rows by index; compiling took 240 ms of a 250 ms search on a million works, and starting
  // workers 150 ms of a 200 ms one on a busy machine (bench/archive-scale.ts). Set at connection start, so no query
  // of the pool runs without them.
  const pool = new pg.Pool({
    ...pgFields(url),
    max,
    connectionTimeoutMillis: connectionTimeoutMs,
    Client: StorableTextClient,
    options: "-c jit=off -c max_parallel_workers_per_gather=0",
  });
  pool.on("error", () => {
    /* idle client errors are reported by the next checkout */
  });
  // pg-pool drops its own listener while a client is checked out (a transaction between statements): a
  // server restart then would emit "error" with no listener and kill the process. The client is marked
  // unusable either way; its next query fails and the pool discards it.
  pool.on("connect", (client) => client.on("error", () => undefined));
  return pool;
}

/** Creates the database named in `url` when it does not exist. Returns true when it was created. */
export async function ensureDatabase(url: string): Promise<boolean> {
  const { database } = pgFields(url);
  const admin = await connectAdmin(url);
  try {
    const found = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (found.rowCount) return false;
    try {
      await admin.query(`CREATE DATABASE ${quoteIdent(database)}`);
    } catch (err) {
      // Another process created it between the check and the CREATE.
      if ((err as PgError).code === "42P04") return false;
      throw explainPgError(err, url);
    }
    return true;
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/** Drops the database named in `url` (the demo's own), closing its connections. */
export async function dropDatabase(url: string): Promise<void> {
  const admin = await connectPg(withDatabase(url, "postgres"));
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(pgFields(url).database)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** A connection to the server's maintenance database; errors name the URL the user gave. */
async function connectAdmin(url: string): Promise<pg.Client> {
  for (const maintenance of ["postgres", "template1"]) {
    const client = new pg.Client({ ...pgFields(url), database: maintenance, connectionTimeoutMillis: 5000 });
    client.on("error", () => undefined);
    try {
      await client.connect();
      return client;
    } catch (err) {
      await client.end().catch(() => undefined);
      if ((err as PgError).code !== "3D000") throw explainPgError(err, url);
    }
  }
  throw new UserError(`PostgreSQL at ${maskUrl(url)} has neither a "postgres" nor a "template1" database to connect to.`);
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
