// The once-a-minute lines (src/queue/log-every-minute.ts): keyed by an error's words, which carry a job's id, so the
// keys it remembers must stay bounded over a long uptime, whatever repeats.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { EveryMinuteLog, LOG_EVERY_MS } from "../../src/queue/log-every-minute.ts";

function logged(): { log: ReturnType<typeof createLogger>; lines: { level: number; msg: string; repeatedMeanwhile?: number }[] } {
  const lines: { level: number; msg: string; repeatedMeanwhile?: number }[] = [];
  return { lines, log: createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } }) };
}

describe(EveryMinuteLog.name, () => {
  it("says a line once a minute, the repeats at debug and counted in the next", () => {
    const { log, lines } = logged();
    let clock = 0;
    const minute = new EveryMinuteLog(log, () => clock);
    for (let i = 0; i < 4; i++, clock += 20_000) minute.line({ key: "k", level: "warn", fields: {}, message: "away" });
    expect(lines.map((l) => [l.level, l.repeatedMeanwhile])).toEqual([
      [40, undefined],
      [20, undefined],
      [20, undefined],
      [40, 2],
    ]);
  });

  it("remembers at most 256 kinds of line, though each was held back once (a job's error raised twice)", () => {
    const { log, lines } = logged();
    let clock = 0;
    const minute = new EveryMinuteLog(log, () => clock);
    // BullMQ raises "Missing lock for job <id>" once for the completed move and once for the failed one: the second
    // is held back, and the key never comes again. A thousand such jobs over a long uptime.
    for (let job = 0; job < 1000; job++, clock += LOG_EVERY_MS) {
      const key = `worker-error:downloads:Error:Missing lock for job ${job}. moveToFinished`;
      minute.line({ key, level: "error", fields: {}, message: "queue worker error" });
      minute.line({ key, level: "error", fields: {}, message: "queue worker error" });
    }
    expect(minute.size).toBeLessThanOrEqual(256);
    expect(lines.filter((l) => l.level === 50)).toHaveLength(1000);
  });

  it("keeps holding back a line that keeps coming while other kinds pass", () => {
    const { log, lines } = logged();
    let clock = 0;
    const minute = new EveryMinuteLog(log, () => clock);
    for (let i = 0; i < 600; i++, clock += 50) {
      minute.line({ key: "worker-error:downloads:store-outage", level: "error", fields: {}, message: "away" });
      minute.line({ key: `worker-error:downloads:Error:job ${i}`, level: "error", fields: {}, message: "other" });
    }
    // 30 s of it: the store's line once, every other error its own line at once.
    expect(lines.filter((l) => l.level === 50 && l.msg === "away")).toHaveLength(1);
    expect(lines.filter((l) => l.level === 50 && l.msg === "other")).toHaveLength(600);
  });
});
