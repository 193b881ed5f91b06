// The embedded server's test fixtures: a data folder of its own under /tmp that the server's OS user can enter
// (run as root, the server runs as `postgres`, which cannot enter a mode-700 folder: src/db/embedded/layout.ts),
// processes holding a lease (test/medium/embedded-holder-child.ts), and `bin/dvault.js` with that folder.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { stopEmbedded } from "../../src/db/embedded/status.ts";
import { type CliRun, collectRun } from "./dvault-cli.ts";

/** A fresh folder for DVAULT_DATA_DIR, enterable by the server's user; `remove` stops its server and deletes it. */
export function embeddedDataDir(): { dataDir: string; remove(): void } {
  const root = mkdtempSync("/tmp/dvault-embedded-");
  chmodSync(root, 0o755);
  const dataDir = path.join(root, "data");
  return {
    dataDir,
    remove() {
      try {
        stopEmbedded({ dataDir, force: true });
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

export type Holder = {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  port: number;
  initialized: boolean;
  started: boolean;
  databaseCreated: boolean;
  /** Sends a line ("release", "exit") and waits for the answer: "released", or the process's end. */
  send(line: "release" | "exit"): Promise<void>;
};

/** A process that attaches to the embedded server of `dataDir` and holds its lease until told. */
export async function startHolder(dataDir: string): Promise<Holder> {
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/medium/embedded-holder-child.ts")], {
    env: { PATH: process.env.PATH ?? "", DVAULT_DATA_DIR: dataDir },
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error(`the holder process ended before attaching: ${stderr}`);
  const state = JSON.parse(first.value) as Pick<Holder, "pid" | "port" | "initialized" | "started" | "databaseCreated">;
  const ended = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return {
    child,
    ...state,
    async send(line) {
      child.stdin.write(`${line}\n`);
      if (line === "exit") return ended;
      await lines.next();
    },
  };
}

/** `bin/dvault.js <args>` with the environment given and nothing of this process's own. */
export function dvault(env: Record<string, string>, args: readonly string[], cwd = process.cwd()): Promise<CliRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child, started);
}
