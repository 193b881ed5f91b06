// One run of one tool for bench/versus.ts, each on a fresh simulator of the same seed (the same gallery, the
// same faults from the first call) and with fresh state of its own: dvault as the real CLI (`archive --once --only
// gallery`, a child process) on a new database, Redis prefix and archive folder, with or without the pace an earlier
// run learned;
// Debian's gallery-dl through the service-name tunnel (test/helpers/service-name-tunnel.ts) with a private
// cache file and an empty target folder. What each stored is read back from disk and hashed.
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { connectPg } from "../src/db/connect.ts";
import type { FaultRule } from "../src/simulator/faults.ts";
import type { RequestLogEntry } from "../src/simulator/request-log.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/server.ts";
import { galleryDlOptions, SERVICE_HOST, startServiceNameTunnel, type ServiceCertificate } from "../test/helpers/service-name-tunnel.ts";
import type { SavedPace } from "../src/api/pacer-state.ts";
import { BENCH_REDIS_URL, type BenchEnv, createBenchEnv, isApiEntry, SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "./bench-env.ts";

export type Tool = "dvault" | "dvault (learned)" | "gallery-dl" | "gallery-dl +metadata +folders";
export const DVAULT_LEARNED: Tool = "dvault (learned)";
export const isDvault = (tool: Tool): boolean => tool === "dvault" || tool === DVAULT_LEARNED;

export type RunSetup = {
  sim: SimulatorOptions;
  faults: FaultRule[];
  /** The run is stopped (and counted unfinished) after this long. */
  capMs: number;
};

export type RunFigures = {
  tool: Tool;
  round: number;
  wallMs: number;
  /** CPU time of the tool's process (user and system, its threads included), where the machine tells it. */
  cpuMs: number | undefined;
  /** Exit code of the command, "cap" when stopped at the cap. */
  exit: string;
  finished: boolean;
  api: number;
  /** API calls answered 429. */
  refused: number;
  /** API calls answered 5xx or reset. */
  failedCalls: number;
  cdn: number;
  token: number;
  /** Bytes of the files the tool left on disk. */
  bytes: number;
  /** From the start to the simulator's first request, and to its last (ms): start-up, the work, the ending. */
  firstMs: number;
  lastMs: number;
  /** Calls listing gallery folders or paging one folder (/gallery/folders, /gallery/{folderid}). */
  folderPages: number;
  files: number;
  /** Deviations with at least one file stored. */
  items: number;
  /** Downloadable originals of the gallery (the simulator's truth) and how many were stored byte for byte. */
  downloadable: number;
  originals: number;
  /** deviationid → sha256 of the image file stored for it (original, or the rendition stored instead). */
  sums: Map<string, string>;
  /** The last lines of the tool's error output when it did not exit 0. */
  tail: string;
};

const BIN = path.resolve(import.meta.dirname, "..", "bin", "dvault.js");
/** The originals the simulator serves: JPEG, PNG, GIF and WebP (src/simulator/pictures.ts). */
const IMAGE_EXT = /\.(jpe?g|png|gif|webp)$/i;

/** The owner's gallery as both tools see it: small everything else, `items` deviations. */
export function simOptions(items: number, extra: Partial<SimulatorOptions>): SimulatorOptions {
  return {
    seed: 16,
    // Debian's gallery-dl 1.25 reads `category` from every deviation, which the service dropped in August 2024
    // (docs/service-behaviour.md#deviation-category-removed): the simulator as the service was before then.
    mode: "legacy",
    dataset: {
      deviations: items,
      galleryFolders: 3,
      collectionFolders: 1,
      favourites: 2,
      trackedUsers: 0,
      notes: 1,
      messages: 1,
      feedItems: 1,
      watchers: 1,
      friends: 1,
      statuses: 1,
    },
    downloadQuota: 1_000_000,
    clockMode: "real",
    startTime: new Date(),
    ...extra,
  };
}

/** `cpuMs`: the CPU time (user and system) the child used, where /proc tells it (Linux), else undefined. */
type Exit = { code: number | null; capped: boolean; stderr: string; stdout: string; cpuMs: number | undefined };

/**
 * CPU time of the children this process has waited for, ms: /proc/self/stat's cutime and cstime, in the kernel's
 * USER_HZ (100 a second on Linux). The runs are one at a time, so the difference across one is that child's (its
 * threads included: the thread pool's file work, the garbage collector's), whatever else shares the machine.
 */
function waitedChildrenCpuMs(): number | undefined {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]?.split(" ") ?? [];
    const ticks = Number(fields[13]) + Number(fields[14]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** A child process with a deadline: SIGTERM at the deadline, SIGKILL 5 s later. */
function runChild(cmd: string, args: string[], env: Record<string, string>, deadline: number): Promise<Exit> {
  const cpuBefore = waitedChildrenCpuMs();
  const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  const log = process.env.VERSUS_LOG_FILE;
  child.stderr.on("data", (c: Buffer) => {
    if (log) appendFileSync(log, c);
    stderr = (stderr + c.toString()).slice(-4000);
  });
  child.stdout.on("data", (c: Buffer) => {
    stdout = (stdout + c.toString()).slice(-4000);
  });
  let capped = false;
  const term = setTimeout(
    () => {
      capped = true;
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    },
    Math.max(0, deadline - Date.now()),
  );
  return new Promise((resolve) => {
    child.on("error", (err) => {
      clearTimeout(term);
      resolve({ code: null, capped, stderr: `${cmd}: ${err.message}`, stdout, cpuMs: undefined });
    });
    child.on("close", (code) => {
      clearTimeout(term);
      const cpuAfter = waitedChildrenCpuMs();
      resolve({ code, capped, stderr, stdout, cpuMs: cpuBefore !== undefined && cpuAfter !== undefined ? cpuAfter - cpuBefore : undefined });
    });
  });
}

function lastLines(text: string, n = 3): string {
  return text.trim().split("\n").slice(-n).join(" ⏎ ").slice(0, 400);
}

function sha256(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** The downloadable originals of the owner's gallery, with the sha256 of each as the CDN serves it. */
async function downloadableOriginals(sim: Simulator): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const d of sim.truth.deviations.values()) {
    if (d.authorId !== sim.truth.ownerId || d.isDeleted || !d.isDownloadable || !d.image || d.tier || d.premiumFolder) continue;
    out.set(d.deviationid, await sim.fileSha256(d.deviationid));
  }
  return out;
}

function traffic(
  sim: Simulator,
  started: number,
): Pick<RunFigures, "api" | "refused" | "failedCalls" | "cdn" | "token" | "folderPages" | "firstMs" | "lastMs"> {
  const log: RequestLogEntry[] = sim.log();
  const api = log.filter(isApiEntry);
  const during = log.filter((e) => e.realMs >= started);
  // VERSUS_TIMELINE names a file each run's requests are appended to (ms since the run's start, status, route), to see where the wall goes.
  const timeline = process.env.VERSUS_TIMELINE;
  if (timeline) appendFileSync(timeline, `${during.map((e) => `${e.realMs - started}\t${e.status}\t${e.route}`).join("\n")}\n--\n`);
  return {
    firstMs: (during[0]?.realMs ?? started) - started,
    lastMs: (during.at(-1)?.realMs ?? started) - started,
    api: api.length,
    refused: api.filter((e) => e.status === 429).length,
    failedCalls: api.filter((e) => e.status >= 500 || e.status === 0).length,
    cdn: log.filter((e) => e.route.startsWith("/_cdn/")).length,
    token: log.filter((e) => e.route === "/oauth2/token").length,
    folderPages: api.filter((e) => e.route.endsWith("/gallery/folders") || e.route.endsWith("/gallery/{folderid}")).length,
  };
}

function originalsStored(sums: Map<string, string>, truth: Map<string, string>): number {
  let n = 0;
  for (const [id, sum] of truth) if (sums.get(id) === sum) n += 1;
  return n;
}

/** The environment of a dvault child process on `env`'s database, Redis prefix, simulator and archive folder. */
function dvaultChildEnv(env: BenchEnv): Record<string, string> {
  const childEnv: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    HOME: env.archiveDir,
    LOG_LEVEL: "warn",
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: BENCH_REDIS_URL,
    DVAULT_REDIS_PREFIX: env.prefix,
    DVAULT_API_BASE: env.sim.url,
    DVAULT_CLIENT_ID: SIM_CLIENT_ID,
    DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    DVAULT_ARCHIVE_DIR: env.archiveDir,
    DVAULT_CONFIG_DIR: path.join(env.archiveDir, ".config"),
    DVAULT_DOWNLOAD_QUOTA: "1000000",
    DVAULT_MIN_FREE_BYTES: "64MiB",
    DVAULT_SECRET_KEY: env.secretKeyHex,
  };
  return { ...childEnv, ...dvaultEnvOverrides() };
}

