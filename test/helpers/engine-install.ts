// An install's two engines as `dvault engine migrate` (src/engine/move.ts) sees them, for the tests of the move:
// the harness's install opened on either engine, and what each engine holds for it.
import { engineOpener } from "../../src/cli/engine.ts";
import type { Config, Engine } from "../../src/config.ts";
import { knownWorkersKey } from "../../src/digest/alerts.ts";
import { linksDirtyKey } from "../../src/downloads/after-store.ts";
import { inertTextsKey } from "../../src/downloads/inert-texts.ts";
import { paidDownloadsPrefix } from "../../src/downloads/paid-downloads.ts";
import { closeSide, type EngineOpener, type EngineSide, openSide } from "../../src/engine/move.ts";
import { createServices } from "../../src/services.ts";
import { readPausedFlag } from "../../src/status/redis-state.ts";
import { testConfig } from "./config.ts";
import type { DownloadHarness } from "./download-harness.ts";

export const PACE_KEY = "client:1001:user:owner";

/** The harness's install on `engine`, its services on the simulator's clock. */
export function installOn(h: DownloadHarness, engine: Engine): { config: Config; opener: EngineOpener } {
  const config = testConfig({ ...h.env, DVAULT_ENGINE: engine });
  const opener: EngineOpener = {
    services: (e) =>
      createServices({
        config: { ...config, engine: e },
        log: h.log,
        overrides: { now: () => h.sim.clock.now().getTime(), secretKey: { key: Buffer.from(h.keyHex, "hex"), source: "env", created: false } },
      }),
    queues: engineOpener(config).queues,
  };
  return { config, opener };
}

/** One engine opened for a look, closed after `fn`. */
export async function onEngine<T>(h: DownloadHarness, engine: Engine, fn: (side: EngineSide) => Promise<T>): Promise<T> {
  const side = await openSide(installOn(h, engine).opener, engine);
  try {
    return await fn(side);
  } finally {
    await closeSide(side);
  }
}

export type Holding = {
  downloads: number;
  jobs: number;
  schedulers: number;
  paused: { paused: boolean; reason: string | null };
  learned: number | null;
  refused: number | null;
  kept: unknown;
};

/** The markers, the alerts' known workers and the paid answers an install keeps in the coordination store. */
export async function keptValues(side: EngineSide): Promise<unknown> {
  const paid = await side.coord.keysStartingWith(paidDownloadsPrefix(side.prefix));
  return {
    markers: await side.coord.getMany([linksDirtyKey(side.prefix), inertTextsKey(side.prefix)]),
    known: await side.coord.hashGetAll(knownWorkersKey(side.prefix)),
    paid: Object.fromEntries(await Promise.all(paid.map(async (k) => [k.slice(side.prefix.length), await side.coord.get(k)]))),
  };
}

export function holding(h: DownloadHarness, engine: Engine): Promise<Holding> {
  return onEngine(h, engine, async (side) => {
    const counts = await side.queues.admin.counts();
    const status = await side.services.pacer.status(PACE_KEY);
    const pending = (q: (typeof counts)[number]) => q.waiting + q.active + q.delayed;
    return {
      downloads: counts.filter((q) => q.name === "downloads").reduce((sum, q) => sum + pending(q), 0),
      jobs: counts.reduce((sum, q) => sum + pending(q), 0),
      schedulers: await side.queues.admin.schedulerCount(),
      paused: await readPausedFlag(side.coord, side.prefix),
      learned: status.learnedRate,
      refused: status.refusedRate,
      kept: await keptValues(side),
    };
  });
}
