// `dvault engine migrate --to <engine>`: an install moves from Redis to PostgreSQL alone, or back, with its pace,
// its switches and its pending work, nothing run twice (README, "Moving between engines"). In this order, so that a
// crash at any step leaves an install that runs on the engine it was on:
//   1. proven before anything is written: the source opens, is not an engine the install was moved away from, and no
//      worker or `--once` run holds a lease there, then the same of the target (a refused move has written nothing on
//      either but its own lease). The move holds a lease of its own on each engine from before that look until its
//      end (ENGINE_MIGRATE_ROLE, src/queue/holder.ts): a worker or `--once` run that starts meanwhile registers, then
//      finds it, and stops without touching the queues; killed, the move's lease expires as any does;
//   2. the target's queues emptied of anything an earlier, interrupted move left; each pacer key's learned state
//      copied (src/engine/carry.ts);
//   3. the target's queues filled as a worker fills them at start (src/engine/install-work.ts): the sources'
//      schedules from the settings, the downloads queue from the downloads table (the truth of what is wanted and
//      queued, so a row the source's queue held is queued again here, never copied job by job), the maintenance
//      schedulers; a queue paused on the source is paused here;
//   4. the coordination values that must survive copied (src/engine/carry.ts);
//   5. the source's queues obliterated, so a worker pointed back at it finds nothing to run twice (one that starts
//      there after a crash rebuilds them from the same table);
//   6. last, a note on the source of where the install went (src/queue/holder.ts refuses a starter there), then the
//      setting switched (src/engine/setting.ts) by the caller's `switchSetting`, while the leases are still held.
import type { Config, Engine } from "../config.ts";
import { settleLegacyDownloadsPause } from "../coord/downloads-pause.ts";
import { UserError } from "../errors.ts";
import {
  clearMovedTo,
  ENGINE_MIGRATE_ROLE,
  type HolderLease,
  holderName,
  holdLease,
  liveHolders,
  noteMovedTo,
  refuseIfMovedAway,
  thisHolder,
} from "../queue/holder.ts";
import type { Producer } from "../queue/producer.ts";
import type { QueueAdmin } from "../queue/queue-admin.ts";
import type { Services } from "../services.ts";
import type { SourceDefinition, SourceName } from "../sync/source.ts";
import { type CarriedValues, carryPace, carryValues, type StoreSide } from "./carry.ts";
import { installWork } from "./install-work.ts";

export const ENGINES: readonly Engine[] = ["redis", "postgres"];

/** The engine `--to` names; a typo is refused before anything is opened. */
export function parseEngine(text: string): Engine {
  const engine = ENGINES.find((e) => e === text.trim().toLowerCase());
  if (!engine) throw new UserError(`--to expects redis or postgres, not ${JSON.stringify(text)}: nothing was changed`);
  return engine;
}

/** The producer and the operator's view of one engine's queues, closed with close(). */
export type QueueTools = { producer: Producer; admin: QueueAdmin; close(): Promise<void> };

/** One engine opened: its services (the same database), its queues; during a move, the move's lease there. */
export type EngineSide = StoreSide & { engine: Engine; services: Services; queues: QueueTools; lease?: HolderLease };

export type EngineOpener = {
  /** The services of the install on `engine` (its config with DVAULT_ENGINE=engine). */
  services(engine: Engine): Promise<Services>;
  /** The queues of those services (the CLI builds the producer from the job catalogue). */
  queues(services: Services): QueueTools;
};

export type MoveSummary = {
  from: Engine;
  to: Engine;
  paceKeys: string[];
  values: CarriedValues;
  /** Jobs an earlier, interrupted move had left on the target, removed before the rebuild. */
  targetCleared: number;
  schedules: number;
  downloadsQueued: number;
  pausedQueues: string[];
  /** Jobs the source's queues held when they were obliterated. */
  sourceEmptied: number;
};

/** The steps of a move, in their order (the top of this file): each is reported once it is done. */
export const MOVE_STEPS = ["checked", "target-cleared", "pace-carried", "work-installed", "values-carried", "source-emptied"] as const;
export type MoveStep = (typeof MOVE_STEPS)[number];

/**
 * The settings the move installs the target's schedules from, and the sync sources they schedule; `onStep` hears
 * each step once it is done (the CLI's progress lines; a test stops a move there as a crash would).
 */
export type MoveRequest = {
  config: Config;
  sources: ReadonlyMap<SourceName, SourceDefinition>;
  onStep?: (step: MoveStep) => void | Promise<void>;
  /** How long the move's leases outlive a killed move (default a lease's own TTL, src/queue/holder.ts; a test's is shorter). */
  leaseTtlMs?: number;
};

/** Opens one engine; with a role, a failure says which engine of the move it was, with the reason's own line (and exit code). */
export async function openSide(opener: EngineOpener, engine: Engine, role?: "source" | "target"): Promise<EngineSide> {
  let services: Services;
  try {
    services = await opener.services(engine);
  } catch (err) {
    if (!(err instanceof UserError) || !role) throw err;
    const where = role === "source" ? "the install is on now" : "to move to";
    throw new UserError(`the ${role} engine (${engine}, ${where}) cannot be used, nothing was changed: ${err.message}`, err.exitCode);
  }
  return { engine, services, coord: services.coord, pace: services.pacer, prefix: services.config.redisPrefix, queues: opener.queues(services) };
}

