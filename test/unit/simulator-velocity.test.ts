// The simulator's velocity filter (src/simulator/velocity.ts) against docs/service-behaviour.md#rate-limits:
// a bucket per user draining at limit/windowMs, tripped by a request into a full bucket, kept tripped by
// requests sent meanwhile, untripped after decayMs without requests.
import { describe, expect, it } from "vitest";
import { checkVelocity, VelocityFilter } from "../../src/simulator/velocity.ts";

const T0 = Date.parse("2026-11-02T09:00:00Z");

describe("VelocityFilter", () => {
  it("admits a burst up to the limit, refuses the next with the user throttle's 429, then sustains limit/window", () => {
    const f = new VelocityFilter({ limit: 10, windowMs: 10_000, decayMs: 5_000 });
    for (let i = 0; i < 10; i++) expect(f.admit("user:A", T0).refused).toBe(false);
    const refused = f.admit("user:A", T0);
    expect(refused.refused).toBe(true);
    if (refused.refused) expect(refused.reply).toMatchObject({ status: 429, json: { error: "user_api_threshold" } });
    // Tripped: after the decay without requests, and the bucket drained by 5 (1 per second), it admits again.
    expect(f.admit("user:A", T0 + 4_999).refused).toBe(true);
    expect(f.admit("user:A", T0 + 4_999 + 5_000).refused).toBe(false);
    // A steady 1 call per second (the drain rate) is never refused.
    const start = T0 + 20_000;
    for (let i = 0; i < 100; i++) expect(f.admit("user:A", start + i * 1_000).refused).toBe(false);
  });

  it("keeps refusing while requests keep coming within the decay, whatever the bucket", () => {
    const f = new VelocityFilter({ limit: 2, windowMs: 1_000, decayMs: 3_000 });
    f.admit("k", T0);
    f.admit("k", T0);
    expect(f.admit("k", T0).refused).toBe(true);
    // One request every 2.9 s: the bucket has long drained, but each one restarts the decay.
    for (let i = 1; i <= 10; i++) expect(f.admit("k", T0 + i * 2_900).refused).toBe(true);
    expect(f.state(T0 + 29_000 + 2_999)[0]).toMatchObject({ key: "k", tripped: true });
    expect(f.state(T0 + 29_000 + 3_000)[0]).toMatchObject({ key: "k", tripped: false, level: 0 });
    expect(f.admit("k", T0 + 29_000 + 3_000).refused).toBe(false);
  });

  it("keeps one bucket per user, or per client when asked, and refuses client buckets with the client throttle", () => {
    const perUser = new VelocityFilter({ limit: 1, windowMs: 1_000, decayMs: 1_000 });
    expect(perUser.keyOf({ userId: "U1", clientId: "1001" })).toBe("user:U1");
    expect(perUser.keyOf({ clientId: "1001" })).toBe("client:1001");
    expect(perUser.admit("user:U1", T0).refused).toBe(false);
    expect(perUser.admit("user:U2", T0).refused).toBe(false);
    const perClient = new VelocityFilter({ limit: 1, windowMs: 1_000, decayMs: 1_000, per: "client" });
    expect(perClient.keyOf({ userId: "U1", clientId: "1001" })).toBe("client:1001");
    perClient.admit("client:1001", T0);
    const refused = perClient.admit("client:1001", T0);
    expect(refused.refused && refused.reply.json).toMatchObject({ error: "application_api_threshold" });
  });

  it("is off without settings and after set(null); refuses bad settings with what is wrong", () => {
    const f = new VelocityFilter();
    expect(f.keyOf({ userId: "U" })).toBeUndefined();
    f.set({ limit: 1, windowMs: 1, decayMs: 1 });
    expect(f.keyOf({ userId: "U" })).toBe("user:U");
    f.set(null);
    expect(f.get()).toBeNull();
    expect(() => checkVelocity({ limit: 0, windowMs: 1, decayMs: 1 })).toThrow(/velocity.limit must be a positive number/);
    expect(() => checkVelocity({ limit: 1, windowMs: 1, decayMs: 1, per: "ip" })).toThrow(/velocity.per/);
  });
});
