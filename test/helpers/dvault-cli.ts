// `bin/dvault.js` as a user runs it: a child process with a harness's environment (its database, Redis prefix,
// simulator and archive), nothing of this process's own.
import { type ChildProcessByStdio, spawn } from "node:child_process";
import path from "node:path";
import type { Readable } from "node:stream";
import { TEST_ENGINE } from "./env.ts";

const BIN = path.resolve("bin/dvault.js");

export type CliRun = { code: number | null; stdout: string; stderr: string; ms: number };

export function runDvault(h: { redis: { url: string }; env: Record<string, string> }, args: readonly string[]): Promise<CliRun> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, DVAULT_ENGINE: TEST_ENGINE, ...h.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return collectRun(child, started);
}

/** What a child started at `started` printed on stdout and stderr, and how it ended. */
export function collectRun(child: ChildProcessByStdio<null, Readable, Readable>, started: number): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started })));
}

/** The command with a stdout whose reader has already gone (`dvault … | head` after head exits); only stderr is kept. */
export function runDvaultIntoClosedPipe(h: { redis: { url: string }; env: Record<string, string> }, args: readonly string[]): Promise<Omit<CliRun, "stdout">> {
  const started = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, DVAULT_ENGINE: TEST_ENGINE, ...h.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.destroy();
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stderr, ms: Date.now() - started })));
}
