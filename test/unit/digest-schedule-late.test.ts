// The digest cron of a worker that keeps running while its machine sleeps or its wall clock moves: a tick the process
// reaches late (suspended over it, the clock stepped forward, the event loop stalled) is sent once, never lost, and a
// week asleep is one digest, not seven. Timers and Date are faked: a suspended machine's timers do not run (Node's
// timers follow the monotonic clock), while Date jumps to the wall clock on resume (vi.setSystemTime).
import { afterEach, describe, expect, it, vi } from "vitest";
import type { DigestConfig } from "../../src/config/digest.ts";
import { DigestScheduler } from "../../src/digest/schedule.ts";
import type { DigestJobPayload } from "../../src/digest/run-digest.ts";
import { createLogger } from "../../src/log.ts";

const schedulers: DigestScheduler[] = [];

function startScheduler(cron: string, timezone: string): DigestJobPayload[] {
  const enqueued: DigestJobPayload[] = [];
  const config = { cron, timezone, channels: ["file"] } as unknown as DigestConfig;
  const scheduler = new DigestScheduler({
    config,
    enqueue: async (p) => void enqueued.push(p),
    lastWindowEnd: async () => null,
    log: createLogger({ level: "silent" }),
  });
  scheduler.start();
  schedulers.push(scheduler);
  return enqueued;
}

describe(DigestScheduler.name, () => {
  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.stop();
    vi.useRealTimers();
  });

  it("sends a tick the machine slept through once, when it wakes, and a week asleep as one digest", async () => {
    // 07:59 in Berlin (CET); the digest is due at 08:00 (07:00 UTC).
    vi.useFakeTimers({ now: new Date("2026-11-03T06:59:00Z") });
    const enqueued = startScheduler("0 8 * * *", "Europe/Berlin");
    // Suspended at 07:59 and resumed at 09:30: the wall clock jumped, the armed timer still has its minute to run.
    vi.setSystemTime(new Date("2026-11-03T08:30:00Z"));
    await vi.advanceTimersByTimeAsync(61_000);
    expect(enqueued).toEqual([{ channel: "file", tick: "2026-11-03T07:00:00.000Z", trigger: "cron" }]);

    // Asleep again from 09:31 for a week: the timer armed for the next morning still has its 22.5 hours to run when
    // the machine wakes on 10 Nov at 10:00; when it ends, eight ticks have passed and only the latest is sent.
    vi.setSystemTime(new Date("2026-11-10T09:00:00Z"));
    await vi.advanceTimersByTimeAsync(24 * 3600_000);
    expect(enqueued.map((p) => p.tick)).toEqual(["2026-11-03T07:00:00.000Z", "2026-11-11T07:00:00.000Z"]);
  });

  it("sends a tick the wall clock stepped over (NTP) once, and not again when the clock steps back", async () => {
    vi.useFakeTimers({ now: new Date("2026-11-03T06:59:58Z") });
    const enqueued = startScheduler("0 8 * * *", "Europe/Berlin");
    // A correction of five minutes forward just before the tick.
    vi.setSystemTime(new Date("2026-11-03T07:04:58Z"));
    await vi.advanceTimersByTimeAsync(3000);
    expect(enqueued.map((p) => p.tick)).toEqual(["2026-11-03T07:00:00.000Z"]);
    // Stepped back ten minutes: 08:00 comes round again on the wall clock, and is not sent twice.
    vi.setSystemTime(new Date("2026-11-03T06:55:00Z"));
    await vi.advanceTimersByTimeAsync(3600_000);
    expect(enqueued.map((p) => p.tick)).toEqual(["2026-11-03T07:00:00.000Z"]);
  });
});
