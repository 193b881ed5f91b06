// A command's log entries as a person reads them when stderr is a pipe or a file (`dvault sync --once 2>&1 | less`,
// cron's mail): one plain line each, `dvault: warning: <message> (key=value …)`, through the printer (controls
// escaped), never pino's JSON. The worker, a daemon whose lines a log collector reads, keeps JSON (src/log.ts).
import type { DestinationStream } from "pino";
import { shownInTerminal } from "../../text/controls.ts";
import { printErr } from "./print.ts";

/** pino's numeric levels as a line names them; info, what -v asks for, needs no word. */
const LEVEL_WORDS: Readonly<Record<number, string>> = { 10: "trace: ", 20: "debug: ", 30: "", 40: "warning: ", 50: "error: ", 60: "fatal: " };
/** What every entry carries and the line says otherwise (or not at all). */
const UNSHOWN = new Set(["level", "time", "pid", "hostname", "msg"]);

/** A value as `key=value` shows it: bare when it is one word, quoted as JSON otherwise. */
function valueText(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=()]+$/.test(value) ? value : JSON.stringify(value);
  if (value === null || typeof value !== "object") return String(value);
  return JSON.stringify(value);
}

/** An error as src/redact.ts serializeError leaves it: its type and message; the stack only when asked for. */
function errorText(err: unknown): { field: string; stack: string | undefined } {
  if (err === null || typeof err !== "object") return { field: valueText(err), stack: undefined };
  const { type, message, stack } = err as { type?: unknown; message?: unknown; stack?: unknown };
  const text = `${typeof type === "string" ? `${type}: ` : ""}${typeof message === "string" ? message : ""}`;
  return { field: JSON.stringify(text), stack: typeof stack === "string" ? stack : undefined };
}

/** One pino entry (parsed) as its plain line; with `stacks` (LOG_LEVEL=debug or trace) an error's stack follows it, indented. */
export function plainLogLine(entry: Record<string, unknown>, stacks: boolean): string {
  const fields: string[] = [];
  let stack: string | undefined;
  for (const [key, value] of Object.entries(entry)) {
    if (UNSHOWN.has(key) || value === undefined) continue;
    if (key !== "err") {
      fields.push(`${key}=${valueText(value)}`);
      continue;
    }
    const err = errorText(value);
    fields.push(`err=${err.field}`);
    stack = err.stack;
  }
  // The message on the line's one line: a newline in it (text from outside, pino's %s) must not start a line of its own.
  const line = `dvault: ${LEVEL_WORDS[Number(entry.level)] ?? ""}${typeof entry.msg === "string" ? shownInTerminal(entry.msg) : ""}${fields.length ? ` (${fields.join(" ")})` : ""}`;
  return stacks && stack ? `${line}\n${stack.replace(/^/gm, "    ")}` : line;
}

/** pino's destination for a command whose stderr is no terminal: each entry printed as its plain line. */
export function plainLogLines(stacks: boolean): DestinationStream {
  return {
    write(chunk: string) {
      for (const text of chunk.split("\n")) {
        if (!text) continue;
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(text) as Record<string, unknown>;
        } catch {
          printErr(text);
          continue;
        }
        printErr(plainLogLine(entry, stacks));
      }
    },
  };
}
