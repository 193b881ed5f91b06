// What startSimulator takes (SimulatorOptions) and what it hands back (Simulator): the handle tests, the
// demo and the CLI drive the simulated service through, with its defaults.
import type { ActivityInput } from "./activity.ts";
import type { CdnHook } from "./cdn.ts";
import type { ClockMode } from "./clock.ts";
import type { DatasetOptions, GroundTruth } from "./dataset.ts";
import type { FaultRule } from "./faults.ts";
import type { QuotaStatus } from "./quota.ts";
import type { RequestLogEntry } from "./request-log.ts";
import type { SimClient } from "./tokens.ts";
import type { BucketPageKey } from "./dataset/model.ts";
import type { VelocityKeyState, VelocitySettings } from "./velocity.ts";
import type { CdnSettings, QuotaExhaustion, SimMode, SimProfile } from "./world.ts";

export type SimulatorOptions = {
  /** 0 = ephemeral (default). */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  seed?: number;
  /** Dataset sizes, plus hostileNames and largeFiles for the downloads work. */
  dataset?: DatasetOptions;
  /** current: removed endpoints answer the real 404; legacy: they answer with data. */
  mode?: SimMode;
  accessTokenLifetimeS?: number;
  clients?: SimClient[];
  /** /oauth2/authorize redirects straight back with a code (default true); otherwise it serves an approve page. */
  autoApprove?: boolean;
  /** Initial simulated time (default 2026-11-02T09:00:00Z). */
  startTime?: Date;
  /** "frozen" (default): simulated time moves only when advanced; "real": it also follows the wall clock. */
  clockMode?: ClockMode;
  /** Added to every request (ms of real time), before faults. */
  latencyMs?: number;
  /** Extension point for the CDN (/_cdn/*): a hook may answer a request itself. */
  cdnHooks?: CdnHook[];
  /** Weekly original downloads per account (/deviation/download), default 10 (a free account). */
  downloadQuota?: number;
  /** Per-connection bandwidth cap of the CDN in bytes per second (default: none). */
  cdnBytesPerSecond?: number;
  /** Whether the CDN honours Range requests (default true). */
  cdnRanges?: boolean;
  /** Original sizes in bytes by deviationid (streamed, so 1 GB is fine). */
  fileSizes?: Record<string, number>;
  /** Oldest request-log entries are dropped beyond this many (default 200 000), so a long-running CLI stays small. */
  logLimit?: number;
  /**
   * Draw what the real service allows beyond the base dataset, seeded (default off; see dataset.variance and
   * `Simulator.variance`): unfiled gallery deviations, second folders, empty folders, gone authors of favourites,
   * locked premium works, and the page key of /feed/home/{bucketid}. Same as `dataset.variance`.
   */
  variance?: boolean;
  /** "classic" (default): as today. "2026": current mode, and the comment endpoints removed on 2026-08-31 answer 404. */
  profile?: SimProfile;
  /** Offsets above this answer an empty last page on every offset listing (default 10 000). */
  offsetCeiling?: number;
  /** "400" (default): over-quota downloads answer "Free download limit reached."; "500": a bare HTTP 500, as in March 2026. */
  quotaExhaustion?: QuotaExhaustion;
  /**
   * The API's velocity filter (docs/service-behaviour.md#rate-limits), e.g. `{ limit: 120, windowMs: 60_000,
   * decayMs: 20_000 }`: per user (or client) a leaky bucket draining at limit/windowMs; a request into a full
   * bucket answers the service's 429 and trips it; tripped, it refuses everything until decayMs pass without a
   * request. Default: off. Changed at runtime with `setVelocity` or POST /_sim/velocity.
   */
  velocity?: VelocitySettings;
};

/** What variance drew for this instance (`enabled` false: the defaults). */
export type SimVariance = { enabled: boolean; bucketKey: BucketPageKey };

export type Simulator = {
  url: string;
  apiUrl: string;
  clock: { now(): Date; advance(ms: number): void; set(date: Date): void };
  truth: GroundTruth;
  faults: { add(rule: FaultRule): void; clear(): void };
  log(): RequestLogEntry[];
  clearLog(): void;
  /** Keyed by method and route template relative to the API root ("GET /gallery/{folderid}", "POST /oauth2/token"). */
  stats(): Record<string, { count: number; byStatus: Record<string, number> }>;
  issueUserToken(opts?: { clientId?: string; userId?: string; scopes?: string[] }): {
    access_token: string;
    refresh_token: string;
    expires_in: number;
    scope: string;
  };
  issueClientToken(opts?: { clientId?: string }): { access_token: string; expires_in: number };
  expireAccessTokens(): void;
  /** Changes the world as if users had been active (see ActivityInput). */
  activity(input: ActivityInput): Record<string, unknown>;
  /** The exact bytes /_cdn serves for a deviation's original file (small files only; see fileSha256). */
  fileBytes(deviationid: string): Promise<Buffer>;
  /** sha256 (hex) of a deviation's original as the CDN serves it, computed by streaming and cached. */
  fileSha256(deviationid: string): Promise<string>;
  /** Size in bytes of a deviation's original. */
  fileSize(deviationid: string): number;
  /** Successful /deviation/download calls of this user (or "client:<clientId>") in the current simulated week. */
  quotaUsed(userId: string): number;
  /** Allowance, usage and the next reset of a user's weekly quota. */
  quotaStatus(userId: string): QuotaStatus;
  /** Sets the weekly allowance of one user, or (without userId) of everyone without their own. */
  setDownloadQuota(opts: { userId?: string; allowance: number }): void;
  /** Changes the CDN's bandwidth cap (null = none) and Range support, effective immediately (mid-transfer too). */
  setCdn(settings: Partial<CdnSettings>): CdnSettings;
  /** Switches the velocity filter on with these settings, or off (null); its buckets start empty. */
  setVelocity(settings: VelocitySettings | null): void;
  /** The filter's settings (null: off) and each bucket: fill level, whether tripped, the last refusal. */
  velocity(): { settings: VelocitySettings | null; keys: VelocityKeyState[] };
  /**
   * Serves the same simulator over TLS too, on a port of its own, with a certificate the caller made (one for
   * www.deviantart.com lets a program that only talks to the real service reach it through a CONNECT proxy).
   * Links in answers given over TLS (CDN URLs, OAuth redirects) use the origin the request named in its Host.
   */
  listenTls(opts: { key: string | Buffer; cert: string | Buffer; host?: string; port?: number }): Promise<{ port: number }>;
  mode: SimMode;
  profile: SimProfile;
  variance: SimVariance;
  close(): Promise<void>;
};

export const DEFAULT_START_TIME = new Date("2026-11-02T09:00:00Z");
/**
 * Each client's whitelist (docs/service-behaviour.md#redirect-whitelist): `dvault auth login`'s listener and the
 * dashboard's own callback at its default address (src/http/routes/connect.ts), as a person registers them.
 */
const DASHBOARD_CALLBACKS = ["http://127.0.0.1:8787/oauth/callback", "http://localhost:8787/oauth/callback"];
export const DEFAULT_CLIENTS: SimClient[] = [
  {
    clientId: "1001",
    clientSecret: "sim-secret-1001",
    // The https URI lets the implicit grant (https only) be exercised.
    redirectUris: ["http://127.0.0.1:8788/callback", "https://127.0.0.1:8788/callback", ...DASHBOARD_CALLBACKS],
    implicit: true,
  },
  { clientId: "2002", redirectUris: ["http://127.0.0.1:8788/callback", ...DASHBOARD_CALLBACKS], oauth21: true },
];
