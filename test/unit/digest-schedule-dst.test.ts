// The digest cron across a DST switch, as the running worker fires it: node-cron arms its timers on faked timers
// and Date, each tick's job is run as the digest job windows it (digestWindow from the last window's end), and a
// day's digest is sent once, never twice, never skipped but where the local time does not exist, its windows
// end to end. A repeated local time is fired by node-cron at one pass, which differs by the zone's side of UTC.
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DigestConfig } from "../../src/config/digest.ts";
import { digestWindow, type DigestJobPayload } from "../../src/digest/run-digest.ts";
import { DigestScheduler } from "../../src/digest/schedule.ts";
import { createLogger } from "../../src/log.ts";

/** The windows of the digests a worker sends from `from` for `hours`, each "start..end" (ISO). */
async function windowsSent(cron: string, timezone: string, from: string, hours: number): Promise<string[]> {
  vi.useFakeTimers({ now: new Date(from) });
  const ticks: DigestJobPayload[] = [];
  const config = { cron, timezone, channels: ["file"] } as unknown as DigestConfig;
  const scheduler = new DigestScheduler({
    config,
    enqueue: async (p) => void ticks.push(p),
    lastWindowEnd: async () => null,
    log: createLogger({ level: "silent" }),
  });
  scheduler.start();
  try {
    await vi.advanceTimersByTimeAsync(hours * 3_600_000);
    let lastEnd: Date | null = null;
    const sent: string[] = [];
    for (const t of ticks) {
      const window = digestWindow(lastEnd, new Date(t.tick), scheduler.clock);
      if (!window) continue;
      sent.push(`${window.start.toISOString()}..${window.end.toISOString()}`);
      lastEnd = window.end;
    }
    return sent;
  } finally {
    await scheduler.stop();
    vi.useRealTimers();
  }
}

describe("the digest cron across a DST switch", () => {
  afterEach(() => vi.useRealTimers());

  it("sends the fall-back night's digest once west of UTC, where node-cron fires the first pass of the repeated hour", async () => {
    // New York falls back at 02:00 EDT on 1 Nov 2026: 01:30 is 05:30 UTC (EDT), then 06:30 UTC (EST).
    expect(await windowsSent("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 48)).toEqual([
      "2026-10-31T05:30:00.000Z..2026-11-01T05:30:00.000Z",
      "2026-11-01T05:30:00.000Z..2026-11-02T06:30:00.000Z",
    ]);
    // Hourly: the repeated 01:00 is one digest; the hour after it ends at 02:00 EST.
    expect(await windowsSent("0 * * * *", "America/New_York", "2026-11-01T03:30:00Z", 5)).toEqual([
      "2026-11-01T03:00:00.000Z..2026-11-01T04:00:00.000Z",
      "2026-11-01T04:00:00.000Z..2026-11-01T05:00:00.000Z",
      "2026-11-01T05:00:00.000Z..2026-11-01T07:00:00.000Z",
      "2026-11-01T07:00:00.000Z..2026-11-01T08:00:00.000Z",
    ]);
  });

  it("sends it once east of UTC, where node-cron fires the second pass", async () => {
    // Berlin falls back at 03:00 CEST on 25 Oct 2026: 02:30 is 00:30 UTC (CEST), then 01:30 UTC (CET).
    expect(await windowsSent("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 48)).toEqual([
      "2026-10-24T00:30:00.000Z..2026-10-25T01:30:00.000Z",
      "2026-10-25T01:30:00.000Z..2026-10-26T01:30:00.000Z",
    ]);
  });

  it("sends no digest at a local time the spring-forward switch skips; the next one covers the day", async () => {
    // 02:30 does not exist in New York on 8 Mar 2026.
    expect(await windowsSent("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 72)).toEqual([
      "2026-03-06T07:30:00.000Z..2026-03-07T07:30:00.000Z",
      "2026-03-07T07:30:00.000Z..2026-03-09T06:30:00.000Z",
    ]);
  });
});
