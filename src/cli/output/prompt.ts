// A line read from the person (a pasted token or redirect URL): the prompt on stderr, so stdout keeps only results.
import readline from "node:readline";
import { UserError } from "../../errors.ts";
import { forTerminal } from "./terminal.ts";

/** One line of stdin; the prompt is shown only when stdin is a terminal (nothing when the answer is piped in). */
export function readLine(prompt: string): Promise<string> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY === true });
  return new Promise<string>((resolve, reject) => {
    let answered = false;
    rl.question(process.stdin.isTTY ? forTerminal(prompt) : "", (answer) => {
      answered = true;
      rl.close();
      // A piped stdin would otherwise keep the process alive after the command is done.
      if (!process.stdin.isTTY) process.stdin.destroy();
      resolve(answer);
    });
    rl.on("close", () => {
      if (!answered) reject(new UserError("nothing was pasted (stdin closed)"));
    });
  });
}
