// A hostile API: 30 % of responses throttled (429 bodies on the API, the CDN's 403 HTML on downloads),
// 10 % 5xx, malformed JSON bodies, connections reset mid-download and latency spikes. A full sync and the
// downloads still converge, and the mirror matches the simulator's world exactly.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

let h: FaultHarness;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 9 } });
});
afterAll(async () => {
  await h?.close();
});

describe("a hostile API", () => {
  it("a full sync and the downloads converge through throttles, 5xx, bad JSON, resets and latency", async () => {
    for (const rule of [
      { kind: "user_throttle", probability: 0.2 },
      { kind: "app_throttle", probability: 0.1 },
      { kind: "status_500", probability: 0.05 },
      { kind: "status_503", probability: 0.05 },
      { kind: "malformed_json", probability: 0.05 },
      { kind: "latency", probability: 0.05, latencyMs: 400 },
      { route: "/_cdn", kind: "cdn_block", probability: 0.3 },
      { route: "/_cdn", kind: "reset_mid_body", probability: 0.1 },
    ] as const) {
      h.sim.faults.add(rule);
    }
    const sync = await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    const downloads = await downloadUntilConverged({ services: h.services, deps: h.deps });
    const faulted = h.sim.log().filter((e) => e.fault);
    const kinds = new Set(faulted.map((e) => e.fault));
    // The faults did land: throttles, 5xx and CDN blocks at least.
    expect(faulted.length).toBeGreaterThan(10);
    expect([...kinds].join(" ")).toMatch(/throttle/);
    h.sim.faults.clear();
    const checked = await checkMirror(h);
    console.info(
      `hostile API: ${h.sim.log().length} requests, ${faulted.length} faulted (${[...kinds].sort().join(", ")}), ` +
        `${sync.retries} source re-runs, ${downloads.rounds} download rounds; ${checked.deviations} deviations and ${checked.files} files match`,
    );
  }, 120_000);
});
