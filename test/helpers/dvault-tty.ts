// `bin/dvault.js` in a terminal: util-linux `script` gives the command a pseudo-terminal (stdin, stdout and stderr
// are all the TTY), and its output, escape codes included, comes back as one stream.
import { spawn } from "node:child_process";
import path from "node:path";
import { type CliRun, collectRun } from "./dvault-cli.ts";
import { TEST_ENGINE } from "./env.ts";

const BIN = path.resolve("bin/dvault.js");

const quote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

export function runDvaultInTty(
  h: { redis: { url: string }; env: Record<string, string> },
  args: readonly string[],
  extraEnv: Record<string, string> = {},
  /** What the person types (the terminal echoes it into the output); without it, nothing is typed. */
  typed?: string,
): Promise<CliRun> {
  const started = Date.now();
  const command = [process.execPath, BIN, ...args].map(quote).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: "/nonexistent-home",
      TERM: "xterm-256color",
      COLUMNS: "140",
      LINES: "40",
      REDIS_URL: h.redis.url,
      DVAULT_ENGINE: TEST_ENGINE,
      ...h.env,
      ...extraEnv,
    },
    stdio: [typed === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  child.stdin?.end(typed);
  return collectRun(child as Parameters<typeof collectRun>[0], started);
}
