// Printing results: JSON for scripts (`--json`), and a closed pipe (`dvault digest --preview | head`) ending the
// command quietly instead of with an EPIPE stack trace.

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
