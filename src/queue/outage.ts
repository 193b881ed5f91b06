// Tells a job that failed because PostgreSQL or Redis was away (restarting, failing over, unreachable), because
// PostgreSQL refused its writes (read-only: a standby, default_transaction_read_only; its disk full), or because
// PostgreSQL aborted its transaction to break a deadlock, from one that failed on its own: the first three are no
// fault of the job, so it runs again soon without spending an attempt (a long database restart or a read-only spell
// must not exhaust every job's retries and leave its files failed; a deadlock victim should just try again), the
// last is retried with backoff.
import { RequestError } from "got";
import { ServiceUnavailableError } from "../errors.ts";
import { isRemoteServiceError } from "./job-definition.ts";

export type Outage = { kind: "outage" | "refused" | "conflict"; service: "PostgreSQL" | "Redis" | "PostgreSQL or Redis"; reason: string };

/** SQLSTATEs of a server that is going away or not there yet: connection exceptions, shutdown, start-up, no slots. */
const PG_UNAVAILABLE = /^(08...|57P0[123]|53300)$/;
/** A server that is there but refuses writes: read_only_sql_transaction, disk_full (src/errors.ts explainPgRefusal). */
const PG_REFUSED = /^(25006|53100)$/;
/** Deadlock victim, serialization failure: the transaction was rolled back and may simply run again. */
const PG_CONFLICT = /^(40P01|40001)$/;
/** Prisma's "can't reach / closed the connection / timed out / no connection from the pool". */
const PRISMA_UNAVAILABLE = new Set(["P1001", "P1002", "P1008", "P1017", "P2024"]);
/** The driver adapter's kinds for the same. */
const ADAPTER_UNAVAILABLE = new Set(["DatabaseNotReachable", "ConnectionClosed", "SocketTimeout", "TooManyConnections"]);
/** pg's and pg-pool's own messages for a connection lost or never made. */
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

type ErrorShape = Error & { code?: unknown; errorCode?: unknown; syscall?: unknown; cause?: unknown; service?: unknown };

/**
 * What a repeated failure is warned of once by (src/queue/log-every-minute.ts, redis-loss-guard.ts): a store away or
 * refusing, whatever its words (a refused connect and a closed one are one outage), else the error itself.
 */
export function failureKind(err: unknown): string {
  const outage = outageOf(err);
  if (outage) return `store ${outage.kind}`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** The outage or conflict behind `err` (or its causes), if any. The service's own API and CDN failures never count. */
export function outageOf(err: unknown): Outage | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = (e as ErrorShape).cause, depth++) {
    if (isRemoteServiceError(e) || e instanceof RequestError) return undefined;
    const found = classify(e as ErrorShape);
    if (found) return found;
  }
  return undefined;
}

function classify(e: ErrorShape): Outage | undefined {
  const reason = e.message.trim().split("\n").pop()!.slice(0, 200);
  const code = typeof e.code === "string" ? e.code : typeof e.errorCode === "string" ? e.errorCode : undefined;
  const outage = (service: Outage["service"]): Outage => ({ kind: "outage", service, reason });
  const conflict: Outage = { kind: "conflict", service: "PostgreSQL", reason };
  const refused: Outage = { kind: "refused", service: "PostgreSQL", reason };
  if (e instanceof ServiceUnavailableError) return { kind: "outage", service: e.service, reason: e.reason };
  if (e.name.startsWith("PrismaClient") && code && PRISMA_UNAVAILABLE.has(code)) return outage("PostgreSQL");
  if (e.name.startsWith("PrismaClient") && code === "P2034") return conflict;
  // Prisma's driver adapter: the pg error mapped to a plain object under `cause`.
  if (e.name === "DriverAdapterError" && typeof e.cause === "object" && e.cause !== null) {
    const cause = e.cause as { kind?: unknown; code?: unknown; originalCode?: unknown };
    const sqlState = typeof cause.originalCode === "string" ? cause.originalCode : typeof cause.code === "string" ? cause.code : "";
    if ((typeof cause.kind === "string" && ADAPTER_UNAVAILABLE.has(cause.kind)) || PG_UNAVAILABLE.test(sqlState)) return outage("PostgreSQL");
    if (PG_REFUSED.test(sqlState)) return refused;
    if (cause.kind === "TransactionWriteConflict" || PG_CONFLICT.test(sqlState)) return conflict;
  }
  if (code && "severity" in e && PG_UNAVAILABLE.test(code)) return outage("PostgreSQL");
  if (code && "severity" in e && PG_REFUSED.test(code)) return refused;
  if (code && "severity" in e && PG_CONFLICT.test(code)) return conflict;
  if (PG_MESSAGES.test(e.message)) return outage("PostgreSQL");
  if (e.name === "MaxRetriesPerRequestError" || e.message === "Connection is closed.") return outage("Redis");
  // A socket error that is neither the API's nor the CDN's (those are excluded above): one of the two stores.
  if (code && SOCKET_CODES.has(code) && typeof e.syscall === "string") return outage("PostgreSQL or Redis");
  return undefined;
}
