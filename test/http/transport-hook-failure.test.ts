// A failure of dvault's own while it handles a good answer (Redis gone as the pacer permit is released) is
// no refusal by the service: the call is retried and succeeds, and a call that keeps meeting it fails as a
// transient network error, never as "the service refused the request (HTTP 200)".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DaClient } from "../../src/api/client.ts";
import { isApiError, isPermanent } from "../../src/api/errors.ts";
import { createHttpTransport } from "../../src/api/http.ts";
import { createPacer, type Pacer } from "../../src/api/pacer.ts";
import { staticTokenProvider } from "../../src/api/token-provider.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createPacerStores, type PacerStores } from "../helpers/pacer-stores.ts";

let r: PacerStores;
let sim: Simulator;

beforeAll(async () => {
  r = await createPacerStores(TEST_ENGINE);
  sim = await startSimulator({ seed: 2, dataset: { deviations: 4 } });
});
afterAll(async () => {
  await sim.close();
  await r.cleanup();
});

/** A real pacer whose permits fail to release `failures` times after a successful answer, as with Redis gone. */
function failingPacer(prefix: string, failures: { left: number }): Pacer {
  const real = createPacer({ store: r.store(prefix) });
  return {
    ...real,
    clock: real.clock,
    async acquire(key, options) {
      const permit = await real.acquire(key, options);
      return {
        ...permit,
        async release(outcome) {
          await permit.release(outcome);
          if (outcome === "success" && failures.left-- > 0) throw new Error("Connection is closed.");
        },
      };
    },
  };
}

function client(prefix: string, failures: { left: number }) {
  const transport = createHttpTransport({
    apiBase: sim.url,
    tokens: staticTokenProvider(sim.issueUserToken().access_token, { kind: "user", clientId: "1001", userId: sim.truth.ownerId, account: "owner" }),
    pacer: failingPacer(prefix, failures),
    log: createLogger({ level: "silent" }),
    retry: { baseDelayMs: 5 },
  });
  return new DaClient(transport);
}

describe("a failure while handling a good answer", () => {
  it("is retried, and the call succeeds", async () => {
    const failures = { left: 1 };
    await expect(client(`${r.namespace}:once`, failures).placebo()).resolves.toBeDefined();
    expect(failures.left).toBeLessThan(1);
  });

  it("that persists is a transient network error naming what failed, not a refusal", async () => {
    const err = await client(`${r.namespace}:always`, { left: 1000 })
      .placebo()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(isApiError(err) && err.kind).toBe("network");
    expect(isPermanent(err)).toBe(false);
    expect(String((err as Error).message)).toMatch(/could not be handled: .*Connection is closed/);
    expect(String((err as Error).message)).not.toMatch(/refused/);
  });
});
