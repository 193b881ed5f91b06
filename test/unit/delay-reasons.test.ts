// Why a job waits, in one word each (issue #26): a quota deferral, a file held elsewhere and paused downloads are
// never taken for a throttle; a throttle is only an answer in which the service or its CDN refused; a wait for
// dvault's own pacer is "paced". What worker-host.ts logs comes from delayOf.
import { describe, expect, it } from "vitest";
import { ThrottleDelayError } from "../../src/api/errors.ts";
import { DELAY_WORDS, delayOf, JobWaitError } from "../../src/queue/job-definition.ts";
import { RetryInRunError } from "../../src/queue/run-patience.ts";

const throttle = (status?: number) =>
  new ThrottleDelayError({ operation: "gallery.folders", ...(status ? { status } : {}), waitMs: 2000, pacerKey: "1001:u", retryAt: 2000 });

describe(delayOf.name, () => {
  it("names each wait by what caused it", () => {
    const cases: Array<[unknown, string]> = [
      [new JobWaitError("original deferred to the next quota window", 126_432_611, "download-quota:A", "deferred"), "deferred"],
      [new JobWaitError("another process holds it", 15_000, "download-lock:A", "busy"), "busy"],
      [new JobWaitError("disk nearly full", 5_000, "disk", "paused"), "paused"],
      [throttle(429), "throttled"],
      [throttle(503), "throttled"],
      // CloudFront's HTML 403 (src/downloads/transfer.ts carries its status).
      [throttle(403), "throttled"],
      // The pacer would hold the request longer than the caller waits, and nothing was refused.
      [throttle(), "paced"],
      [new RetryInRunError(400, "A:original", new Error("socket hang up")), "retry"],
    ];
    expect(cases.map(([err]) => delayOf(err)?.reason)).toEqual(cases.map(([, reason]) => reason));
  });

  it("keeps the wait and the key; an error that asks for no delay has none", () => {
    expect(delayOf(new JobWaitError("deferred", 126_432_611, "download-quota:A", "deferred"))).toEqual({
      waitMs: 126_432_611,
      key: "download-quota:A",
      reason: "deferred",
    });
    expect(delayOf(new Error("boom"))).toBeUndefined();
  });

  it("logs each with its own word first, and only a refusal says throttled", () => {
    for (const [reason, words] of Object.entries(DELAY_WORDS)) {
      expect(words.startsWith(reason === "deferred" ? "deferred (quota):" : reason === "busy" ? "busy elsewhere:" : `${reason}:`)).toBe(true);
      expect(/throttl/.test(words)).toBe(reason === "throttled");
    }
  });
});
