// Printing: the only place src/cli writes to stdout and stderr (scripts/checks/cli-output.ts keeps it so). Text for
// a person goes through forTerminal (terminal.ts: controls escaped, dvault's colours painted); JSON for scripts
// (`--json`) stays JSON. A closed pipe (`dvault digest --preview | head`) ends the command quietly instead of with an
// EPIPE stack trace; and `--quiet`'s rule for a run's summary.
import { globalOutput } from "./global.ts";
import { forTerminal } from "./terminal.ts";

/** Text for a person on stdout, as it comes (commander's help is written in pieces). */
export function writeOut(text: string): void {
  process.stdout.write(forTerminal(text));
}

/** Text for a person on stderr, as it comes. */
export function writeErr(text: string): void {
  process.stderr.write(forTerminal(text));
}

/** Lines for a person on stdout (a newline added): the result of a command. */
export function printOut(text = ""): void {
  writeOut(`${text}\n`);
}

/** Lines for a person on stderr (a newline added): notes, warnings and the one line of a failure. */
export function printErr(text: string): void {
  writeErr(`${text}\n`);
}

/** A line on stderr that the next one replaces (a terminal's progress), or "" to clear it. */
export function rewriteErrLine(text: string): void {
  process.stderr.write(`\r\u001b[K${forTerminal(text)}`);
}

/**
 * A document a command writes to stdout for a file or another program (`dvault track export > list.opml`): its bytes
 * as they are when stdout is redirected, escaped like any text when a person reads it in a terminal.
 */
export function printDocument(text: string): void {
  process.stdout.write(process.stdout.isTTY ? forTerminal(text) : text);
}

/**
 * Characters JSON.stringify leaves as they are although a terminal or a browser obeys them: DEL, the C1 controls
 * (U+009B is a one-character CSI) and the direction overrides. They can only stand inside a JSON string, where
 * \uXXXX is the same value: `jq` reads the same document.
 */
const JSON_UNSAFE = /[\u007F-\u009F\u202A-\u202E\u2066-\u2069]/g;

/** A value as JSON text for a terminal: JSON.stringify (which escapes C0 controls, ESC as \u001b) and JSON_UNSAFE. */
export function jsonText(value: unknown, indent = 2): string {
  return JSON.stringify(value, null, indent).replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** One JSON document on stdout, dates as ISO strings. */
export function printJson(value: unknown): void {
  process.stdout.write(`${jsonText(value)}\n`);
}

/** An answer of the service (`dvault api`): indented for a person at a terminal, one line for a pipe (jq, grep). */
export function printAnswer(value: unknown): void {
  process.stdout.write(`${jsonText(value, process.stdout.isTTY ? 2 : 0)}\n`);
}

/**
 * A reader that closed its end (head, less quitting) is not an error: the command exits at once, with the
 * status it had already set (a failure stays a failure under `set -o pipefail`) or 0, and nothing more printed. Any other stream error still throws.
 */
export function exitQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
      throw err;
    });
  }
}

/**
 * A run's summary on stdout, then its verdict, which throws when something is left for a person to fix (the exit
 * code). Under `--quiet` the summary is printed only when the verdict throws, so `-q` prints only problems: a run
 * that went well prints nothing (cron mails nothing). `--json` is printed whatever the flags: a script asked for it.
 */
export async function reportRun({ print, verdict, json }: { print: () => void; verdict: () => void | Promise<void>; json: boolean }): Promise<void> {
  if (json || !globalOutput().quiet) {
    print();
    return await verdict();
  }
  try {
    await verdict();
  } catch (err) {
    print();
    throw err;
  }
}
