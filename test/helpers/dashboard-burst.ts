// The dashboard under a burst, as an operator would meet it: `dvault worker` with only the http role in its own
// process (bin/dvault.js, the real pool and defaults), and N parallel `GET /archive?page=N` over separate
// sockets. What each request got (status, Retry-After, time) and the process's peak RSS (VmHWM of
// /proc/<pid>/status: Linux). Used by test/faults/dashboard-load.faults.test.ts and bench/dashboard-load.ts.
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { freePort } from "../../src/free-port.ts";
import { rawRequest } from "./dashboard-request.ts";

export type DashboardProcess = { url: string; pid: number; peakRssBytes(): Promise<number>; rssBytes(): Promise<number>; stop(): Promise<void> };

export type BurstAnswer = { status: number; retryAfter: string | undefined; ms: number };

/** Starts `dvault worker` serving the dashboard only, on a free port, with `env` (the database, Redis, its prefix). */
export async function startDashboardProcess(env: Record<string, string>): Promise<DashboardProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.resolve("bin/dvault.js"), "worker"], {
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      LOG_LEVEL: "warn",
      ...env,
      DVAULT_WORKER_ROLES: "http",
      DVAULT_HTTP_PORT: String(port),
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`dvault worker exited ${child.exitCode}: ${stderr}`);
    if ((await answer(`${url}/healthz`).catch(() => undefined)) !== undefined) break;
    if (Date.now() > deadline) throw new Error(`dvault worker did not listen within 60 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const status = async (field: "VmHWM" | "VmRSS") => {
    const text = await readFile(`/proc/${child.pid}/status`, "utf8");
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0) * 1024;
  };
  return {
    url,
    pid: child.pid ?? 0,
    peakRssBytes: () => status("VmHWM"),
    rssBytes: () => status("VmRSS"),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

async function answer(url: string): Promise<BurstAnswer> {
  const a = await rawRequest(url);
  return { status: a.status, retryAfter: a.headers["retry-after"] as string | undefined, ms: a.ms };
}

/** `n` parallel archive pages spread over the listing's `pages`, each on its own connection. */
export async function archiveBurst(url: string, n: number, pages: number): Promise<BurstAnswer[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => answer(`${url}/archive?page=${1 + ((i * 37) % pages)}`)));
}

/** The burst in figures: answers by status, and the p50 and p95 of the time to a whole answer. */
export function burstFigures(answers: readonly BurstAnswer[]): {
  byStatus: Record<number, number>;
  p50Ms: number;
  p95Ms: number;
  busyWithoutRetryAfter: number;
} {
  const byStatus: Record<number, number> = {};
  for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
  const ms = answers.map((a) => a.ms).sort((a, b) => a - b);
  const at = (p: number) => Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? 0);
  return { byStatus, p50Ms: at(0.5), p95Ms: at(0.95), busyWithoutRetryAfter: answers.filter((a) => a.status === 503 && !a.retryAfter).length };
}
