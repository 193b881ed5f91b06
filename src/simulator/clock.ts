// The simulator's clock: simulated time that moves only when told (frozen) or with real time plus an offset.

export type SimClock = {
  now(): Date;
  nowMs(): number;
  advance(ms: number): void;
  set(date: Date): void;
};

export type ClockMode = "frozen" | "real";

export function createClock(start: Date, mode: ClockMode = "frozen"): SimClock {
  let baseMs = start.getTime();
  let realAnchor = Date.now();
  const nowMs = () => (mode === "real" ? baseMs + (Date.now() - realAnchor) : baseMs);
  return {
    now: () => new Date(nowMs()),
    nowMs,
    advance(ms: number) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`clock.advance expects a non-negative number of ms, got ${ms}`);
      baseMs += ms;
    },
    set(date: Date) {
      baseMs = date.getTime();
      realAnchor = Date.now();
    },
  };
}
