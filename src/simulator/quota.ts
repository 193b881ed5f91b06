// The weekly original-download allowance (docs/service-behaviour.md#quota-weekly): counted per account over
// the service's week (ISO week, from Monday 00:00 UTC, an assumption: the reset time is not documented) on
// the simulated clock. Every successful /deviation/download call counts; fetching the CDN URL it returns
// does not.

export const DEFAULT_DOWNLOAD_QUOTA = 10;

const DAY_MS = 86_400_000;

/** Monday 00:00 UTC of the week holding `ms`. */
export function weekStartMs(ms: number): number {
  const d = new Date(ms);
  const midnight = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  return midnight - sinceMonday * DAY_MS;
}

export type QuotaStatus = { key: string; allowance: number; used: number; weekStart: string; resetsAt: string };

export class DownloadQuota {
  private readonly allowances = new Map<string, number>();
  private readonly usage = new Map<string, { weekStart: number; used: number }>();

  constructor(private defaultAllowance: number = DEFAULT_DOWNLOAD_QUOTA) {}

  /** Without a key: the allowance of every account without its own. */
  setAllowance(allowance: number, key?: string): void {
    if (!Number.isInteger(allowance) || allowance < 0) throw new RangeError(`a download allowance is a non-negative integer, got ${allowance}`);
    if (key === undefined) this.defaultAllowance = allowance;
    else this.allowances.set(key, allowance);
  }

  allowance(key: string): number {
    return this.allowances.get(key) ?? this.defaultAllowance;
  }

  used(key: string, nowMs: number): number {
    const u = this.usage.get(key);
    return u && u.weekStart === weekStartMs(nowMs) ? u.used : 0;
  }

  /** Counts one download if the week's allowance has room; false when it is spent. */
  consume(key: string, nowMs: number): boolean {
    const week = weekStartMs(nowMs);
    const u = this.usage.get(key);
    const used = u && u.weekStart === week ? u.used : 0;
    if (used >= this.allowance(key)) return false;
    this.usage.set(key, { weekStart: week, used: used + 1 });
    return true;
  }

  /** Forgets this week's usage (all accounts, or one). */
  reset(key?: string): void {
    if (key === undefined) this.usage.clear();
    else this.usage.delete(key);
  }

  status(key: string, nowMs: number): QuotaStatus {
    const week = weekStartMs(nowMs);
    return {
      key,
      allowance: this.allowance(key),
      used: this.used(key, nowMs),
      weekStart: new Date(week).toISOString(),
      resetsAt: new Date(week + 7 * DAY_MS).toISOString(),
    };
  }
}
