// One run of one tool for bench/versus.ts, each on a fresh simulator of the same seed (the same gallery, the
// same faults from the first call) and with fresh state of its own: dvault as the real CLI (`sync --once --only
// gallery`, then `download --once`, child processes) on a new database, Redis prefix and archive folder;
// Debian's gallery-dl through the service-name tunnel (test/helpers/service-name-tunnel.ts) with a private
// cache file and an empty target folder. What each stored is read back from disk and hashed.
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { connectPg } from "../src/db/connect.ts";
import type { FaultRule } from "../src/simulator/faults.ts";
import type { RequestLogEntry } from "../src/simulator/request-log.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../src/simulator/server.ts";
import { galleryDlOptions, SERVICE_HOST, startServiceNameTunnel, type ServiceCertificate } from "../test/helpers/service-name-tunnel.ts";
import { BENCH_REDIS_URL, createBenchEnv, isApiEntry, SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "./bench-env.ts";

export type Tool = "dvault" | "gallery-dl" | "gallery-dl +metadata +folders";

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
  /** Exit code of each command ("0", "0/1" for dvault's two), "cap" when stopped at the cap. */
  exit: string;
  finished: boolean;
  api: number;
  /** API calls answered 429. */
  refused: number;
  /** API calls answered 5xx or reset. */
  failedCalls: number;
  cdn: number;
  token: number;
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
const IMAGE_EXT = /\.(jpe?g|png|gif)$/i;

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

type Exit = { code: number | null; capped: boolean; stderr: string; stdout: string };

/** A child process with a deadline: SIGTERM at the deadline, SIGKILL 5 s later. */
function runChild(cmd: string, args: string[], env: Record<string, string>, deadline: number): Promise<Exit> {
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
      resolve({ code: null, capped, stderr: `${cmd}: ${err.message}`, stdout });
    });
    child.on("close", (code) => {
      clearTimeout(term);
      resolve({ code, capped, stderr, stdout });
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

function traffic(sim: Simulator): Pick<RunFigures, "api" | "refused" | "failedCalls" | "cdn" | "token" | "folderPages"> {
  const log: RequestLogEntry[] = sim.log();
  const api = log.filter(isApiEntry);
  return {
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

export async function runDvaultOnce(round: number, setup: RunSetup): Promise<RunFigures> {
  const env = await createBenchEnv({ sim: setup.sim, configExtra: { DVAULT_DOWNLOAD_QUOTA: "1000000" } });
  try {
    for (const rule of setup.faults) env.sim.faults.add(rule);
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
    // VERSUS_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") go to node before dvault's script, for profiling.
    for (const kv of process.env.VERSUS_DVAULT_ENV?.split(",").filter(Boolean) ?? []) childEnv[kv.split("=")[0] ?? ""] = kv.slice(kv.indexOf("=") + 1);
    const nodeArgs = process.env.VERSUS_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
    const started = Date.now();
    const deadline = started + setup.capMs;
    const sync = await runChild(process.execPath, [...nodeArgs, BIN, "sync", "--once", "--only", "gallery"], childEnv, deadline);
    const syncMs = Date.now() - started;
    const download = sync.capped ? undefined : await runChild(process.execPath, [...nodeArgs, BIN, "download", "--once"], childEnv, deadline);
    if (process.env.VERSUS_SPLIT) process.stderr.write(`dvault sync ${syncMs} ms, download ${Date.now() - started - syncMs} ms\n`);
    const wallMs = Date.now() - started;
    const capped = sync.capped || download?.capped === true;
    const codes = [sync.code, download?.code].filter((c) => c !== undefined).map((c) => String(c ?? "signal"));
    const sums = new Map<string, string>();
    const items = new Set<string>();
    let files = 0;
    const pg = await connectPg(env.databaseUrl);
    try {
      const { rows } = await pg.query<{ deviationid: string; kind: string; path: string }>(
        "SELECT deviationid, kind::text AS kind, path FROM downloads WHERE path IS NOT NULL AND sha256 IS NOT NULL AND status IN ('done', 'degraded', 'not_downloadable') ORDER BY kind = 'original'",
      );
      for (const r of rows) {
        const body = await fs.readFile(path.resolve(env.archiveDir, r.path)).catch(() => undefined);
        if (!body) continue;
        files += 1;
        items.add(r.deviationid);
        // Originals come last, so they win over a rendition of the same deviation.
        if (r.kind !== "text" && IMAGE_EXT.test(r.path)) sums.set(r.deviationid, sha256(body));
      }
    } finally {
      await pg.end();
    }
    const truth = await downloadableOriginals(env.sim);
    const failed = [sync, download].find((x) => x && x.code !== 0);
    return {
      tool: "dvault",
      round,
      wallMs,
      exit: capped ? "cap" : codes.join("/"),
      finished: !capped,
      ...traffic(env.sim),
      files,
      items: items.size,
      downloadable: truth.size,
      originals: originalsStored(sums, truth),
      sums,
      // dvault's summary (what waits and why) is on stdout; its log on stderr.
      tail: failed ? lastLines(failed.stderr.trim() ? `${failed.stderr}\n${failed.stdout}` : failed.stdout, 5) : "",
    };
  } finally {
    await env.close();
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
    for (const file of stored) {
      const id = byIndex.get(Number(/^deviantart_(\d+)_/.exec(path.basename(file))?.[1]));
      if (id) items.add(id);
      if (id && IMAGE_EXT.test(file)) sums.set(id, sha256(await fs.readFile(file)));
    }
    const truth = await downloadableOriginals(sim);
    return {
      tool,
      round,
      wallMs,
      exit: run.capped ? "cap" : String(run.code ?? "signal"),
      finished: !run.capped,
      ...traffic(sim),
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
