// Access tokens that live 20 s while four runners sync the same account at once: each expiry costs
// exactly one refresh (single flight), every run succeeds, and the mirror ends exact.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SourceName } from "../../src/sync/source.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

const RUNNERS: SourceName[] = ["profile", "gallery", "notes", "messages"];
const BATCHES = 5;

let h: FaultHarness;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 4, accessTokenLifetimeS: 20 } });
});
afterAll(async () => {
  await h?.close();
});

const refreshes = () => h.sim.log().filter((e) => e.route === "/oauth2/token" && e.form.grant_type === "refresh_token");

describe("access tokens expiring every 20 s under 4 concurrent runners", () => {
  it("refreshes exactly once per expiry", async () => {
    for (let batch = 1; batch <= BATCHES; batch++) {
      h.sim.clock.advance(21_000); // the current access token has expired
      const results = await Promise.all(RUNNERS.map((source) => h.runSource(source)));
      expect(results.map((r) => r.status)).toEqual(RUNNERS.map(() => "ok"));
      expect(refreshes().map((e) => e.status)).toEqual(Array.from({ length: batch }, () => 200));
    }
    // No API call was ever answered 401: every token was refreshed ahead of its expiry.
    expect(h.sim.log().filter((e) => e.status === 401)).toEqual([]);
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    await checkMirror(h);
    console.info(`token expiry: ${BATCHES} expiries x ${RUNNERS.length} runners, ${refreshes().length} refreshes in all`);
  }, 120_000);
});
