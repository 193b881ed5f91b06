// The bounds of a transfer on an injected clock (docs/service-behaviour.md#hostile-answers): the byte cap
// trips at once, the throughput floor only after the grace and over a whole window, a stall trips on the
// timer's tick, a retry that starts over gets a fresh window; and which redirect hosts are the CDN's.
import { describe, expect, it } from "vitest";
import { describeBound, ThroughputWatch, type BoundTripped } from "../../src/api/body-guard.ts";
import { hostMatches } from "../../src/downloads/transfer.ts";

function watch(limits: { maxBytes?: number; minBytesPerSecond?: number } = {}) {
  let now = 0;
  const trips: BoundTripped[] = [];
  const w = new ThroughputWatch(
    { maxBytes: limits.maxBytes ?? 1000, minBytesPerSecond: limits.minBytesPerSecond ?? 100, graceMs: 10_000, windowMs: 30_000, now: () => now },
    (why) => trips.push(why),
  );
  return { w, trips, at: (ms: number) => (now = ms) };
}

describe("ThroughputWatch", () => {
  it("trips once on the first byte past the cap", () => {
    const { w, trips } = watch({ maxBytes: 1000, minBytesPerSecond: 0 });
    expect(w.progress(1000)).toBeUndefined();
    expect(w.progress(1001)).toEqual({ kind: "too_large", bytes: 1001, maxBytes: 1000 });
    w.progress(5000);
    expect(trips).toHaveLength(1);
    expect(describeBound(trips[0]!)).toBe("response too large (more than 1000 B)");
  });

  it("lets a slow start through the grace, then measures a whole window", () => {
    const { w, trips, at } = watch({ maxBytes: 1e9, minBytesPerSecond: 100 });
    at(39_000);
    expect(w.progress(10)).toBeUndefined(); // still within grace + window
    at(40_000);
    expect(w.tick()?.kind).toBe("too_slow");
    expect(trips).toHaveLength(1);
    expect(describeBound(trips[0]!)).toMatch(/^timed out after 40 s at 0\.0 KiB\/s \(the floor is 0 KiB\/s\)$/);
  });

  it("keeps a transfer at the floor going, and trips when the last window falls below it", () => {
    const { w, trips, at } = watch({ maxBytes: 1e9, minBytesPerSecond: 100 });
    let bytes = 0;
    for (let s = 1; s <= 60; s++) {
      at(s * 1000);
      bytes += 150;
      w.progress(bytes);
    }
    expect(trips).toEqual([]);
    // It stalls: no bytes for 30 s is under the floor however fast it was before.
    at(90_000);
    expect(w.tick()?.kind).toBe("too_slow");
  });

  it("starts a fresh window when a retry starts over", () => {
    const { w, trips, at } = watch({ maxBytes: 1e9, minBytesPerSecond: 100 });
    at(35_000);
    w.progress(5000);
    at(36_000);
    w.progress(10); // fewer bytes: a new attempt
    at(70_000);
    expect(w.progress(20)).toBeUndefined(); // 34 s into the new attempt: still within its grace + window
    expect(trips).toEqual([]);
  });

  it("never trips with the floor off", () => {
    const { w, at } = watch({ maxBytes: 1e9, minBytesPerSecond: 0 });
    at(3_600_000);
    expect(w.tick()).toBeUndefined();
  });
});

describe("hostMatches", () => {
  const cdn = ["*.wixmp.com", "*.deviantart.net", "cdn.example"];
  it.each([
    ["images-wixmp-ed30a86b8c4ca887773594c2.wixmp.com", true],
    ["wixmp.com", true],
    ["A.DEVIANTART.NET.", true],
    ["cdn.example", true],
    ["sub.cdn.example", false],
    ["wixmp.com.evil.example", false],
    ["evilwixmp.com", false],
    ["127.0.0.2", false],
  ])("%s → %s", (host, expected) => {
    expect(hostMatches(host, cdn)).toBe(expected);
  });
});
