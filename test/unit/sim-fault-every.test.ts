// The simulator's `every` fault rule: a steady fault rate without randomness (src/simulator/faults.ts).
import { describe, expect, it } from "vitest";
import { FaultStore, type MatchTarget } from "../../src/simulator/faults.ts";
import { createRng } from "../../src/simulator/rng.ts";

const call: MatchTarget = { method: "GET", path: "/api/v1/oauth2/gallery/all", template: "/api/v1/oauth2/gallery/all" };

function outcomes(store: FaultStore, n: number): string[] {
  return Array.from({ length: n }, () => store.decide(call).fault?.kind ?? "ok");
}

describe("FaultStore every", () => {
  it("answers every Nth matching request, counting those an earlier rule answered", () => {
    const store = new FaultStore(createRng(1));
    store.add({ kind: "status_503", times: 1 });
    store.add({ kind: "status_500", every: 3 });
    expect(outcomes(store, 9)).toEqual(["status_503", "ok", "status_500", "ok", "ok", "status_500", "ok", "ok", "status_500"]);
  });

  it("stops when its times budget is spent, and refuses a count below 1", () => {
    const store = new FaultStore(createRng(1));
    store.add({ kind: "status_500", every: 2, times: 2 });
    expect(outcomes(store, 7)).toEqual(["ok", "status_500", "ok", "status_500", "ok", "ok", "ok"]);
    expect(() => store.add({ kind: "status_500", every: 0 })).toThrow(/whole number/);
  });
});