/** VERSUS_DVAULT_ENV (k=v,k=v): settings of dvault's the runs get on top of the bench's own. */
export function dvaultEnvOverrides(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of process.env.VERSUS_DVAULT_ENV?.split(",").filter(Boolean) ?? []) out[kv.split("=")[0] ?? ""] = kv.slice(kv.indexOf("=") + 1);
  return out;
}

/** dvault runs started so far, for VERSUS_WRAP's {run}. */
let wrappedRuns = 0;

/** `dvault archive --once --only gallery` on `env`, stopped at `deadline`. */
function runArchive(env: BenchEnv, deadline: number): Promise<Exit> {
  // VERSUS_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") go to node before dvault's script, for profiling.
  const nodeArgs = process.env.VERSUS_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  // VERSUS_WRAP (e.g. "strace -f -c -o /tmp/st-{run}.txt") is a command dvault's node runs under, for counting its
  // system calls; {run} becomes the number of this dvault run in the bench (1, 2, …), so that each keeps its own file.
  const run = String(++wrappedRuns);
  const [wrap, ...wrapArgs] =
    process.env.VERSUS_WRAP?.split(" ")
      .filter(Boolean)
      .map((a) => a.replaceAll("{run}", run)) ?? [];
  const args = [...nodeArgs, BIN, "archive", "--once", "--only", "gallery"];
  return wrap
    ? runChild(wrap, [...wrapArgs, process.execPath, ...args], dvaultChildEnv(env), deadline)
    : runChild(process.execPath, args, dvaultChildEnv(env), deadline);
}

