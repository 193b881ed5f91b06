// `dvault simulator` as a person starts it (README "Experimenting with the simulator"): a --mode it does not know and
// a port another program holds are refused in one line saying what to change, never in silence or as an unexpected
// error. bin/dvault.js in a child process, a real socket holding the port.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectRun } from "../helpers/dvault-cli.ts";

const BIN = path.resolve("bin/dvault.js");
const dvault = (args: readonly string[]) =>
  collectRun(
    spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home" }, stdio: ["ignore", "pipe", "pipe"] }),
    Date.now(),
  );

let holder: Server;
let port: number;

beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  port = (holder.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

describe("dvault simulator", () => {
  it("refuses a --mode it does not know in one line (it exited 1 and printed nothing)", async () => {
    const run = await dvault(["simulator", "--mode", "legacyy"]);
    expect(run.stderr).toBe('dvault: --mode expects current or legacy, not "legacyy"\n');
    expect(run.stdout).toBe("");
    expect(run.code).toBe(1);
  });

  it("refuses a port in use in one line naming it and what to do, not as an unexpected error", async () => {
    const run = await dvault(["simulator", "--port", String(port)]);
    expect(run.stderr).toBe(`dvault: cannot serve the simulator on 127.0.0.1:${port} (EADDRINUSE): choose another --port (0 picks a free one) or --host\n`);
    expect(run.stdout).toBe("");
    expect(run.code).toBe(1);
  });
});
