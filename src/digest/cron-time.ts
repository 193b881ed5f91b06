// Tick arithmetic for the digest's cron expression in a time zone: the latest tick at or before a moment.
// node-cron (which fires the digest, src/digest/schedule.ts) looks forward only: a task's next runs from now,
// and whether a moment matches. A digest's window starts at the previous tick and the catch-up at start needs
// the last tick that passed while the machine was off, so cron-parser walks the calendar back in the zone and
// node-cron's own matcher says which of the moments it offers are ticks (why two libraries:
// docs/ARCHITECTURE.md#cron):
// - a local time the switch skips (02:30 on the spring-forward night) has no tick that day;
// - a local time the switch repeats (02:30 on the fall-back night) is one tick, at the occurrence node-cron fires:
//   the second east of UTC (Berlin's 02:30 at 01:30 UTC), the first west of it (New York's 01:30 at 05:30 UTC);
// - with both a day of month and a weekday given ("0 8 1 * 1"), a day must match both, as node-cron reads it
//   (classic cron, and cron-parser, take either).
import { CronExpressionParser } from "cron-parser";
import { createTask, type ScheduledTask } from "node-cron";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Ticks further back than this are not looked for (a yearly expression still fits; Feb 29 too). */
const MAX_BACK_MS = 5 * 366 * DAY_MS;
/** How far zones move their clocks (Lord Howe by half an hour, Troll by two). */
const DST_SHIFTS_MS = [30 * MINUTE_MS, 60 * MINUTE_MS, 120 * MINUTE_MS];
function matcherOf(expression: string, timezone: string): ScheduledTask | undefined {
  try {
    return createTask(expression, () => undefined, { timezone });
  } catch {
    return undefined;
  }
}

export class CronClock {
  private readonly wallClock: Intl.DateTimeFormat;
  /** node-cron's reading of the expression, never started: only its matcher is asked. Undefined when node-cron refuses it (30 February): no tick. */
  private readonly matcher: ScheduledTask | undefined;

  constructor(
    readonly expression: string,
    readonly timezone: string,
  ) {
    const fields = { year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" } as const;
    this.wallClock = new Intl.DateTimeFormat("en-US", { timeZone: timezone, hourCycle: "h23", ...fields });
    this.matcher = matcherOf(expression, timezone);
  }

  /** True when `at` (to the minute) is a tick. */
  isTick(at: Date): boolean {
    const minute = floorToMinute(at);
    return this.latestTickAtOrBefore(minute)?.getTime() === minute.getTime();
  }

  /** The latest tick at or before `at`; undefined when there was none in the last five years. */
  latestTickAtOrBefore(at: Date): Date | undefined {
    const matcher = this.matcher;
    if (!matcher) return undefined;
    const limit = floorToMinute(at).getTime();
    let before = limit + MINUTE_MS;
    for (;;) {
      const tick = this.tickBefore(before);
      if (tick === undefined || limit - tick > MAX_BACK_MS) return undefined;
      if (matcher.match(new Date(tick)) && this.isPassFired(tick)) return new Date(tick);
      before = tick;
    }
  }

  /** The tick before `tick` (strictly earlier). */
  previousTick(tick: Date): Date | undefined {
    return this.latestTickAtOrBefore(new Date(floorToMinute(tick).getTime() - MINUTE_MS));
  }

  /** Takes node-cron's never-started task out of its registry. */
  destroy(): void {
    void this.matcher?.destroy();
  }

  /** The latest tick strictly before `before` (epoch ms), or undefined when no date satisfies the expression. */
  private tickBefore(before: number): number | undefined {
    try {
      return CronExpressionParser.parse(this.expression, { tz: this.timezone, currentDate: new Date(before) })
        .prev()
        .getTime();
    } catch {
      // cron-parser's backward walk can give up next to a half-hour DST gap (Australia/Lord_Howe): walk forward
      // from further back instead, widening the span until a tick turns up.
      return this.tickBeforeWalkingForward(before);
    }
  }

  private tickBeforeWalkingForward(before: number): number | undefined {
    for (const span of [2 * DAY_MS, 8 * DAY_MS, 32 * DAY_MS, 367 * DAY_MS, MAX_BACK_MS]) {
      try {
        const ticks = CronExpressionParser.parse(this.expression, { tz: this.timezone, currentDate: new Date(before - span) });
        let last: number | undefined;
        for (let t = ticks.next().getTime(); t < before; t = ticks.next().getTime()) last = t;
        if (last !== undefined) return last;
      } catch {
        // An expression no date satisfies (31 February), or the same give-up: try a wider span.
      }
    }
    return undefined;
  }

  /**
   * False for the pass of a repeated local time (the fall-back night's) that node-cron does not fire. node-cron
   * reads a wall time as the instant whose UTC offset is the one in force at that wall time read as UTC (its
   * localTimeToTimestamp): in Berlin 02:30 read as UTC is already winter time, the second pass; in New York 01:30
   * read as UTC is still summer time, the first. Taking the second pass everywhere skipped New York's fall-back
   * digest: node-cron fired the first, which this clock then read as the day before's tick, already sent.
   */
  private isPassFired(tick: number): boolean {
    const shown = this.wallClock.format(tick);
    const repeated = DST_SHIFTS_MS.some((shift) => this.wallClock.format(tick + shift) === shown || this.wallClock.format(tick - shift) === shown);
    if (!repeated) return true;
    const asUtc = this.wallAsUtc(tick);
    return asUtc - (this.wallAsUtc(asUtc) - asUtc) === tick;
  }

  /** The zone's wall clock at `at` (to the minute) read as if it were UTC, in epoch ms. */
  private wallAsUtc(at: number): number {
    const part = (type: Intl.DateTimeFormatPartTypes, parts: Intl.DateTimeFormatPart[]) => Number(parts.find((p) => p.type === type)?.value);
    const parts = this.wallClock.formatToParts(at);
    return Date.UTC(part("year", parts), part("month", parts) - 1, part("day", parts), part("hour", parts), part("minute", parts));
  }
}

export function floorToMinute(at: Date): Date {
  return new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS);
}
