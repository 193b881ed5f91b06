// The patience of a `--once` run (src/queue/run-patience.ts) and what a sync source's job throws in one
// (src/sync/run-patiently.ts): a failure that passes is tried again after a doubling backoff until the item's or
// the run's patience is spent; a permanent one never is. A hand-moved clock, no waiting.
import { describe, expect, it } from "vitest";
import { ApiError, ThrottleDelayError } from "../../src/api/errors.ts";
import { RetryInRunError, RunPatience } from "../../src/queue/run-patience.ts";
import { failureInRun, PatienceSpentError } from "../../src/sync/run-patiently.ts";

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const settings = { itemMs: 60_000, runMs: 120_000, baseMs: 1000, capMs: 8000 };

describe("RunPatience", () => {
  it("backs off from the base, doubling up to the cap, while the item's patience lasts", () => {
    const c = clock();
    const p = new RunPatience(settings, c.now);
    const waits: number[] = [];
    for (;;) {
      const d = p.failed("a");
      if (!d.retry) {
        expect(d.reason).toMatch(/DVAULT_RUN_ITEM_PATIENCE/);
        break;
      }
      waits.push(d.waitMs);
      c.advance(d.waitMs);
      p.succeeded(); // others succeed meanwhile: only the item's own patience runs out
    }
    expect(waits.slice(0, 5)).toEqual([1000, 2000, 4000, 8000, 8000]);
    // Never past the item's patience: the last wait ends at it.
    expect(waits.reduce((a, b) => a + b, 0)).toBe(60_000);
  });

  it("gives up on everything once the run has gone its patience without any success", () => {
    const c = clock();
    const p = new RunPatience({ ...settings, itemMs: 10 * 60_000 }, c.now);
    expect(p.failed("a")).toMatchObject({ retry: true });
    c.advance(119_999);
    expect(p.spent()).toBe(false);
    c.advance(1);
    expect(p.spent()).toBe(true);
    const d = p.failed("b");
    expect(d).toMatchObject({ retry: false });
    expect(!d.retry && d.reason).toMatch(/nothing succeeded for 2 min \(DVAULT_RUN_PATIENCE\)/);
    // A success starts the run's patience again, and an item that succeeded starts afresh.
    p.succeeded("a");
    expect(p.failed("a")).toEqual({ retry: true, waitMs: 1000 });
  });

  it("starts an item's and the run's patience again when the item moves on, but not past MAX_FAILURES", () => {
    const c = clock();
    const p = new RunPatience(settings, c.now);
    // A long source: it fails now and then, each time minutes after the last, and saves pages between.
    for (let i = 0; i < 10; i++) {
      c.advance(5 * 60_000);
      p.progressed("src");
      const d = p.failed("src");
      expect(d.retry, `failure ${i + 1}, after a page saved`).toBe(true);
    }
    // Without the pages between, the same spacing gives it up: neither patience was started again.
    const q = new RunPatience(settings, c.now);
    q.failed("src");
    c.advance(5 * 60_000);
    expect(q.failed("src").retry).toBe(false);
    // An item that only seems to move (a page saved, then the same failure) ends after its 20th failure.
    const r = new RunPatience(settings, c.now);
    let tries = 0;
    while (r.failed("loop").retry) {
      tries++;
      r.progressed("loop");
    }
    expect(tries).toBe(20);
  });

  it("never waits less than a throttle asks", () => {
    const p = new RunPatience(settings, clock().now);
    expect(p.failed("a", 5000)).toEqual({ retry: true, waitMs: 5000 });
  });
});

describe("failureInRun (sync --once)", () => {
  const serverError = () => new ApiError({ kind: "server", operation: "gallery.all", status: 500 });

  it("turns a 5xx into a delay while the patience lasts, then into a plain failure that names the setting", () => {
    const c = clock();
    const p = new RunPatience({ ...settings, itemMs: 3000 }, c.now);
    const first = failureInRun(p, "1:gallery:", serverError());
    expect(first).toBeInstanceOf(RetryInRunError);
    expect(first).toMatchObject({ jobOutcome: "delay", retryAfterMs: 1000 });
    c.advance(3000);
    const last = failureInRun(p, "1:gallery:", serverError());
    expect(last).toBeInstanceOf(PatienceSpentError);
    expect((last as Error).message).toMatch(/DVAULT_RUN_ITEM_PATIENCE/);
    // No longer a delay for the queue: the job fails.
    expect(last).not.toHaveProperty("jobOutcome");
  });

  it("keeps the pacer's own wait for a throttle, and passes a permanent refusal through untouched", () => {
    const p = new RunPatience(settings, clock().now);
    const throttle = new ThrottleDelayError({ operation: "gallery.all", waitMs: 4000, pacerKey: "k", retryAt: 0 });
    expect(failureInRun(p, "k", throttle)).toBe(throttle);
    const gone = new ApiError({ kind: "not_found", operation: "gallery.all", status: 400 });
    expect(failureInRun(p, "k", gone)).toBe(gone);
    const bug = new TypeError("x is undefined");
    expect(failureInRun(p, "k", bug)).toBe(bug);
  });
});
