// Printing results: JSON for scripts (`--json`), and a closed pipe (`dvault digest --preview | head`) ending the
// command quietly instead of with an EPIPE stack trace; and `--quiet`'s rule for a run's summary.
import { globalOutput } from "./global.ts";

/** One JSON document on stdout, dates as ISO strings. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
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
