// The real worker (src/worker.ts) over a download harness's simulator, database, Redis prefix and archive,
// with the harness's clock and key: what a test of the whole daemon starts.
import { startWorker, type RunningWorker } from "../../src/worker.ts";
import { testConfig } from "./config.ts";
import type { DownloadHarness } from "./download-harness.ts";

/** Starts a worker on the harness's environment plus `env` (roles, a cluster's REDIS_URL, ...); the caller stops it. */
export function startHarnessWorker(h: DownloadHarness, env: Record<string, string> = {}): Promise<RunningWorker> {
  return startWorker({
    config: testConfig({ ...h.env, ...env }),
    log: h.log,
    handleSignals: false,
    overrides: {
      now: () => h.sim.clock.now().getTime(),
      secretKey: { key: Buffer.from(h.keyHex, "hex"), source: "env", created: false },
      pacer: { pollMs: 5 },
    },
  });
}

/** Originals stored so far. */
export async function doneOriginals(h: Pick<DownloadHarness, "pool">): Promise<number> {
  const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE kind = 'original' AND status = 'done'");
  return rows[0]?.n ?? 0;
}
