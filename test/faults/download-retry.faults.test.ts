// A file whose every transfer fails for a whole run (a CDN answering 500 through all of the run's attempts: a
// fixed three here, instead of the run's patience, so that the run's end is exact) is left failed by dvault with
// its next attempt 15 minutes on; nothing resets it: the loop moves the
// simulated clock to that attempt, dvault's own schedule makes it due, the next run stores it, and the
// closing check holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RETRY_DELAYS_MS } from "../../src/downloads/retry.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, syncUntilConverged, type FaultHarness } from "./harness.ts";

/** A run's attempts at one file (given to runDownloadsOnce), one transfer each (src/downloads/transfer.ts). */
const FAILING_REQUESTS = 3;

let h: FaultHarness;

beforeAll(async () => {
  h = await createFaultHarness({ sim: { seed: 7 } });
});
afterAll(async () => {
  await h?.close();
});

describe("a download failing through a whole run", () => {
  it("is retried by dvault's own schedule once the clock reaches its next attempt", async () => {
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    const id = downloadableOwnerDeviations(h.sim.truth)[0]!.deviationid;
    for (const spelling of new Set([id, id.toLowerCase()]))
      h.sim.faults.add({ route: `/_cdn/original/${spelling}`, kind: "status_500", times: FAILING_REQUESTS });
    const started = h.sim.clock.now().getTime();

    const downloads = await downloadUntilConverged({ services: h.services, deps: h.deps, attempts: FAILING_REQUESTS });
    expect(downloads).toMatchObject({ rounds: 2, retries: 1, advancedMs: RETRY_DELAYS_MS[0] });
    expect(h.sim.clock.now().getTime() - started).toBe(RETRY_DELAYS_MS[0]);
    const failedCdn = h.sim.log().filter((e) => e.fault?.includes("status_500"));
    expect(failedCdn).toHaveLength(FAILING_REQUESTS);
    const { rows } = await h.pool.query(
      "SELECT status::text AS status, failures, next_attempt_at FROM downloads WHERE deviationid = $1 AND kind = 'original'",
      [id],
    );
    expect(rows).toEqual([{ status: "done", failures: 0, next_attempt_at: null }]);
    await checkMirror(h);
  }, 120_000);
});
