// The global `--quiet` and `-v`, set by the program (src/cli/program.ts) before a command's action runs. No
// imports: the program loads this before it knows which command runs.

export type GlobalOutput = { quiet: boolean; verbose: boolean };

/** The flags as they may come before the command's name (`dvault -v sync`). */
export const GLOBAL_FLAGS: readonly string[] = ["-q", "--quiet", "-v", "--verbose"];

let current: GlobalOutput = { quiet: false, verbose: false };

export function setGlobalOutput(options: Partial<GlobalOutput>): void {
  current = { quiet: options.quiet === true, verbose: options.verbose === true };
}

export function globalOutput(): GlobalOutput {
  return current;
}
