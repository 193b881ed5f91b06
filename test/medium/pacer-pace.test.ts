// The adaptive pace (src/api/pacer.ts) against the simulator's velocity filter (docs/service-behaviour.md#rate-limits),
// over real sockets and real Redis, then real PostgreSQL (one simulator each, so no filter remembers the other's
// calls), with one simulated clock shared by the pacer and the simulator: the pacer's waits advance the
// simulator's time, so minutes of calls run in seconds. Default rates throughout.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPacer, type Pacer, type PacerClock } from "../../src/api/pacer.ts";
import { DEFAULT_API_RATE } from "../../src/config-defaults.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { createPacerStores, PACER_ENGINES, type PacerStores } from "../helpers/pacer-stores.ts";

const DAY_MS = 86_400_000;

let sim: Simulator;
let token: string;
let clock: PacerClock;
let run = 0;

type Run = { calls: number; refused: number; elapsedMs: number };

/** `calls` calls of one key, one at a time, each released with what the simulator answered. */
async function drive(pacer: Pacer, key: string, calls: number): Promise<Run> {
  const start = clock.now();
  let refused = 0;
  for (let i = 0; i < calls; i++) {
    const permit = await pacer.acquire(key, { maxWaitMs: DAY_MS });
    const res = await fetch(`${sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status === 429) refused++;
    else expect(res.status).toBe(200);
    await permit.release(res.status === 429 ? "throttled" : "success");
  }
  return { calls, refused, elapsedMs: clock.now() - start };
}

describe.each(PACER_ENGINES)("the adaptive pace against the simulator, on %s", (engine) => {
  let s: PacerStores;
  beforeAll(async () => {
    s = await createPacerStores(engine);
    sim = await startSimulator({ seed: 16, accessTokenLifetimeS: 30 * 86_400 });
    token = sim.issueUserToken().access_token;
    clock = {
      now: () => sim.clock.now().getTime(),
      sleep: async (ms) => sim.clock.advance(ms),
    };
  });
  afterAll(async () => {
    await Promise.all([sim.close(), s.cleanup()]);
  });

  /** A pacer with the default rates on a namespace of its own (nothing learned). */
  function freshPacer(): Pacer {
    return createPacer({ store: s.store(`${s.namespace}:${++run}`), clock, random: () => 0.5 });
  }

  it("rises quickly to the maximum when the simulator sets no limit", async () => {
    sim.setVelocity(null);
    const pacer = freshPacer();
    // gallery-dl's 233 calls of a 300-item gallery (docs/PERFORMANCE.md): ~4 s against an unlimited service.
    const clean = await drive(pacer, "1001:clean", 233);
    expect(clean.refused).toBe(0);
    expect((await pacer.status("1001:clean")).rate).toBe(DEFAULT_API_RATE.max);
    const floorMs = (233 / DEFAULT_API_RATE.max) * 1000;
    expect(clean.elapsedMs).toBeLessThan(floorMs + 2_000);
  });

  it("settles under a velocity filter of 120 calls per 60 s (20 s decay) with ≤ 2 % of 1 000 calls refused, then rises when it is lifted", async () => {
    sim.setVelocity({ limit: 120, windowMs: 60_000, decayMs: 20_000 });
    const pacer = freshPacer();
    const key = "1001:limited";
    const limited = await drive(pacer, key, 1000);
    const allowedRate = 120 / 60;
    const status = await pacer.status(key);
    console.info(
      `velocity 120/60 s: ${limited.refused} refused, ${(limited.elapsedMs / 1000).toFixed(0)} s, rate ${status.rate?.toFixed(2)}, learned ${status.learnedRate?.toFixed(2)}, lost ${(status.lostMs / 1000).toFixed(0)} s`,
    );
    expect(limited.refused).toBeLessThanOrEqual(20);
    // Room for learning the limit once: 1.5 × the time the limit itself needs.
    expect(limited.elapsedMs).toBeLessThanOrEqual(1.5 * (1000 / allowedRate) * 1000);
    expect(status.learnedRate).toBeLessThanOrEqual(allowedRate);
    expect(status.learnedRate).toBeGreaterThan(allowedRate * 0.6);
    expect(status.lostMs).toBeGreaterThan(0);
    // Refusals are what the simulator counted.
    expect(sim.log().filter((e) => e.fault === "velocity" && e.clientId === "1001").length).toBeGreaterThanOrEqual(limited.refused);

    // The limit goes: the pace rises again, without a refusal.
    sim.setVelocity(null);
    const before = (await pacer.status(key)).rate ?? 0;
    const freed = await drive(pacer, key, 300);
    expect(freed.refused).toBe(0);
    expect((await pacer.status(key)).rate).toBeGreaterThan(before);
  });

  it("takes lone 429s (10 % of calls, random faults, no filter) as faults: a short hold each, the pace kept", async () => {
    sim.setVelocity(null);
    sim.faults.add({ kind: "user_throttle", route: "/placebo", probability: 0.1 });
    try {
      const pacer = freshPacer();
      const key = "1001:faults";
      const faulty = await drive(pacer, key, 300);
      const status = await pacer.status(key);
      console.info(
        `10 % random 429s: ${faulty.refused} refused, ${(faulty.elapsedMs / 1000).toFixed(1)} s, rate ${status.rate?.toFixed(1)}, lost ${(status.lostMs / 1000).toFixed(1)} s`,
      );
      expect(faulty.refused).toBeGreaterThan(15);
      // Each lone refusal costs its hold (1 s and jitter); the calls themselves run near the maximum.
      expect(faulty.elapsedMs).toBeLessThan(faulty.refused * 1_500 + (300 / DEFAULT_API_RATE.max) * 1000 * 4);
      expect(status.rate).toBeGreaterThanOrEqual(DEFAULT_API_RATE.max / 8);
    } finally {
      sim.faults.clear();
    }
  });

  it("starts a new run at the rate it learned", async () => {
    sim.setVelocity({ limit: 120, windowMs: 60_000, decayMs: 20_000 });
    const pacer = freshPacer();
    const key = "1001:rerun";
    await drive(pacer, key, 400);
    const learned = (await pacer.status(key)).learnedRate;
    expect(learned).not.toBeNull();
    // A day later (the filter long decayed), a second run on the same store: it starts where the first learned.
    sim.clock.advance(DAY_MS);
    const second = await drive(pacer, key, 1);
    expect(second.refused).toBe(0);
    expect((await pacer.status(key)).rate).toBeCloseTo(learned ?? 0, 1);
    sim.setVelocity(null);
  });
});
