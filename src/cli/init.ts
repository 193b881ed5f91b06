// `dvault init`: writes a settings file (the commented template, src/config/catalogue.ts, with the chosen lines
// set) that names the servers dvault found, or, when no PostgreSQL and no Redis answer, PostgreSQL alone on the
// embedded server (DVAULT_ENGINE=postgres, DATABASE_URL=embedded). It never switches an install by itself: an
// existing settings file is kept unless --force.
import { chmodSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { type Config, loadConfig } from "../config.ts";
import { renderTemplate } from "../config/catalogue.ts";
import { appliedSettings } from "../config/settings-file.ts";
import { postgresAnswers } from "../db/server-answers.ts";
import { UserError } from "../errors.ts";
import { redisAnswers } from "../queue/redis.ts";
import { maskUrl } from "../redact.ts";
import { printOut } from "./output/print.ts";

export type InitChoice = Readonly<{ settings: Record<string, string>; lines: string[] }>;

/** What to write, from which servers answer at the configured (by default the default) URLs. */
export async function chooseSettings(config: Config): Promise<InitChoice> {
  const embedded = config.databaseUrl === "embedded";
  const [pg, redis] = await Promise.all([embedded ? false : postgresAnswers(config.databaseUrl), redisAnswers(config.redisUrl)]);
  const database = pg ? config.databaseUrl : "embedded";
  const lines = [
    pg
      ? `PostgreSQL: the server at ${maskUrl(config.databaseUrl)} answers: dvault keeps its mirror there`
      : `PostgreSQL: ${embedded ? "DATABASE_URL=embedded is set" : `none answers at ${maskUrl(config.databaseUrl)}`}: dvault runs its own (DATABASE_URL=embedded), its data in ${path.join(config.dataDir, "postgres")}`,
    redis
      ? `Redis: the server at ${maskUrl(config.redisUrl)} answers: queues, locks and the shared pace live there (DVAULT_ENGINE=redis)`
      : `Redis: none answers at ${maskUrl(config.redisUrl)}: queues, locks and the shared pace live in PostgreSQL (DVAULT_ENGINE=postgres)`,
  ];
  const settings: Record<string, string> = { DATABASE_URL: database, DVAULT_ENGINE: redis ? "redis" : "postgres" };
  if (redis) settings.REDIS_URL = config.redisUrl;
  return { settings, lines };
}

/** The template with each chosen setting's commented line (`# NAME=default`) replaced by `NAME=value`. */
export function settingsFileText(settings: Record<string, string>): string {
  let text = renderTemplate();
  for (const [name, value] of Object.entries(settings)) {
    const line = `${name}=${/[\s#"'$]/.test(value) ? JSON.stringify(value) : value}`;
    const commented = new RegExp(`^# ${name}=.*$`, "m");
    text = commented.test(text) ? text.replace(commented, line) : `${text.trimEnd()}\n${line}\n`;
  }
  return text;
}

export function registerInitCommand(program: Command): void {
  program
    .command("init")
    .description("write a settings file naming the PostgreSQL and Redis servers that answer, or PostgreSQL alone on an embedded server when none does")
    .option("--file <path>", "the settings file to write (default: the one dvault reads, ./.env)")
    .option("--force", "overwrite an existing settings file")
    .action(async (opts: { file?: string; force?: boolean }) => {
      const file = path.resolve(opts.file ?? appliedSettings().file ?? ".env");
      const there = statSync(file, { throwIfNoEntry: false });
      // --force writes over a file, never a folder: the advice below would only lead to EISDIR.
      if (there?.isDirectory()) throw new UserError(`${file} is a folder: give --file the settings file's path (such as ${path.join(file, ".env")})`);
      if (there && !opts.force) {
        throw new UserError(`${file} exists: dvault init keeps existing settings; edit it, or run dvault init --force to write it anew`);
      }
      const choice = await chooseSettings(loadConfig());
      try {
        // Mode 600: a DATABASE_URL or REDIS_URL written here may hold a password. writeFileSync's mode applies only
        // to a file it creates: one written over with --force keeps its mode (often 644) unless set again.
        writeFileSync(file, settingsFileText(choice.settings), { mode: 0o600 });
        chmodSync(file, 0o600);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === undefined) throw err;
        throw new UserError(`cannot write ${file} (${code}): give --file a path in a folder that exists and can be written`);
      }
      const chosen = Object.entries(choice.settings).map(([name, value]) => `${name}=${name.endsWith("_URL") ? maskUrl(value) : value}`);
      printOut(
        [`wrote ${file}: ${chosen.join(" ")}`, ...choice.lines.map((l) => `  ${l}`), "next: dvault migrate, then dvault auth login (README)"].join("\n"),
      );
    });
}
