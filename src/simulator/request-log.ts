// The simulator's record of what it was asked: one entry per request (the control API aside), capped in
// length, and counts per route and status for tests that check how a client spends its calls.
import { API_PREFIX } from "./faults.ts";
import type { ParamMap } from "./http.ts";

export type RequestLogEntry = {
  seq: number;
  /** Simulated time, ISO. */
  at: string;
  /** Date.now() when received. */
  realMs: number;
  method: string;
  /** As received, without the query. */
  path: string;
  /** Template, e.g. "/api/v1/oauth2/gallery/{folderid}" or "/oauth2/token"; "(unknown)" when unrouted. */
  route: string;
  query: ParamMap;
  form: ParamMap;
  /** 0 when the socket was reset. */
  status: number;
  auth: "bearer" | "query" | "body" | "basic" | "none";
  userId?: string;
  clientId?: string;
  fault?: string;
};

export type RouteStats = Record<string, { count: number; byStatus: Record<string, number> }>;

function shortRoute(route: string): string {
  return route.startsWith(`${API_PREFIX}/`) ? route.slice(API_PREFIX.length) : route;
}

export class RequestLog {
  private entries: RequestLogEntry[] = [];
  private seq = 0;

  /** Oldest entries are dropped beyond `limit`, so a long-running simulator stays small. */
  constructor(private readonly limit: number) {}

  /** A new entry for a request received now; the caller fills in what it learns while handling it. */
  start(entry: Omit<RequestLogEntry, "seq">): RequestLogEntry {
    const full: RequestLogEntry = { seq: ++this.seq, ...entry };
    this.entries.push(full);
    if (this.entries.length > this.limit) this.entries.splice(0, this.entries.length - this.limit);
    return full;
  }

  list(): RequestLogEntry[] {
    return this.entries.slice();
  }

  clear(): void {
    this.entries = [];
  }

  /** Keyed by method and route template relative to the API root ("GET /gallery/{folderid}"). */
  stats(): RouteStats {
    const out: RouteStats = {};
    for (const e of this.entries) {
      const key = `${e.method} ${shortRoute(e.route)}`;
      const s = (out[key] ??= { count: 0, byStatus: {} });
      s.count++;
      s.byStatus[String(e.status)] = (s.byStatus[String(e.status)] ?? 0) + 1;
    }
    return out;
  }
}
