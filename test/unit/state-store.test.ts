// The single-use states the dashboard's Connect keeps with each flow's data (src/api/oauth/pkce-state.ts):
// taken once, a replay told apart from a forgery, expiry on an injected clock, and a bounded number live.
import { describe, expect, it } from "vitest";
import { StateStore } from "../../src/api/oauth/pkce-state.ts";

describe("StateStore.take", () => {
  it("hands back the flow's data once; a replay is 'used', a forgery 'unknown', a late one 'expired'", () => {
    let now = 1_000;
    const store = new StateStore<{ verifier: string }>(60_000, () => now);
    const state = store.issue({ verifier: "v1" });
    expect(store.take("forged")).toEqual({ check: "unknown" });
    expect(store.take(state)).toEqual({ check: "ok", data: { verifier: "v1" } });
    expect(store.take(state)).toEqual({ check: "used" });
    expect(store.consume(state), "the CLI's consume still calls a replay unknown").toBe("unknown");

    const late = store.issue({ verifier: "v2" });
    now += 60_001;
    expect(store.take(late)).toEqual({ check: "expired" });
    // A used state is forgotten once it would have expired.
    expect(store.take(state)).toEqual({ check: "unknown" });
  });

  it("keeps at most `limit` live states, dropping the oldest", () => {
    const store = new StateStore<number>(60_000, () => 0, 2);
    const first = store.issue(1);
    const second = store.issue(2);
    const third = store.issue(3);
    expect(store.take(first)).toEqual({ check: "unknown" });
    expect(store.take(second)).toEqual({ check: "ok", data: 2 });
    expect(store.take(third)).toEqual({ check: "ok", data: 3 });
  });
});
