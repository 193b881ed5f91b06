// The simulator's fault rules (src/simulator/faults.ts): `every: N` fails the Nth, 2Nth, ... matching request,
// as a loaded server's steady share of 5xx (docs/service-behaviour.md#server-5xx), and only those.
import { describe, expect, it } from "vitest";
import { FaultStore } from "../../src/simulator/faults.ts";
import { createRng } from "../../src/simulator/rng.ts";

const api = (path: string) => ({ method: "GET", path: `/api/v1/oauth2${path}`, template: undefined });

describe("FaultStore every", () => {
  it("fails every 25th matching request and no other, until cleared", () => {
    const store = new FaultStore(createRng(1));
    store.add({ kind: "status_500", every: 25 });
    const failed: number[] = [];
    for (let i = 1; i <= 100; i++) if (store.decide(api("/gallery/all")).fault) failed.push(i);
    expect(failed).toEqual([25, 50, 75, 100]);
    store.clear();
    expect(store.decide(api("/gallery/all")).fault).toBeUndefined();
  });

  it("counts only the requests its route matches, and stops after `times`", () => {
    const store = new FaultStore(createRng(1));
    store.add({ route: "/gallery/all", kind: "status_500", every: 2, times: 2 });
    const failed: number[] = [];
    for (let i = 1; i <= 10; i++) {
      store.decide(api("/user/profile/x"));
      if (store.decide(api("/gallery/all")).fault) failed.push(i);
    }
    expect(failed).toEqual([2, 4]);
  });

  it("refuses a count that is not a whole number from 1", () => {
    const store = new FaultStore(createRng(1));
    expect(() => store.add({ kind: "status_500", every: 0 })).toThrow(/every expects a whole number >= 1/);
  });
});
