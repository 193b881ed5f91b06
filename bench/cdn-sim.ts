// The simulator's CDN in a process of its own (bench/downloads-sim.ts), for the benches that download files
// (bench/downloads.ts, bench/storage.ts): so that it does not share a core with the downloader being measured.
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";

const ROOT = path.resolve(import.meta.dirname, "..");

export type CdnSim = {
  url: string;
  /** The deviations whose files have the sizes asked for, in that order. */
  ids: string[];
  token: string;
  /** A fresh signed CDN URL of the deviation's original. */
  signedUrl(id: string): Promise<string>;
  /** The sha256 of the original, as the simulator generated it. */
  truthSha(id: string): Promise<string>;
  /** Caps each CDN connection at this many bytes per second, or lifts the cap (null). */
  setCap(bytesPerSecond: number | null): Promise<void>;
  stop(): Promise<void>;
};

/** Starts the simulator with one downloadable file of each size (bytes). */
export async function startCdnSimulator(sizes: number[]): Promise<CdnSim> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "bench/downloads-sim.ts")], {
    cwd: ROOT,
    env: { ...process.env, DL_BENCH_SIZES: sizes.join(",") },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`the simulator exited (${code})`)));
  });
  const info = JSON.parse(first) as { url: string; ids: string[]; token: string };
  return {
    ...info,
    async signedUrl(id) {
      const res = await fetch(`${info.url}/api/v1/oauth2/deviation/download/${id}`, { headers: { authorization: `Bearer ${info.token}` } });
      if (!res.ok) throw new Error(`/deviation/download answered ${res.status}: ${await res.text()}`);
      return ((await res.json()) as { src: string }).src;
    },
    async truthSha(id) {
      return ((await (await fetch(`${info.url}/_sim/file?deviationid=${id}`)).json()) as { sha256: string }).sha256;
    },
    async setCap(bytesPerSecond) {
      const res = await fetch(`${info.url}/_sim/cdn`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ bytesPerSecond }),
      });
      if (!res.ok) throw new Error(`/_sim/cdn answered ${res.status}`);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
