// Tick arithmetic of the digest cron: the latest tick at or before a moment, in a time zone, across DST.
import { afterEach, describe, expect, it } from "vitest";
import { CronClock } from "../../src/digest/cron-time.ts";

const clocks: CronClock[] = [];
const clock = (expr: string, tz: string) => {
  const c = new CronClock(expr, tz);
  clocks.push(c);
  return c;
};
const iso = (d: Date | undefined) => d?.toISOString();

describe(CronClock.name, () => {
  afterEach(() => {
    for (const c of clocks.splice(0)) c.destroy();
  });

  it("finds the latest daily tick at or before a moment, in the configured zone", () => {
    const c = clock("0 8 * * *", "Europe/Berlin");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-11-03T07:00:00Z")))).toBe("2026-11-03T07:00:00.000Z");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-11-03T07:00:59Z")))).toBe("2026-11-03T07:00:00.000Z");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-11-03T06:59:59Z")))).toBe("2026-11-02T07:00:00.000Z");
    // Summer time: 08:00 in Berlin is 06:00 UTC.
    expect(iso(c.latestTickAtOrBefore(new Date("2026-07-03T06:30:00Z")))).toBe("2026-07-03T06:00:00.000Z");
  });

  it("gives the tick before a tick: a window's start", () => {
    const c = clock("0 8 * * *", "UTC");
    expect(iso(c.previousTick(new Date("2026-11-03T08:00:00Z")))).toBe("2026-11-02T08:00:00.000Z");
    const weekly = clock("0 9 * * 1", "UTC");
    expect(iso(weekly.previousTick(new Date("2026-11-09T09:00:00Z")))).toBe("2026-11-02T09:00:00.000Z");
  });

  it("crosses the DST change: the day of the switch has its own UTC offset", () => {
    const c = clock("0 8 * * *", "Europe/Berlin");
    // Summer time ends on 25 Oct 2026: the 26 Oct tick is 07:00 UTC, the 25 Oct one too, the 24 Oct one 06:00.
    expect(iso(c.previousTick(new Date("2026-10-26T07:00:00Z")))).toBe("2026-10-25T07:00:00.000Z");
    expect(iso(c.previousTick(new Date("2026-10-25T07:00:00Z")))).toBe("2026-10-24T06:00:00.000Z");
    // A local time that does not exist on the switch day (02:30 on 29 Mar) is skipped.
    const gap = clock("30 2 * * *", "Europe/Berlin");
    expect(iso(gap.latestTickAtOrBefore(new Date("2026-03-29T12:00:00Z")))).toBe("2026-03-28T01:30:00.000Z");
  });

  it("counts a local time the fall-back switch repeats once, at the occurrence node-cron fires", () => {
    // 02:30 in Berlin happens twice on 25 Oct 2026: at 00:30 UTC (summer time) and at 01:30 UTC (winter time).
    const c = clock("30 2 * * *", "Europe/Berlin");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-10-25T00:30:00Z")))).toBe("2026-10-24T00:30:00.000Z");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-10-25T01:00:00Z")))).toBe("2026-10-24T00:30:00.000Z");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-10-25T01:30:00Z")))).toBe("2026-10-25T01:30:00.000Z");
    expect(iso(c.previousTick(new Date("2026-10-25T01:30:00Z")))).toBe("2026-10-24T00:30:00.000Z");
    expect(c.isTick(new Date("2026-10-25T00:30:00Z"))).toBe(false);
    // Hourly: the repeated 02:00 is one tick too (01:00 UTC), so the hour before it ends at 01:00 local.
    const hourly = clock("0 * * * *", "Europe/Berlin");
    expect(iso(hourly.latestTickAtOrBefore(new Date("2026-10-25T00:30:00Z")))).toBe("2026-10-24T23:00:00.000Z");
    expect(iso(hourly.previousTick(new Date("2026-10-25T02:00:00Z")))).toBe("2026-10-25T01:00:00.000Z");
    // West of UTC node-cron fires the first pass: New York's 01:30 on 1 Nov 2026 at 05:30 UTC (EDT), not 06:30 (EST).
    const ny = clock("30 1 * * *", "America/New_York");
    expect(iso(ny.latestTickAtOrBefore(new Date("2026-11-01T06:45:00Z")))).toBe("2026-11-01T05:30:00.000Z");
    expect(ny.isTick(new Date("2026-11-01T06:30:00Z"))).toBe(false);
    expect(iso(ny.previousTick(new Date("2026-11-02T06:30:00Z")))).toBe("2026-11-01T05:30:00.000Z");
  });

  it("crosses a half-hour DST switch and the American one", () => {
    // Lord Howe Island moves from +10:30 to +11 at 02:00 on 4 Oct 2026: 02:00 does not exist that night.
    const c = clock("0 2 * * *", "Australia/Lord_Howe");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-10-04T06:00:00Z")))).toBe("2026-10-02T15:30:00.000Z");
    expect(iso(c.previousTick(new Date("2026-10-04T15:00:00Z")))).toBe("2026-10-02T15:30:00.000Z");
    // New York springs forward at 02:00 on 8 Mar 2026 and falls back at 02:00 on 1 Nov 2026.
    const ny = clock("30 2 * * *", "America/New_York");
    expect(iso(ny.latestTickAtOrBefore(new Date("2026-03-08T12:00:00Z")))).toBe("2026-03-07T07:30:00.000Z");
    expect(iso(ny.latestTickAtOrBefore(new Date("2026-11-01T12:00:00Z")))).toBe("2026-11-01T07:30:00.000Z");
  });

  it("needs both the day of month and the weekday when both are given, as node-cron fires them", () => {
    // 1 Dec 2025 and 1 Jun 2026 are Mondays: the first of the month on a Monday, not any first nor any Monday.
    const c = clock("0 8 1 * 1", "UTC");
    expect(iso(c.latestTickAtOrBefore(new Date("2026-03-07T10:00:00Z")))).toBe("2025-12-01T08:00:00.000Z");
    expect(iso(c.previousTick(new Date("2026-06-01T08:00:00Z")))).toBe("2025-12-01T08:00:00.000Z");
    // The last day of the month that is a Monday: 31 Aug 2026.
    expect(iso(clock("0 8 L * 1", "UTC").latestTickAtOrBefore(new Date("2026-11-05T12:00:00Z")))).toBe("2026-08-31T08:00:00.000Z");
  });

  it("has no tick for an expression no date satisfies", () => {
    expect(clock("0 0 30 2 *", "UTC").latestTickAtOrBefore(new Date("2026-11-05T12:00:00Z"))).toBeUndefined();
  });

  it("handles sparse expressions: last day of the month, leap days, frequent ticks", () => {
    expect(iso(clock("0 12 L * *", "UTC").latestTickAtOrBefore(new Date("2026-11-05T12:00:00Z")))).toBe("2026-10-31T12:00:00.000Z");
    expect(iso(clock("0 0 29 2 *", "UTC").latestTickAtOrBefore(new Date("2027-11-05T12:00:00Z")))).toBe("2024-02-29T00:00:00.000Z");
    expect(iso(clock("*/15 * * * *", "Asia/Kolkata").latestTickAtOrBefore(new Date("2026-11-03T08:07:30Z")))).toBe("2026-11-03T08:00:00.000Z");
    expect(clock("0 8 * * *", "UTC").isTick(new Date("2026-11-03T08:00:40Z"))).toBe(true);
  });
});