/** The scenario's fresh environment for dvault: a new database, Redis prefix, archive folder and simulator. */
async function dvaultBenchEnv(setup: RunSetup): Promise<BenchEnv> {
  const env = await createBenchEnv({ sim: setup.sim, configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000" } });
  for (const rule of setup.faults) env.sim.faults.add(rule);
  return env;
}

/**
 * What an earlier run of the same account on the same simulated service taught the pace: `dvault archive --once`
 * on an environment of its own (untimed), then every pace key's state as stored (the state `dvault engine migrate`
 * carries, Pacer.saved), without its current rate and last send: so the next run starts as one more than idleMs
 * (5 min) later does, at the learned rate (src/api/pacer.ts), not at where the teaching run's pace happened to end.
 */
async function learnedPace(setup: RunSetup): Promise<Array<[string, SavedPace]>> {
  const teacher = await dvaultBenchEnv(setup);
  try {
    const run = await runArchive(teacher, Date.now() + setup.capMs);
    if (run.code !== 0) process.stderr.write(`versus: the teaching run exited ${run.code}: ${lastLines(run.stderr)}\n`);
    const out: Array<[string, SavedPace]> = [];
    for (const key of await teacher.services.pacer.keys()) {
      const saved = await teacher.services.pacer.saved(key);
      if (!saved) continue;
      process.stderr.write(`versus: learned pace of ${key}: ${saved.fields.learned ?? "none"}/s (rate at the end ${saved.fields.rate}/s)\n`);
      const { rate: _rate, lastSend: _lastSend, ...fields } = saved.fields;
      out.push([key, { ...saved, fields }]);
    }
    return out;
  } finally {
    await teacher.close();
  }
}

/**
 * dvault as a person runs it: `dvault archive --once --only gallery` (one child process, start-up included) on a
 * fresh database, Redis prefix and archive folder; `learned` with the pace state of an earlier run of the same
 * account restored into the fresh prefix (learnedPace), else nothing learned (a fresh install's cautious start).
 */
export async function runDvaultOnce(round: number, setup: RunSetup, variant: "fresh" | "learned" = "fresh"): Promise<RunFigures> {
  const pace = variant === "learned" ? await learnedPace(setup) : [];
  const env = await dvaultBenchEnv(setup);
  try {
    for (const [key, saved] of pace) await env.services.pacer.restore(key, saved);
    const started = Date.now();
    const run = await runArchive(env, started + setup.capMs);
    const wallMs = Date.now() - started;
    const sums = new Map<string, string>();
    const items = new Set<string>();
    let files = 0;
    let bytes = 0;
    const pg = await connectPg(env.databaseUrl);
    try {
      const { rows } = await pg.query<{ deviationid: string; kind: string; path: string }>(
        "SELECT deviationid, kind::text AS kind, path FROM downloads WHERE path IS NOT NULL AND sha256 IS NOT NULL AND status IN ('done', 'degraded', 'not_downloadable') ORDER BY kind = 'original'",
      );
      for (const r of rows) {
        const body = await fs.readFile(path.resolve(env.archiveDir, r.path)).catch(() => undefined);
        if (!body) continue;
        files += 1;
        bytes += body.length;
        items.add(r.deviationid);
        // Originals come last, so they win over a rendition of the same deviation.
        if (r.kind !== "text" && IMAGE_EXT.test(r.path)) sums.set(r.deviationid, sha256(body));
      }
    } finally {
      await pg.end();
    }
    const truth = await downloadableOriginals(env.sim);
    return {
      tool: variant === "learned" ? DVAULT_LEARNED : "dvault",
      round,
      wallMs,
      cpuMs: run.cpuMs,
      exit: run.capped ? "cap" : String(run.code ?? "signal"),
      finished: !run.capped,
      ...traffic(env.sim, started),
      bytes,
      files,
      items: items.size,
      downloadable: truth.size,
      originals: originalsStored(sums, truth),
      sums,
      // dvault's summary (what waits and why) is on stdout; its log on stderr.
      tail: run.code !== 0 ? lastLines(run.stderr.trim() ? `${run.stderr}\n${run.stdout}` : run.stdout, 5) : "",
    };
  } finally {
    await env.close();
  }
}

/**
 * curl (a process of its own, as the tools are, so this process's simulator has the CPU it has in their runs) GETs
 * `urls` over one kept-alive connection and says, per URL, its bytes and seconds from request to last byte.
 */
async function curlTimes(urls: string[], headers: string[]): Promise<Array<{ bytes: number; ms: number }>> {
  const args = ["-s", ...headers.flatMap((h) => ["-H", h]), "-w", "%{size_download} %{time_total}\\n"];
  for (const url of urls) args.push("-o", "/dev/null", url);
  const out = await runChild("curl", args, { PATH: process.env.PATH ?? "" }, Date.now() + 120_000);
  if (out.code !== 0) throw new Error(`curl exited ${out.code}: ${lastLines(out.stderr)}`);
  return out.stdout
    .trim()
    .split("\n")
    .map((line) => {
      const [bytes, seconds] = line.split(" ").map(Number);
      return { bytes: bytes ?? 0, ms: (seconds ?? 0) * 1000 };
    });
}

/** The floor's inputs, measured on loopback in this run: an API call's round trip, and the CDN's bandwidth. */
export type Loopback = { rttMs: number; bytesPerMs: number };

/**
 * On a simulator of its own (the scenario's options, no faults), with curl: the median of 200 sequential `/placebo`
 * calls with a user token over one kept-alive connection, and the bandwidth of fetching the 8 largest downloadable
 * originals through their signed URLs (bytes ÷ the time from request to last byte), three times each, the first left
 * out: it waits for the simulator to make the picture.
 */
export async function measureLoopback(options: SimulatorOptions): Promise<Loopback> {
  const sim = await startSimulator(options);
  try {
    const { access_token } = sim.issueUserToken({ userId: sim.truth.ownerId });
    const headers = { authorization: `Bearer ${access_token}` };
    const calls = await curlTimes(
      Array.from({ length: 200 }, () => `${sim.url}/api/v1/oauth2/placebo`),
      [`Authorization: Bearer ${access_token}`],
    );
    const times = calls.map((c) => c.ms).sort((x, y) => x - y);
    const largest = [...sim.truth.deviations.values()]
      .filter((d) => d.authorId === sim.truth.ownerId && !d.isDeleted && d.isDownloadable && d.image && !d.tier && !d.premiumFolder)
      .sort((x, y) => (y.image?.filesize ?? 0) - (x.image?.filesize ?? 0))
      .slice(0, 8);
    const srcs: string[] = [];
    for (const d of largest) {
      const answer = (await (await fetch(`${sim.url}/api/v1/oauth2/deviation/download/${d.deviationid}`, { headers })).json()) as { src: string };
      srcs.push(answer.src, answer.src, answer.src);
    }
    // The first fetch of each file waits for the simulator to make the picture (a service's time, not the loopback's).
    const fetched = (await curlTimes(srcs, [])).filter((_, i) => i % 3 !== 0);
    const bytes = fetched.reduce((n, f) => n + f.bytes, 0);
    const ms = fetched.reduce((n, f) => n + f.ms, 0);
    return { rttMs: times[Math.floor(times.length / 2)] ?? 0, bytesPerMs: ms > 0 ? bytes / ms : Number.POSITIVE_INFINITY };
  } finally {
    await sim.close();
  }
}

async function walk(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else if (e.isFile() && !e.name.endsWith(".part")) out.push(p);
  }
  return out;
}

export async function runGalleryDlOnce(tool: Exclude<Tool, "dvault">, round: number, setup: RunSetup, certificate: ServiceCertificate): Promise<RunFigures> {
  const sim = await startSimulator(setup.sim);
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-versus-gdl-"));
  const tunnel = await startServiceNameTunnel(sim, tmp, certificate);
  try {
    for (const rule of setup.faults) sim.faults.add(rule);
    const owner = sim.truth.users.get(sim.truth.ownerId)?.username ?? "";
    const grant = sim.issueUserToken({ userId: sim.truth.ownerId });
    const target = path.join(tmp, "downloads");
    const comparable = tool === "gallery-dl +metadata +folders" ? ["-o", "extractor.deviantart.metadata=true", "-o", "extractor.deviantart.folders=true"] : [];
    const args = [
      ...galleryDlOptions({
        proxyUrl: tunnel.proxyUrl,
        caFile: certificate.caFile,
        cacheFile: path.join(tmp, "gallery-dl-cache.sqlite3"),
        clientId: SIM_CLIENT_ID,
        clientSecret: SIM_CLIENT_SECRET,
        refreshToken: grant.refresh_token,
      }),
      ...comparable,
      "-d",
      target,
      `https://${SERVICE_HOST}/${owner}/gallery`,
    ];
    const started = Date.now();
    const run = await runChild("gallery-dl", args, { PATH: process.env.PATH ?? "", HOME: tmp, LANG: "C.UTF-8" }, started + setup.capMs);
    const wallMs = Date.now() - started;
    const byIndex = new Map([...sim.truth.deviations.values()].map((d) => [d.numericId, d.deviationid]));
    const sums = new Map<string, string>();
    const items = new Set<string>();
    const stored = await walk(target);
    let bytes = 0;
    for (const file of stored) {
      bytes += (await fs.stat(file)).size;
      const id = byIndex.get(Number(/^deviantart_(\d+)_/.exec(path.basename(file))?.[1]));
      if (id) items.add(id);
      if (id && IMAGE_EXT.test(file)) sums.set(id, sha256(await fs.readFile(file)));
    }
    const truth = await downloadableOriginals(sim);
    return {
      tool,
      round,
      wallMs,
      cpuMs: run.cpuMs,
      exit: run.capped ? "cap" : String(run.code ?? "signal"),
      finished: !run.capped,
      ...traffic(sim, started),
      bytes,
      files: stored.length,
      items: items.size,
      downloadable: truth.size,
      originals: originalsStored(sums, truth),
      sums,
      tail: run.code !== 0 ? lastLines(run.stderr) : "",
    };
  } finally {
    await tunnel.close();
    await sim.close();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
