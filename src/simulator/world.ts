// The simulator's shared state and the types every route handler works with.
import type { SimClock } from "./clock.ts";
import type { Dataset, SimComment, SimDeviation, SimUser } from "./dataset.ts";
import { isGone, owner as datasetOwner } from "./dataset.ts";
import type { Params, Reply, UploadedFile } from "./http.ts";
import type { DownloadQuota } from "./quota.ts";
import type { Rng } from "./rng.ts";
import type { AccessToken, TokenStore } from "./tokens.ts";
import type { VelocityFilter } from "./velocity.ts";

/** The CDN's bandwidth cap and Range support (src/simulator/cdn.ts serves by them). */
export type CdnSettings = {
  /** Per-connection cap in bytes per second; null = as fast as the socket takes it. */
  bytesPerSecond: number | null;
  /** Range requests honoured (Accept-Ranges: bytes); false = always the whole file with 200. */
  ranges: boolean;
  /** The ETag sent with a 206 too, as RFC 9110 asks; false = left out of it, as some CDNs do (docs/service-behaviour.md#cdn-validators). */
  etagOnPartial: boolean;
  /**
   * A weak ETag (W/"…", the file's size here) instead of the strong one: the same for every version of one size, as a
   * server that re-encodes or transforms a file may keep it; If-Range compared as a string, as nginx compares it.
   */
  weakEtags: boolean;
};

export type SimMode = "current" | "legacy";

/** classic: the service as dvault first met it; "2026": current mode after the comment removals of 2026-08-31. */
export type SimProfile = "classic" | "2026";

/** How an over-quota /deviation/download answers: the 400 of today, or the bare 500 it first was. */
export type QuotaExhaustion = "400" | "500";

export type SimWorld = {
  mode: SimMode;
  profile: SimProfile;
  /** Offsets above this answer an empty last page (docs/service-behaviour.md#offset-ceiling). */
  offsetCeiling: number;
  quotaExhaustion: QuotaExhaustion;
  data: Dataset;
  clock: SimClock;
  /** For ids and content minted by writes; seeded, so a scripted run is reproducible. */
  rng: Rng;
  tokens: TokenStore;
  /** Base URL of the running server (set once listening). */
  baseUrl: string;
  /** HMAC key for signed CDN URLs. */
  cdnKey: Buffer;
  /** The CDN's bandwidth cap and Range support (changed through /_sim/cdn). */
  cdn: CdnSettings;
  /** Weekly original-download allowance per account (/deviation/download). */
  quota: DownloadQuota;
  /** The API's velocity filter (docs/service-behaviour.md#rate-limits); off unless set. */
  velocity: VelocityFilter;
  index: WorldIndex;
};

export type WorldIndex = {
  commentsByTarget: Map<string, SimComment[]>;
  /** Bumped by every write; derived lists cached under it are recomputed. */
  version: number;
  cache: Map<string, { version: number; value: unknown }>;
};

export type ApiCaller = {
  token: AccessToken;
  kind: "user" | "client";
  user: SimUser | undefined;
};

export type ApiContext = {
  world: SimWorld;
  method: string;
  path: string;
  /** Path parameters by placeholder name. */
  pathParams: Record<string, string>;
  params: Params;
  files: UploadedFile[];
  caller: ApiCaller;
};

export type RouteHandler = (ctx: ApiContext) => Reply;

export type ApiRoute = {
  methods: Array<"GET" | "POST">;
  /** Relative to /api/v1/oauth2, e.g. "/gallery/{folderid}". */
  template: string;
  /** Scopes the token needs (all of them). */
  scopes: string[];
  /** Client-credentials tokens are refused (the service answers 401 invalid_token). */
  userOnly?: boolean;
  /** Gone from the current service: answers 404 "Api endpoint not found." unless in legacy mode. */
  removed?: boolean;
  /** Gone since 2026-08-31: answers that 404 under profile "2026" (docs/service-behaviour.md#comments-removed-2026). */
  removedIn2026?: boolean;
  handler: RouteHandler;
};

export function commentKey(kind: string, id: string): string {
  return `${kind}:${kind === "profile" ? id.toLowerCase() : id}`;
}

export function buildIndex(data: Dataset): WorldIndex {
  const commentsByTarget = new Map<string, SimComment[]>();
  for (const c of data.comments) {
    const key = commentKey(c.target.kind, c.target.id);
    const list = commentsByTarget.get(key);
    if (list) list.push(c);
    else commentsByTarget.set(key, [c]);
  }
  return { commentsByTarget, version: 0, cache: new Map() };
}

/** Marks the dataset changed (derived lists are rebuilt on next use). */
export function touch(world: SimWorld): void {
  world.index.version++;
}

export function cached<T>(world: SimWorld, key: string, compute: () => T): T {
  const hit = world.index.cache.get(key);
  if (hit && hit.version === world.index.version) return hit.value as T;
  const value = compute();
  world.index.cache.set(key, { version: world.index.version, value });
  return value;
}

export function ownerOf(world: SimWorld): SimUser {
  return datasetOwner(world.data);
}

/** The user the request acts as: the token's user, or the dataset owner for client tokens. */
export function actingUser(ctx: ApiContext): SimUser {
  return ctx.caller.user ?? ownerOf(ctx.world);
}

/** Whether mature items are visible to this request: never for client tokens (docs/service-behaviour.md#public-token-hides-mature); for users only when asked. */
export function showsMature(ctx: ApiContext): boolean {
  if (ctx.caller.kind === "client") return false;
  // The service's `mature_content=false` does not filter reliably (docs/service-behaviour.md#mature-content-param):
  // any explicit value shows them.
  return ctx.params.has("mature_content");
}

export function visibleDeviation(ctx: ApiContext, d: SimDeviation): boolean {
  if (d.isDeleted) return false;
  if (d.isMature && !showsMature(ctx)) return false;
  // docs/service-behaviour.md#user-error-codes: a gone user's works leave other people's listings.
  return !isGone(ctx.world.data.users.get(d.authorId));
}
