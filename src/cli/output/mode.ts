// How the CLI talks to the person: the global `--quiet` and `-v` (output/global.ts, set by program.ts before a command runs),
// whether stderr is a terminal (live progress) and whether stdout takes colour.
import type { Config, LogLevel } from "../../config.ts";
import { createLogger, type Logger } from "../../log.ts";
import { globalOutput } from "./global.ts";
import { plainLogLines } from "./log-lines.ts";
import pc from "picocolors";
import { type Colors, markerColors } from "./terminal.ts";

/**
 * Live progress lines: stderr is a terminal that can move its cursor (not TERM=dumb: Emacs's shell, some IDE consoles,
 * which show every redraw's escape codes as text; picocolors gives no colour there either), and neither `--quiet` nor
 * `--json` asked for silence.
 */
export function showsLiveProgress(json = false): boolean {
  return process.stderr.isTTY === true && process.env.TERM !== "dumb" && !globalOutput().quiet && !json;
}

/**
 * The colours for text printed on `stream` (stdout by default), painted by the printer (terminal.ts): where the stream
 * is a terminal and NO_COLOR is not set (picocolors' own test, less its "CI means colour"); plain elsewhere.
 */
export function colorsFor(stream: NodeJS.WriteStream = process.stdout): Colors {
  return markerColors(pc.isColorSupported && stream.isTTY === true);
}

const ORDER: readonly LogLevel[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/**
 * The log level of a CLI command, the same in a terminal and in a pipe (cron): `warn` (only problems reach
 * stderr; stdout carries the result), `info` with `-v`, `error` with `--quiet`. LOG_LEVEL is the worker's level:
 * for a command, its default `info` means the default `warn`; `debug` or `trace` (more than `-v` gives) always
 * wins, as does a level quieter than the one chosen here (`error`, `fatal`, `silent`) unless `-v` asks for more.
 * The worker (a daemon) logs at LOG_LEVEL as configured (src/cli/worker.ts).
 */
export function cliLogLevel(configured: LogLevel): LogLevel {
  const rank = (l: LogLevel) => ORDER.indexOf(l);
  if (rank(configured) < rank("info")) return configured;
  const { quiet, verbose } = globalOutput();
  if (verbose) return "info";
  const wanted: LogLevel = quiet ? "error" : "warn";
  return rank(configured) > rank(wanted) ? configured : wanted;
}

/**
 * The logger a command uses (src/log.ts), at cliLogLevel: pino-pretty's lines in a terminal, and where stderr is a
 * pipe or a file one plain line an entry (log-lines.ts), stacks only at debug or trace: a person reads a command's
 * stderr, not a log collector. The worker logs pino's JSON off a terminal (src/cli/worker.ts).
 */
export function cliLogger(config: Pick<Config, "logLevel">): Logger {
  const level = cliLogLevel(config.logLevel);
  if (process.stderr.isTTY === true) return createLogger({ level });
  return createLogger({ level, destination: plainLogLines(level === "debug" || level === "trace"), pretty: false });
}
