// Fault injection: rules that make the next N (or a random share of) matching requests fail the way
// the real service fails — throttles (docs/service-behaviour.md#throttle-429), CDN blocks (#cdn-block-403),
// 5xx (#server-5xx), the token endpoint's "Unknown grant_type" (#unknown-grant-type), truncated JSON, reset
// sockets, latency; and, for testing how a client reads, answers of a shape it cannot read (wrong_shape,
// broken_item: not a claim about the service, a tool for docs/service-behaviour.md#tolerant-reading).
import type { Reply } from "./http.ts";
import { errorBody, json } from "./http.ts";
import type { Rng } from "./rng.ts";

export type FaultKind =
  | "user_throttle"
  | "app_throttle"
  | "cdn_block"
  | "status_500"
  | "status_502"
  | "status_503"
  | "malformed_json"
  | "reset"
  | "reset_mid_body"
  | "latency"
  /** /oauth2/token only: the request is not processed and answers 400 "Unknown grant_type". */
  | "unknown_grant_type"
  /** A readable JSON answer of the wrong shape: the page's array of items is replaced by a string. */
  | "wrong_shape"
  /** One item of the page (the first) is broken: its id field is null. */
  | "broken_item"
  /** The endpoint answers as the service answers a removed one (docs/service-behaviour.md#endpoint-removed). */
  | "gone";

export const FAULT_KINDS: readonly FaultKind[] = [
  "user_throttle",
  "app_throttle",
  "cdn_block",
  "status_500",
  "status_502",
  "status_503",
  "malformed_json",
  "reset",
  "reset_mid_body",
  "latency",
  "unknown_grant_type",
  "wrong_shape",
  "broken_item",
  "gone",
];

export type FaultRule = {
  /**
   * Substring of the path as received, or a route template ("/gallery/{folderid}"); ending in "$", the end of the
   * path ("/notes$": the notes listing, not /notes/folders).
   */
  route?: string;
  method?: string;
  kind: FaultKind;
  /** Apply to the next N matching requests (default 1); with `probability`, at most N times (a budget). */
  times?: number;
  /** Apply to each matching request with this probability (seeded RNG), until cleared or `times` is spent. */
  probability?: number;
  /**
   * Apply to every `every`-th matching request (the 25th, the 50th, ...), until cleared or `times` is spent: a
   * steady share of 5xx, as a loaded server gives (docs/service-behaviour.md#server-5xx).
   */
  every?: number;
  latencyMs?: number;
  /**
   * reset_mid_body: body bytes sent before the connection is cut (default: half the body). For the CDN
   * this counts from the first byte of that response (a 206 from offset X cuts at X + atByte).
   */
  atByte?: number;
};

export type MatchTarget = {
  method: string;
  path: string;
  /** The full route template, e.g. "/api/v1/oauth2/gallery/{folderid}", or undefined when unrouted. */
  template: string | undefined;
};

export type FaultDecision = { latencyMs: number; fault: FaultRule | undefined; applied: string[] };

type LiveRule = FaultRule & { remaining: number; seen: number };

export const API_PREFIX = "/api/v1/oauth2";

const TOKEN_PATH = "/oauth2/token";

/** Faults that only the token endpoint can answer. */
function tokenOnly(kind: FaultKind): boolean {
  return kind === "unknown_grant_type";
}

function routeMatches(rule: FaultRule, target: MatchTarget): boolean {
  if (tokenOnly(rule.kind)) return target.path === TOKEN_PATH;
  const isApi = target.path === API_PREFIX || target.path.startsWith(`${API_PREFIX}/`);
  if (!rule.route) return isApi;
  const r = rule.route;
  // The token endpoint and the CDN are faulted only by rules that name them.
  if (!isApi && !(r.startsWith("/oauth2") || r.startsWith("oauth2") || r.startsWith("/_cdn") || r.startsWith("_cdn"))) return false;
  if (r.endsWith("$")) return target.path.endsWith(r.slice(0, -1));
  if (target.path.includes(r)) return true;
  if (target.template !== undefined) {
    if (target.template === r || target.template.endsWith(r.startsWith("/") ? r : `/${r}`)) return true;
    if (r.includes("{") && target.template.includes(r)) return true;
  }
  return false;
}

export class FaultStore {
  private rules: LiveRule[] = [];

  constructor(private readonly rng: Rng) {}

  add(rule: FaultRule): void {
    if (!(FAULT_KINDS as readonly string[]).includes(rule.kind)) throw new Error(`unknown fault kind "${String(rule.kind)}"`);
    if (tokenOnly(rule.kind) && rule.route !== undefined && !TOKEN_PATH.endsWith(rule.route.replace(/^\/?/, "/"))) {
      throw new Error(`fault kind "${rule.kind}" applies only to ${TOKEN_PATH}; leave route out or name it`);
    }
    if (rule.every !== undefined && !(Number.isInteger(rule.every) && rule.every >= 1)) throw new Error("fault rule: every expects a whole number >= 1");
    const open = rule.probability !== undefined || rule.every !== undefined;
    const remaining = open ? (rule.times !== undefined ? Math.max(1, rule.times) : Number.POSITIVE_INFINITY) : Math.max(1, rule.times ?? 1);
    this.rules.push({ ...rule, remaining, seen: 0 });
  }

