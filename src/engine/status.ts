// `dvault engine status`: which engine the settings choose, and what each engine holds for this install (its
// queues' jobs and schedulers, the pace's keys, the live workers and `--once` runs), so a person sees before and
// after `dvault engine migrate` where the install's work is, and on the engine a move left, the note it left there
// (src/queue/holder.ts refuses a worker set to that engine). An engine that cannot be opened says why, in one line.
import type { Engine } from "../config.ts";
import { holderName, liveHolders, type MovedTo, movedAway } from "../queue/holder.ts";
import { closeSide, ENGINES, type EngineOpener, type EngineSide, openSide } from "./move.ts";

export type EngineHolding =
  | { engine: Engine; reachable: true; jobs: number; schedulers: number; paceKeys: number; holders: string[]; movedTo: MovedTo | null }
  | { engine: Engine; reachable: false; problem: string };

async function holding(side: EngineSide): Promise<EngineHolding> {
  const counts = await side.queues.admin.counts();
  const jobs = counts.reduce((sum, q) => sum + q.waiting + q.active + q.delayed, 0);
  const holders = (await liveHolders(side.coord, side.prefix)).map(holderName);
  return {
    engine: side.engine,
    reachable: true,
    jobs,
    schedulers: await side.queues.admin.schedulerCount(),
    paceKeys: (await side.pace.keys()).length,
    holders,
    movedTo: (await movedAway(side.coord, side.prefix)) ?? null,
  };
}

export async function engineHoldings(opener: EngineOpener): Promise<EngineHolding[]> {
  return Promise.all(
    ENGINES.map(async (engine) => {
      let side: EngineSide | undefined;
      try {
        side = await openSide(opener, engine);
        return await holding(side);
      } catch (err) {
        return { engine, reachable: false as const, problem: err instanceof Error ? err.message : String(err) };
      } finally {
        await closeSide(side);
      }
    }),
  );
}
