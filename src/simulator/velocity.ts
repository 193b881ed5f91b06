// The service's velocity filter (docs/service-behaviour.md#rate-limits): per user (or per client), a leaky
// bucket that drains at limit/windowMs on the simulated clock. A request that finds the bucket full is refused
// with the service's 429 and trips the filter; while tripped every request is refused and restarts the decay
// timer (hammering prolongs the block); it untrips once decayMs pass without a request and the bucket has
// drained below the limit. Deterministic: it depends only on the clock and the order of requests.
import type { Reply } from "./http.ts";
import { faultReply } from "./faults.ts";

export type VelocitySettings = {
  /** Requests the bucket holds: this many in a burst, and this many per windowMs sustained. */
  limit: number;
  windowMs: number;
  /** How long the filter stays tripped after the last request it refused. */
  decayMs: number;
  /** Whose requests share a bucket: each user's (client-token calls: their client's), or each client's. Default "user". */
  per?: "user" | "client";
};

export type VelocityKeyState = { key: string; level: number; tripped: boolean; lastRefusedAt: string | null };

export type VelocityDecision = { refused: false } | { refused: true; reply: Reply };

type Bucket = { level: number; atMs: number; tripped: boolean; lastRefusedMs: number | null };

/** Checks settings from options or the control API; throws a RangeError that says what is wrong. */
export function checkVelocity(input: unknown): VelocitySettings {
  const v = (input ?? {}) as Record<string, unknown>;
  const positive = (name: string): number => {
    const n = v[name];
    if (typeof n !== "number" || !Number.isFinite(n) || n <= 0) throw new RangeError(`velocity.${name} must be a positive number, got ${String(n)}`);
    return n;
  };
  const limit = positive("limit");
  const windowMs = positive("windowMs");
  const decayMs = v.decayMs === 0 ? 0 : positive("decayMs");
  if (v.per !== undefined && v.per !== "user" && v.per !== "client") throw new RangeError(`velocity.per is "user" or "client", got ${String(v.per)}`);
  return { limit, windowMs, decayMs, ...(v.per !== undefined ? { per: v.per as "user" | "client" } : {}) };
}

export class VelocityFilter {
  private settings: VelocitySettings | null = null;
  private readonly buckets = new Map<string, Bucket>();

  constructor(settings?: VelocitySettings) {
    if (settings) this.set(settings);
  }

  /** New settings (null: no filter); the buckets start empty. */
  set(settings: VelocitySettings | null): void {
    this.settings = settings === null ? null : checkVelocity(settings);
    this.buckets.clear();
  }

  get(): VelocitySettings | null {
    return this.settings ? { ...this.settings } : null;
  }

  /** The bucket a caller's requests go to, or undefined when the filter is off. */
  keyOf(caller: { userId?: string | undefined; clientId?: string | undefined }): string | undefined {
    if (!this.settings) return undefined;
    if (this.settings.per !== "client" && caller.userId) return `user:${caller.userId}`;
    return `client:${caller.clientId ?? "(none)"}`;
  }

  /** Decides, and records, one request of `key` at `nowMs`. */
  admit(key: string, nowMs: number): VelocityDecision {
    const s = this.settings;
    if (!s) return { refused: false };
    const b = this.buckets.get(key) ?? { level: 0, atMs: nowMs, tripped: false, lastRefusedMs: null };
    this.buckets.set(key, b);
    b.level = Math.max(0, b.level - (Math.max(0, nowMs - b.atMs) * s.limit) / s.windowMs);
    b.atMs = nowMs;
    if (b.tripped && nowMs - (b.lastRefusedMs ?? nowMs) >= s.decayMs && b.level < s.limit) b.tripped = false;
    if (!b.tripped && b.level + 1 <= s.limit) {
      b.level += 1;
      return { refused: false };
    }
    b.tripped = true;
    b.lastRefusedMs = nowMs;
    const reply = faultReply(s.per === "client" ? "app_throttle" : "user_throttle");
    if (!reply) throw new Error("a throttle fault has a reply");
    return { refused: true, reply };
  }

  state(nowMs: number): VelocityKeyState[] {
    const s = this.settings;
    if (!s) return [];
    return [...this.buckets].map(([key, b]) => {
      const level = Math.max(0, b.level - (Math.max(0, nowMs - b.atMs) * s.limit) / s.windowMs);
      const decayed = nowMs - (b.lastRefusedMs ?? nowMs) >= s.decayMs && level < s.limit;
      return { key, level, tripped: b.tripped && !decayed, lastRefusedAt: b.lastRefusedMs === null ? null : new Date(b.lastRefusedMs).toISOString() };
    });
  }
}
