// The simulator's velocity filter over real sockets (docs/service-behaviour.md#rate-limits): refusals answer
// the service's 429 and are in the request log, the filter follows the simulated clock, and the control API
// switches it on, reports it and switches it off.
import { afterEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function placebo(s: Simulator, token: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${s.apiUrl}/placebo`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

async function control(s: Simulator, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${s.url}/_sim/${path}`, { method, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("simulator velocity filter", () => {
  it("refuses a user's calls beyond the bucket with the 429 body, logs them, and lets them through after the decay", async () => {
    sim = await startSimulator({ seed: 7, velocity: { limit: 3, windowMs: 3_000, decayMs: 2_000 } });
    const user = sim.issueUserToken().access_token;
    const other = sim.issueUserToken({ clientId: "2002" }).access_token;
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await placebo(sim, user)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect(await placebo(sim, user)).toEqual({
      status: 429,
      body: { error: "user_api_threshold", error_description: "User request limit reached.", status: "error" },
    });
    // Per user: the same owner through another client shares the bucket.
    expect((await placebo(sim, other)).status).toBe(429);
    const refused = sim.log().filter((e) => e.fault === "velocity");
    expect(refused).toHaveLength(4);
    expect(refused.every((e) => e.status === 429)).toBe(true);
    expect(sim.stats()["GET /placebo"]).toEqual({ count: 7, byStatus: { "200": 3, "429": 4 } });
    sim.clock.advance(1_999);
    expect((await placebo(sim, user)).status).toBe(429);
    sim.clock.advance(2_000);
    expect((await placebo(sim, user)).status).toBe(200);
  });

  it("is set, reported and cleared through the control API", async () => {
    sim = await startSimulator({ seed: 7 });
    const user = sim.issueUserToken().access_token;
    expect((await control(sim, "GET", "velocity")).body).toEqual({ settings: null, keys: [] });
    expect((await control(sim, "POST", "velocity", { limit: 0, windowMs: 1, decayMs: 1 })).status).toBe(400);
    const set = await control(sim, "POST", "velocity", { limit: 1, windowMs: 60_000, decayMs: 20_000, per: "client" });
    expect(set.body).toMatchObject({ ok: true, settings: { limit: 1, windowMs: 60_000, decayMs: 20_000, per: "client" } });
    expect((await placebo(sim, user)).status).toBe(200);
    expect(await placebo(sim, user)).toMatchObject({ status: 429, body: { error: "application_api_threshold" } });
    const state = await control(sim, "GET", "velocity");
    expect(state.body.keys).toEqual([{ key: "client:1001", level: 1, tripped: true, lastRefusedAt: sim.clock.now().toISOString() }]);
    expect((await control(sim, "DELETE", "velocity")).status).toBe(200);
    expect((await placebo(sim, user)).status).toBe(200);
  });
});