  clear(): void {
    this.rules = [];
  }

  list(): FaultRule[] {
    return this.rules.map(({ remaining, seen: _seen, ...rule }) => ({ ...rule, ...(Number.isFinite(remaining) ? { times: remaining } : {}) }));
  }

  /** Decides, and consumes, the faults for one request: every matching latency rule plus the first other one. */
  decide(target: MatchTarget): FaultDecision {
    let latencyMs = 0;
    let fault: FaultRule | undefined;
    const applied: string[] = [];
    for (const rule of this.rules) {
      if (rule.remaining <= 0) continue;
      if (rule.method && rule.method.toUpperCase() !== target.method) continue;
      if (!routeMatches(rule, target)) continue;
      if (rule.kind !== "latency" && fault) continue;
      if (rule.every !== undefined && ++rule.seen % rule.every !== 0) continue;
      if (rule.probability !== undefined && !(this.rng.next() < rule.probability)) continue;
      rule.remaining -= 1;
      if (rule.kind === "latency") {
        latencyMs += rule.latencyMs ?? 1000;
        applied.push("latency");
      } else {
        fault = rule;
        applied.push(rule.kind);
      }
    }
    this.rules = this.rules.filter((r) => r.remaining > 0);
    return { latencyMs, fault, applied };
  }
}

export const CDN_BLOCK_HTML = `<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN" "http://www.w3.org/TR/html4/loose.dtd">
<HTML><HEAD><META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=iso-8859-1">
<TITLE>ERROR: The request could not be satisfied</TITLE>
</HEAD><BODY>
<H1>403 ERROR</H1>
<H2>The request could not be satisfied.</H2>
<HR noshade size="1px">
Request blocked.
We can't connect to the server for this app or website at this time. There might be too much traffic or a configuration error. Try again later, or contact the app or website owner.
<BR clear="all">
If you provide content to customers through CloudFront, you can find steps to troubleshoot and help prevent this error by reviewing the CloudFront documentation.
<BR clear="all">
<HR noshade size="1px">
<PRE>
Generated by cloudfront (CloudFront)
Request ID: SIMULATED-REQUEST-ID-0000000000000000000000000000==
</PRE>
<ADDRESS>
</ADDRESS>
</BODY></HTML>`;

const BAD_GATEWAY_HTML = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
</body>
</html>`;

/** The reply a fault produces; `reset`, `reset_mid_body` and `latency` have none (handled by the server). */
export function faultReply(kind: FaultKind): Reply | undefined {
  switch (kind) {
    case "user_throttle":
      return json(429, errorBody("user_api_threshold", "User request limit reached."));
    case "app_throttle":
      return json(429, errorBody("application_api_threshold", "Client request limit reached."));
    case "cdn_block":
      return { status: 403, text: CDN_BLOCK_HTML, contentType: "text/html", headers: { server: "CloudFront", "x-cache": "Error from cloudfront" } };
    case "status_500":
      return json(500, errorBody("server_error", "Internal server error"));
    case "status_502":
      return { status: 502, text: BAD_GATEWAY_HTML, contentType: "text/html" };
    case "status_503":
      return json(503, errorBody("service_unavailable", "DeviantArt is down for maintenance. Please try again later."));
    case "gone":
      return json(404, errorBody("invalid_request", "Api endpoint not found."));
    case "unknown_grant_type":
      // The body shape is UNCERTAIN (docs/service-behaviour.md#unknown-grant-type): it shares `error` with a
      // refused refresh token on purpose, the hard case for a client.
      return json(400, errorBody("invalid_request", "Unknown grant_type"));
    case "malformed_json":
    case "reset":
    case "reset_mid_body":
    case "latency":
    case "wrong_shape":
    case "broken_item":
      return undefined;
    default: {
      const never: never = kind;
      throw new Error(`unhandled fault kind ${String(never)}`);
    }
  }
}

const ITEM_KEYS = ["results", "items", "thread", "metadata"];
const ID_KEYS = ["deviationid", "noteid", "messageid", "commentid", "folderid", "userid"];

/**
 * The JSON body of an API answer, made unreadable the way `kind` says: wrong_shape replaces the array of
 * items by a string; broken_item nulls the first item's id field. Bodies without such an array are kept.
 */
export function corruptBody(kind: "wrong_shape" | "broken_item", body: unknown): unknown {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return body;
  const out = { ...(body as Record<string, unknown>) };
  const key = ITEM_KEYS.find((k) => Array.isArray(out[k]));
  if (!key) return out;
  if (kind === "wrong_shape") {
    out[key] = "unavailable";
    return out;
  }
  const items = [...(out[key] as unknown[])];
  const first = items[0];
  if (first && typeof first === "object") {
    const item = { ...(first as Record<string, unknown>) };
    const id = ID_KEYS.find((k) => k in item);
    if (id) item[id] = null;
    else if (item.user && typeof item.user === "object") item.user = { ...(item.user as Record<string, unknown>), userid: null };
    items[0] = item;
  }
  out[key] = items;
  return out;
}
