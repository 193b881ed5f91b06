// The raw repositories' statements run through Prisma: a Queryable over the Prisma client or one of its
// interactive transactions, so a repository method written for pg runs unchanged on either path, and one
// Prisma transaction can hold an account write (the Prisma model) and mirror writes (raw statements).
// What comes back is made to read as pg returns it, so the repositories' row types stay true: int8 as a
// decimal string (Prisma: bigint), numeric as a string (Prisma: Decimal; its value, not its scale: "8.5"
// where pg says "8.5000000000000000", so a statement casts where the digits matter), a failed statement's SQLSTATE
// in `code` (Prisma: P2010 with the driver's code inside), `rowCount` as pg counts it.
//
// Cost: Prisma's raw path adds about 3 ms to a statement whose parameter is a page of rows as JSON (about
// 48 KB: 4.5 ms against 1.1 ms on pg, measured on the development machine) and about 1 ms to a small one.
// The sync pages (src/sync/run-source.ts) therefore still run on the pool with withTransaction, which
// docs/PERFORMANCE.md's ingest ratios would not absorb; a transaction that must hold an account write
// and mirror writes together uses withPrismaTransaction. Through Prisma run the low-volume writers, a few
// small statements a run: the digest's rows (src/digest/run-digest.ts), the alerts job's incidents
// (jobs/alerts/handler.ts), the gallery-dl import's record of each file (src/import/gallery-dl/adopt.ts).
// The full list, kept in step with this one: docs/ARCHITECTURE.md#db.
import type pg from "pg";
import type { Queryable } from "./with-transaction.ts";

/** The raw-query methods of a Prisma client or of its transaction client. */
export type PrismaRaw = {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
};

/**
 * A statement that changes rows and returns none: its count comes from $executeRawUnsafe. Anything else
 * (SELECT, a CTE ending in SELECT, a write with RETURNING) returns rows, and pg's rowCount is their number.
 * "FOR UPDATE" is a lock clause of a SELECT, not a write.
 */
const WRITE = /\b(?:INSERT\s+INTO|UPDATE\s+["\w.]+\s+(?:(?:AS\s+)?\w+\s+)?SET|DELETE\s+FROM)\b/i;
const RETURNING = /\bRETURNING\b/i;

export function returnsRows(text: string): boolean {
  return !WRITE.test(text) || RETURNING.test(text);
}

/** A value of a row as pg's default type parsers give it. */
function asPg(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(asPg);
  if (isDecimal(value)) return value.toString();
  return value;
}

/** Prisma's Decimal (decimal.js: digits `d`, exponent `e`, sign `s`; its class name is minified): numeric columns and sums of int8. */
function isDecimal(value: unknown): value is { toString(): string } {
  const v = value as { d?: unknown; e?: unknown; s?: unknown; toFixed?: unknown } | null;
  return typeof v === "object" && v !== null && Array.isArray(v.d) && typeof v.e === "number" && typeof v.s === "number" && typeof v.toFixed === "function";
}

function asPgRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = asPg(v);
  return out;
}

type DriverFailure = { code?: string; meta?: { driverAdapterError?: { cause?: { originalCode?: string; originalMessage?: string } } } };

/** Prisma's "raw query failed" carries the database's SQLSTATE inside; callers test `code` as with pg. */
function asPgError(err: unknown): unknown {
  const cause = (err as DriverFailure).meta?.driverAdapterError?.cause;
  if ((err as DriverFailure).code !== "P2010" || !cause?.originalCode) return err;
  const e = new Error(cause.originalMessage ?? (err as Error).message, { cause: err }) as Error & { code: string };
  e.code = cause.originalCode;
  return e;
}

/** The Prisma client, or a transaction client of `$transaction(async (tx) => ...)`, as a Queryable. */
export function prismaQueryable(client: PrismaRaw): Queryable {
  return {
    async query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<pg.QueryResult<R>> {
      try {
        if (!returnsRows(text)) {
          const count = await client.$executeRawUnsafe(text, ...values);
          return { rows: [], rowCount: count, command: "", oid: 0, fields: [] };
        }
        const rows = (await client.$queryRawUnsafe<Array<Record<string, unknown>>>(text, ...values)).map(asPgRow) as R[];
        return { rows, rowCount: rows.length, command: "", oid: 0, fields: [] };
      } catch (err) {
        throw asPgError(err);
      }
    },
  };
}

/** The interactive transaction of a Prisma client: what `$transaction(fn)` hands `fn`. */
export type PrismaTransactional<Tx extends PrismaRaw> = {
  $transaction<T>(fn: (tx: Tx) => Promise<T>, options?: { maxWait?: number; timeout?: number }): Promise<T>;
};

/**
 * Runs `fn` in one Prisma transaction: `tx` for the Prisma models (accounts), `sql` for the raw
 * repositories; both commit together or not at all. Like withTransaction, no practical time limit (Prisma's default is 5 s).
 */
export function withPrismaTransaction<Tx extends PrismaRaw, T>(
  prisma: PrismaTransactional<Tx>,
  fn: (ctx: { tx: Tx; sql: Queryable }) => Promise<T>,
  { timeoutMs = 300_000 }: { timeoutMs?: number } = {},
): Promise<T> {
  return prisma.$transaction((tx) => fn({ tx, sql: prismaQueryable(tx) }), { maxWait: timeoutMs, timeout: timeoutMs });
}
