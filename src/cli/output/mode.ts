// How the CLI talks to the person: the global `--quiet` and `-v` (output/global.ts, set by program.ts before a command runs),
// whether stderr is a terminal (live progress) and whether stdout takes colour.
import pc from "picocolors";
import type { Config, LogLevel } from "../../config.ts";
import { createLogger, type Logger } from "../../log.ts";
import { globalOutput } from "./global.ts";

/** Live progress lines: stderr is a terminal, and neither `--quiet` nor `--json` asked for silence. */
export function showsLiveProgress(json = false): boolean {
  return process.stderr.isTTY === true && !globalOutput().quiet && !json;
}

/** Colour on stdout: a terminal, and NO_COLOR not set (picocolors' own test, less its "CI means colour"). */
export type Colors = ReturnType<typeof pc.createColors>;

export function colorsFor(stream: NodeJS.WriteStream = process.stdout): Colors {
  return pc.createColors(pc.isColorSupported && stream.isTTY === true);
}

const ORDER: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/**
 * The CLI's log level: `--quiet` → error; `-v` → info; in a terminal otherwise → warn (the progress lines tell
 * the rest); elsewhere the configured level (LOG_LEVEL, default info). A configured debug or trace, or a level
 * quieter than the one chosen here, always wins: someone asked for it.
 */
export function cliLogLevel(configured: LogLevel, tty = process.stderr.isTTY === true, warnByDefault = false): LogLevel {
  const rank = (l: LogLevel) => ORDER.indexOf(l);
  if (rank(configured) < rank("info")) return configured;
  const wanted: LogLevel = globalOutput().quiet ? "error" : globalOutput().verbose ? "info" : tty || warnByDefault ? "warn" : configured;
  return globalOutput().verbose ? wanted : rank(configured) > rank(wanted) ? configured : wanted;
}

/**
 * The logger a command uses (src/log.ts), at cliLogLevel. `warnByDefault`: a command whose info lines are noise
 * everywhere (status, auth, digest…), at warn unless -v, in a pipe too.
 */
export function cliLogger(config: Pick<Config, "logLevel">, options: { warnByDefault?: boolean } = {}): Logger {
  return createLogger({ level: cliLogLevel(config.logLevel, process.stderr.isTTY === true, options.warnByDefault === true) });
}
