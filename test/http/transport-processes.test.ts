// Two dvault processes share one throttled pacer key (same client and user, different tokens): the
// simulator's request log must show that neither sent anything while the key was blocked.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpTransport } from "../../src/api/http.ts";
import { createPacer } from "../../src/api/pacer.ts";
import { staticTokenProvider, type TokenIdentity } from "../../src/api/token-provider.ts";
import { createLogger } from "../../src/log.ts";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";
import type { ChildConfig } from "../helpers/transport-child.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createPacerStores, type PacerStores } from "../helpers/pacer-stores.ts";

const BASE_MS = 50;
const COUNT = 12;

let sim: Simulator;
let r: PacerStores;

beforeAll(async () => {
  [sim, r] = await Promise.all([startSimulator({ seed: 11 }), createPacerStores(TEST_ENGINE)]);
});
afterAll(async () => {
  await Promise.all([sim.close(), r.cleanup()]);
});

describe("HTTP transport across processes", () => {
  it("never sends with a blocked key, from either process", async () => {
    const identity: TokenIdentity = { kind: "user", clientId: "1001", userId: sim.truth.ownerId, account: "owner" };
    const pacerPrefix = `${r.namespace}:pacer-shared`;
    const childConfig: ChildConfig = {
      apiBase: sim.url,
      token: sim.issueUserToken().access_token,
      identity,
      engine: r.engine,
      url: r.url,
      prefix: pacerPrefix,
      holdMs: BASE_MS,
      path: "/placebo",
      query: { proc: "child" },
      count: COUNT,
    };
    const child = spawn(process.execPath, ["--import", "tsx", "test/helpers/transport-child.ts", JSON.stringify(childConfig)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    try {
      const lines = createInterface({ input: child.stdout });
      const [ready] = (await once(lines, "line")) as [string];
      expect(ready).toBe("ready");

      const transport = createHttpTransport({
        apiBase: sim.url,
        // A different token for the same user: the pacer key is the identity, not the token.
        tokens: staticTokenProvider(sim.issueUserToken().access_token, identity),
        pacer: createPacer({ store: r.store(pacerPrefix), holdMs: BASE_MS, jitter: 0, startRate: 1000, maxRate: 1000, pollMs: 5 }),
        log: createLogger({ level: "silent" }),
        maxWaitMs: 30_000,
      });
      sim.clearLog();
      sim.faults.add({ kind: "user_throttle", route: "/placebo", times: 3 });
      sim.faults.add({ kind: "cdn_block", route: "/placebo", times: 1 });

      const childDone = once(lines, "line");
      child.stdin.write("go\n");
      let parentOk = 0;
      for (let i = 0; i < COUNT; i++) {
        await transport.request({ operation: "parent.call", method: "GET", path: "/placebo", query: { proc: "parent" } }, z.looseObject({}));
        parentOk++;
      }
      const [summaryLine] = (await childDone) as [string];
      const summary = JSON.parse(summaryLine) as { ok: number; errors: string[] };
      expect(summary.errors).toEqual([]);
      expect(summary.ok).toBe(COUNT);
      expect(parentOk).toBe(COUNT);

      const entries = sim.log().sort((a, b) => a.seq - b.seq);
      expect(entries).toHaveLength(2 * COUNT + 4);
      const throttled = entries.filter((e) => e.fault);
      expect(throttled).toHaveLength(4);
      // Both processes were running while the key was being throttled.
      const during = entries.filter((e) => e.seq >= throttled[0]!.seq && e.seq <= throttled.at(-1)!.seq + 2);
      expect(new Set(during.map((e) => e.query.proc))).toEqual(new Set(["parent", "child"]));

      // Replay the pacer's rules (jitter 0, one request at a time). After the n-th refusal in a row the key is
      // held for 50·2^(n−1) ms from the moment the answer arrived, so the next request from either process
      // arrives at least that much later.
      let inRow = 0;
      for (let i = 0; i < entries.length - 1; i++) {
        const e = entries[i]!;
        const next = entries[i + 1]!;
        inRow = e.fault ? inRow + 1 : 0;
        if (!e.fault) continue;
        const gap = next.realMs - e.realMs;
        expect(gap, `request #${next.seq} (${String(next.query.proc)}) came inside the hold after #${e.seq}`).toBeGreaterThanOrEqual(
          BASE_MS * 2 ** (inRow - 1),
        );
      }
      expect(inRow).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
