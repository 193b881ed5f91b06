// The weekly budget of original downloads: the service's week (ISO week, from Monday 00:00 UTC), each
// account's allowance (its own, else DVAULT_DOWNLOAD_QUOTA) and the count of successful
// /deviation/download calls kept in Postgres, on an injectable clock.
import type { DownloadQuotaRepository, QuotaWeek } from "../db/download-quota.repository.ts";

const DAY_MS = 24 * 3600 * 1000;
const WEEK_MS = 7 * DAY_MS;

/** Monday 00:00 UTC of the service week holding `at`. */
export function serviceWeekStart(at: Date | number): Date {
  const ms = typeof at === "number" ? at : at.getTime();
  const day = Math.floor(ms / DAY_MS) * DAY_MS;
  // 1970-01-01 was a Thursday: (weekday + 6) % 7 days back is Monday.
  const weekday = new Date(day).getUTCDay();
  return new Date(day - ((weekday + 6) % 7) * DAY_MS);
}

/** When the allowance next refills: the Monday 00:00 UTC after `at`. */
export function nextQuotaWindow(at: Date | number): Date {
  return new Date(serviceWeekStart(at).getTime() + WEEK_MS);
}

/** The week as Postgres's `date`: "2026-11-02". */
export function weekKey(weekStart: Date): string {
  return weekStart.toISOString().slice(0, 10);
}

export type QuotaState = QuotaWeek & {
  accountId: number;
  weekStart: Date;
  /** The service refused as if this week's allowance were spent. */
  exhausted: boolean;
  nextWindow: Date;
};

/** A download taken from the allowance; give it back with release() when the call did not yield a file. */
export type QuotaReservation = { accountId: number; weekStart: Date; used: number; allowance: number };

export type DownloadQuotaOptions = {
  repo: DownloadQuotaRepository;
  /** DVAULT_DOWNLOAD_QUOTA. */
  defaultAllowance: number;
  /** Epoch ms; tests follow the simulator's clock. */
  now: () => number;
};

export class DownloadQuota {
  constructor(private readonly options: DownloadQuotaOptions) {}

  now(): Date {
    return new Date(this.options.now());
  }

  async state(accountId: number): Promise<QuotaState> {
    const now = this.options.now();
    const weekStart = serviceWeekStart(now);
    const week = await this.options.repo.usage({ accountId, weekStart: weekKey(weekStart), defaultAllowance: this.options.defaultAllowance });
    return { ...week, accountId, weekStart, exhausted: week.exhaustedAt !== null, nextWindow: nextQuotaWindow(now) };
  }

  /** Takes one download from this week's allowance, atomically; undefined when none is left. */
  async tryReserve(accountId: number): Promise<QuotaReservation | undefined> {
    const now = this.options.now();
    const weekStart = serviceWeekStart(now);
    const taken = await this.options.repo.tryConsume({
      accountId,
      weekStart: weekKey(weekStart),
      defaultAllowance: this.options.defaultAllowance,
      at: new Date(now),
    });
    return taken ? { accountId, weekStart, used: taken.used, allowance: taken.allowance } : undefined;
  }

  /** The reserved call failed without handing out a file: it does not count. */
  async release(reservation: QuotaReservation): Promise<void> {
    await this.options.repo.release({ accountId: reservation.accountId, weekStart: weekKey(reservation.weekStart), at: new Date(this.options.now()) });
  }

  /**
   * The service refused the call `reservation` was taken for as if the allowance were spent: nothing more in the
   * reservation's week, whatever was counted. Its week, not the one the answer came in: a call made before Monday
   * 00:00 UTC and refused after it (its retries ran past midnight) says nothing of the new week, which closing would
   * keep every original waiting a week with nothing of it spent.
   */
  async markExhausted(reservation: QuotaReservation, reason: string): Promise<void> {
    await this.options.repo.markExhausted({
      accountId: reservation.accountId,
      weekStart: weekKey(reservation.weekStart),
      at: new Date(this.options.now()),
      reason,
    });
  }
}

/** When the allowance of a reservation's week refills: the Monday 00:00 UTC after it (a refused call's files wait for it). */
export function nextWindowOf(reservation: QuotaReservation): Date {
  return new Date(reservation.weekStart.getTime() + WEEK_MS);
}

const HOURS_PER_CLASS = 400_000;

/**
 * BullMQ priority (1 = first, at most 2^21) of a download: its class's rank in the configured order
 * (1-based; unlisted classes after the listed ones), then newest first by the hour.
 */
export function downloadJobPriority(rank: number, publishedAt: Date | null, now: Date): number {
  const ageHours = publishedAt ? Math.max(0, Math.floor((now.getTime() - publishedAt.getTime()) / 3_600_000)) : HOURS_PER_CLASS - 1;
  return 1 + Math.min(4, Math.max(0, rank - 1)) * HOURS_PER_CLASS + Math.min(HOURS_PER_CLASS - 1, ageHours);
}