export async function closeSide(side: EngineSide | undefined): Promise<void> {
  if (!side) return;
  await side.lease?.stop().catch(() => undefined);
  await side.queues.close().catch(() => undefined);
  await side.services.close().catch(() => undefined);
}

/**
 * Takes the move's lease on the side, then refuses while a worker or a `--once` run (or another move) holds one there
 * too: registered before it looks, as they are (holdWorkLease), so a process starting meanwhile cannot be missed.
 */
async function holdIdle(side: EngineSide, role: "source" | "target", ttlMs: number | undefined): Promise<void> {
  side.lease = await holdLease(side.coord, side.prefix, { roles: [ENGINE_MIGRATE_ROLE], ...(ttlMs ? { ttlMs } : {}) });
  const live = (await liveHolders(side.coord, side.prefix)).filter((h) => h.holder !== thisHolder());
  if (live.length === 0) return;
  const who = live.map(holderName).join(", ");
  const doing = role === "source" ? "runs on the source engine" : "already uses the target engine";
  throw new UserError(`${who} (a worker or a dvault --once run) ${doing} (${side.engine}): stop it first, then run dvault engine migrate again`);
}

/**
 * Steps 1 to 5 (see the top of this file), then `switchSetting` (step 6) before the move's leases are given back, so
 * no worker starts on the source between the two. The source is opened and found idle before the target is opened at
 * all, so a refused move has not touched the target.
 */
export async function moveEngine({
  config,
  to,
  opener,
  sources,
  onStep,
  leaseTtlMs,
  switchSetting,
}: MoveRequest & { to: Engine; opener: EngineOpener; switchSetting?: () => void | Promise<void> }): Promise<MoveSummary> {
  if (to === config.engine) throw new UserError(`the install is on ${to} already (DVAULT_ENGINE=${to}): nothing to move`);
  let source: EngineSide | undefined;
  let target: EngineSide | undefined;
  try {
    source = await openSide(opener, config.engine, "source");
    await holdIdle(source, "source", leaseTtlMs);
    // An engine the install was moved away from holds nothing of it: a move from there (the printed move back run a
    // second time, or where the setting still names the old engine) emptied the live engine's queues, its paused
    // queues resumed, and put the old pace and switches over the live ones.
    await refuseIfMovedAway(source.coord, source.prefix, "nothing was changed");
    target = await openSide(opener, to, "target");
    await holdIdle(target, "target", leaseTtlMs);
    await onStep?.("checked");
    const summary = await carryAndRebuild(source, target, { config, sources, onStep });
    // Still under the move's leases: a process that read the old setting and registers on the source after them
    // finds this note and stops (holdWorkLease), instead of running on the emptied source beside the target. Noted
    // before the switch, so that a move killed or failing between the two leaves the note (starters on the source
    // refused, told where the work is) rather than a switched setting with no note (a starter still set to the
    // source runs there unseen, beside the install's workers on the target).
    await noteMovedTo(source.coord, source.prefix, target.engine, new Date(source.services.now()));
    await switchSetting?.();
    return summary;
  } finally {
    await closeSide(target);
    await closeSide(source);
  }
}

/**
 * Obliterates every queue of the side; how many jobs they held. A pause switch an older version left under BullMQ's
 * paused-list name (src/coord/downloads-pause.ts) fails BullMQ's obliterate (WRONGTYPE), so it is moved to its own
 * key first; the switch itself stays: a move stopped before the setting is switched leaves the source as paused as
 * it was (test/medium/engine-migrate-crash.test.ts), and the target's is replaced by the source's (carryValues).
 */
async function emptyQueues(side: EngineSide): Promise<number> {
  await settleLegacyDownloadsPause(side.coord, side.prefix);
  return side.queues.admin.obliterateAll();
}

async function carryAndRebuild(source: EngineSide, target: EngineSide, { config, sources, onStep }: MoveRequest): Promise<MoveSummary> {
  const targetCleared = await emptyQueues(target);
  // The install comes (back) to the target: an earlier move's note that it went away from there goes.
  await clearMovedTo(target.coord, target.prefix);
  await onStep?.("target-cleared");
  const paceKeys = await carryPace(source, target);
  await onStep?.("pace-carried");
  const pausedQueues = (await source.queues.admin.counts()).filter((q) => q.paused).map((q) => q.name);
  const parts = { sync: true, downloads: true, maintenance: true };
  const installed = await installWork({ services: target.services, producer: target.queues.producer, sources, schedules: config.schedules, parts });
  for (const name of pausedQueues) await target.queues.admin.pause(name);
  await onStep?.("work-installed");
  // The switches last, once the target's queues are filled.
  const values = await carryValues(source, target, source.services.now());
  await onStep?.("values-carried");
  const sourceEmptied = await emptyQueues(source);
  await onStep?.("source-emptied");
  return {
    from: source.engine,
    to: target.engine,
    paceKeys,
    values,
    targetCleared,
    schedules: await target.queues.admin.schedulerCount(),
    // The jobs the install added: a row wanted at the move is claimed and then met again by the rebuild's pass over the
    // queued rows, so the rows checked would count it twice.
    downloadsQueued: installed.downloads?.added ?? 0,
    pausedQueues,
    sourceEmptied,
  };
}
