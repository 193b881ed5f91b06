// Tick arithmetic for a node-cron expression in a time zone: the latest tick at or before a moment.
// node-cron schedules forward only; a digest's window starts at the previous tick and the catch-up at
// start needs the last tick that passed while the machine was off.
import cron, { type ParsedFields, type ScheduledTask } from "node-cron";

const MINUTE_MS = 60_000;
/** Ticks further back than this are not searched (a yearly expression still fits). */
const MAX_DAYS_BACK = 5 * 366;

type LocalParts = { year: number; month: number; day: number; hour: number; minute: number };

export class CronClock {
  private readonly fields: ParsedFields;
  private readonly matcher: ScheduledTask;
  private readonly parts: Intl.DateTimeFormat;

  constructor(
    readonly expression: string,
    readonly timezone: string,
  ) {
    this.fields = cron.parse(expression);
    // A task that is never started: only its matcher is used (it applies the time zone and DST rules).
    this.matcher = cron.createTask(expression, () => undefined, { timezone });
    this.parts = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
    });
  }

  /** True when `at` (to the minute) is a tick. */
  isTick(at: Date): boolean {
    return this.matcher.match(floorToMinute(at));
  }

  /** The latest tick at or before `at`; undefined when there was none in the last five years. */
  latestTickAtOrBefore(at: Date): Date | undefined {
    const limit = floorToMinute(at).getTime();
    const start = this.localParts(new Date(limit));
    const hours = [...this.fields.hour].sort((a, b) => b - a);
    const minutes = [...this.fields.minute].sort((a, b) => b - a);
    for (let back = 0; back <= MAX_DAYS_BACK; back++) {
      const day = new Date(Date.UTC(start.year, start.month - 1, start.day - back));
      const y = day.getUTCFullYear();
      const m = day.getUTCMonth() + 1;
      const d = day.getUTCDate();
      if (!this.dayMayMatch(m, d, day.getUTCDay())) continue;
      for (const hour of hours) {
        for (const minute of minutes) {
          const ts = zonedTimeToEpoch({ year: y, month: m, day: d, hour, minute }, (t) => this.localParts(new Date(t)));
          if (ts > limit) continue;
          if (this.matcher.match(new Date(ts))) return new Date(ts);
        }
      }
    }
    return undefined;
  }

  /** The tick before `tick` (strictly earlier). */
  previousTick(tick: Date): Date | undefined {
    return this.latestTickAtOrBefore(new Date(floorToMinute(tick).getTime() - MINUTE_MS));
  }

  destroy(): void {
    void this.matcher.destroy();
  }

  /** A cheap pre-check of month, day of month and weekday; special tokens (L, 1#2) defer to the matcher. */
  private dayMayMatch(month: number, day: number, weekday: number): boolean {
    if (!this.fields.month.includes(month)) return false;
    const dom = this.fields.dayOfMonth;
    if (dom.every((v) => typeof v === "number") && !dom.includes(day)) return false;
    const dow = this.fields.dayOfWeek;
    if (dow.every((v) => typeof v === "number") && !dow.includes(weekday) && !(weekday === 0 && dow.includes(7))) return false;
    return true;
  }

  private localParts(at: Date): LocalParts {
    const out: Record<string, number> = {};
    for (const p of this.parts.formatToParts(at)) if (p.type !== "literal") out[p.type] = Number(p.value);
    return { year: out.year ?? 0, month: out.month ?? 0, day: out.day ?? 0, hour: out.hour ?? 0, minute: out.minute ?? 0 };
  }
}

export function floorToMinute(at: Date): Date {
  return new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS);
}

/**
 * The instant at which a zone's wall clock shows `local`. In a DST gap the result is the instant an
 * hour later or earlier (the matcher then decides); in an overlap, one of the two instants.
 */
function zonedTimeToEpoch(local: LocalParts, partsAt: (epoch: number) => LocalParts): number {
  const asUtc = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute);
  const offsetAt = (epoch: number) => {
    const p = partsAt(epoch);
    return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute) - floorToMinute(new Date(epoch)).getTime();
  };
  const first = asUtc - offsetAt(asUtc);
  const second = asUtc - offsetAt(first);
  return second;
}
