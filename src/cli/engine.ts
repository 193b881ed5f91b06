// `dvault engine status` and `dvault engine migrate --to <engine>`: where queues, locks and the shared pace live
// (DVAULT_ENGINE), what each engine holds, and the move of an install from one to the other (src/engine/move.ts).
import type { Command } from "commander";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { type Config, type Engine, loadConfig } from "../config.ts";
import { EXIT_FAILED, EXIT_UNAVAILABLE } from "../errors.ts";
import { appliedSettings } from "../config/settings-file.ts";
import { resolveDatabase } from "../db/embedded/resolve.ts";
import { assertDatabaseReady } from "../db/schema-check.ts";
import { type EngineOpener, type MoveSummary, moveEngine, parseEngine } from "../engine/move.ts";
import { type EngineSwitch, switchEngineSetting } from "../engine/setting.ts";
import { type EngineHolding, engineHoldings } from "../engine/status.ts";
import { Producer } from "../queue/producer.ts";
import { movedAtText } from "../queue/holder.ts";
import { QueueAdmin } from "../queue/queue-admin.ts";
import { createServices, type Services } from "../services.ts";
import { SOURCES } from "../sync/sources/index.ts";
import { cliLogger } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";

/** The install's services on either engine (the same database and settings, DVAULT_ENGINE aside). */
export function engineOpener(config: Config): EngineOpener {
  return {
    services: (engine: Engine) => createServices({ config: { ...config, engine }, log: cliLogger(config) }),
    queues: queueToolsOf,
  };
}

function queueToolsOf(services: Services) {
  const producer = new Producer([...JOB_DEFINITIONS], services.queues);
  const admin = new QueueAdmin(services.queues);
  return {
    producer,
    admin,
    async close() {
      await producer.close();
      await admin.close();
    },
  };
}

/**
 * Both engines keep their state in, or beside, the one mirror database: a database that is missing or unmigrated is
 * one line and exit 3 (as for every command that opens it), not a "cannot be opened" per engine with exit 0.
 */
async function assertSharedDatabase(config: Config): Promise<void> {
  const database = await resolveDatabase(config, { migrate: false });
  try {
    await assertDatabaseReady(database.config.databaseUrl);
  } finally {
    database.release();
  }
}

function holdingLine(h: EngineHolding, chosen: Engine): string {
  const mark = h.engine === chosen ? " (chosen)" : "";
  if (!h.reachable) return `  ${h.engine}${mark}: cannot be opened: ${h.problem}`;
  const holders = h.holders.length ? `live: ${h.holders.join(", ")}` : "no live worker";
  const moved = h.movedTo ? `; the install was moved to ${h.movedTo.to} (${movedAtText(h.movedTo)}): a worker set to ${h.engine} is refused` : "";
  return `  ${h.engine}${mark}: ${h.jobs} jobs, ${h.schedulers} schedulers, ${h.paceKeys} pace keys, ${holders}${moved}`;
}

export function summaryLines(s: MoveSummary): string[] {
  const v = s.values;
  const paused = s.pausedQueues.length ? `; paused as on ${s.from}: ${s.pausedQueues.join(", ")}` : "";
  return [
    `moved from ${s.from} to ${s.to}:`,
    `  pace: ${s.paceKeys.length} keys carried, each starting at its learned rate`,
    `  kept: the downloads pause switch ${v.paused ? "on (carried with its reason)" : "off"}, ${v.values} switches and markers, ${v.knownWorkers} known workers, ${v.paidAnswers} paid download answers`,
    `  queues on ${s.to}: ${s.schedules} schedulers, ${s.downloadsQueued} downloads queued from the downloads table${paused}`,
    `  queues on ${s.from}: emptied (${s.sourceEmptied} jobs)${s.targetCleared ? `; ${s.targetCleared} jobs left on ${s.to} by an earlier move removed first` : ""}`,
  ];
}

/**
 * What to do after the move. With the setting written, start the worker; with it left to the person (no settings file,
 * or the environment setting it), a bare `dvault worker` still runs on the old engine and is refused there.
 */
export function nextLine(switched: EngineSwitch, to: Engine): string {
  if (switched.written) return "next: start the worker (dvault worker); it runs on the new engine";
  return `next: once DVAULT_ENGINE=${to} is set, start the worker (dvault worker); it runs on the new engine`;
}

async function migrate(to: Engine, json: boolean): Promise<void> {
  const config = loadConfig();
  let switched: EngineSwitch = { written: undefined, line: "" };
  // Switched while the move still holds its leases, so no worker starts on the old engine in between (src/engine/move.ts).
  const switchSetting = () => void (switched = switchEngineSetting(appliedSettings(), to));
  const summary = await moveEngine({ config, to, opener: engineOpener(config), sources: new Map(SOURCES.map((s) => [s.name, s])), switchSetting });
  if (json) return printJson({ ...summary, setting: { written: switched.written ?? null, line: switched.line } });
  printOut([...summaryLines(summary), switched.line, nextLine(switched, to)].join("\n"));
}

export function registerEngineCommand(program: Command): void {
  const engine = program
    .command("engine")
    .description("where queues, locks and the shared pace live (DVAULT_ENGINE): what each engine holds, or move the install to the other");
  engine
    .command("status")
    .description(
      "which engine the settings choose, and what each engine holds: jobs, schedulers, pace keys, live workers; exit code 3 when the chosen engine cannot be opened, 1 when a move left it (a worker there is refused)",
    )
    .option("--json", "one JSON document")
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig();
      await assertSharedDatabase(config);
      const holdings = await engineHoldings(engineOpener(config));
      // Every engine's line is printed either way; the exit code is a script's answer to "can dvault run here": the
      // other engine out of reach is an install's normal state (Redis absent on PostgreSQL alone), the chosen one is not
      // (3), nor one a move left, where a worker is refused with exit 1 (src/queue/holder.ts).
      const chosen = holdings.find((h) => h.engine === config.engine);
      if (chosen && !chosen.reachable) process.exitCode = EXIT_UNAVAILABLE;
      else if (chosen?.reachable && chosen.movedTo) process.exitCode = EXIT_FAILED;
      if (opts.json) return printJson({ chosen: config.engine, engines: holdings });
      printOut([`engine: ${config.engine} (DVAULT_ENGINE)`, ...holdings.map((h) => holdingLine(h, config.engine))].join("\n"));
    });
  engine
    .command("migrate")
    .description(
      "move the install to the other engine with its pace, switches, schedules and pending work, then switch DVAULT_ENGINE; refused while a worker runs",
    )
    .requiredOption("--to <engine>", "redis or postgres")
    .option("--json", "the move's summary as one JSON document")
    .action(async (opts: { to: string; json?: boolean }) => migrate(parseEngine(opts.to), opts.json === true));
}
