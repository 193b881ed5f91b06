// dvault as several hosts with no shared filesystem (issue 19): three worker processes on this machine, each
// with its own empty working directory — two with only the downloads role, one with sync and the dashboard —
// archive a 1 000-deviation account of the simulator into an S3-compatible bucket (s3rver on loopback, reached
// through a relay that can slow uploads). A downloads host is killed with SIGKILL in the middle of its work and
// replaced by a new one with a new empty directory: the first time in the middle of fetching files (the CDN
// slowed), the next in the middle of uploading them (the uplink to the bucket slowed), and so on in turn.
// Then: every file present once in the bucket and byte-exact, no deviation downloaded twice, nothing left in
// the bucket by the killed uploads, and the dashboard host serves over its socket a file it never downloaded.
// DVAULT_SCALE_DEVIATIONS and DVAULT_SCALE_KILLS shrink or grow the run (default 1 000 and 2).
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runArchive } from "../../bench/archive-run.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { openBlobStore } from "../../src/storage/store.ts";
import { testConfig } from "../helpers/config.ts";
import { TEST_REDIS_URL } from "../helpers/env.ts";
import { leftovers, type S3TestServer, startS3Server } from "../helpers/s3-server.ts";
import { type SlowUplink, startSlowUplink } from "../helpers/slow-uplink.ts";
import { createFaultHarness, type FaultHarness } from "./harness.ts";

const DEVIATIONS = Number(process.env.DVAULT_SCALE_DEVIATIONS ?? 1000);
const KILLS = Number(process.env.DVAULT_SCALE_KILLS ?? 2);
/** While a kill is aimed, each fetch or upload runs this slow, so the victim is surely in the middle of some. */
const SLOW_BYTES_PER_SECOND = 128 * 1024;

type Host = { roles: string; dir: string; child: ChildProcess; dashboardUrl?: string; stderr: () => string };

let h: FaultHarness;
let s3: S3TestServer;
let uplink: SlowUplink;
/** The store's settings the hosts get: the bucket, reached through the relay. */
let storeEnv: Record<string, string>;
const dirs: string[] = [];

beforeAll(async () => {
  h = await createFaultHarness({
    sim: { seed: 19, dataset: { deviations: DEVIATIONS }, clockMode: "real", startTime: new Date(), downloadQuota: 1_000_000 },
    env: { DVAULT_DOWNLOAD_QUOTA: "1000000" },
  });
  s3 = await startS3Server();
  uplink = await startSlowUplink(s3.endpoint);
  storeEnv = { ...s3.env, DVAULT_S3_ENDPOINT: uplink.url };
});
afterAll(async () => {
  await h?.close();
  await uplink?.close();
  await s3?.close();
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
});

/** One host: a worker process with `roles` and a working directory of its own, new and empty. */
async function startHost(roles: string): Promise<Host> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-host-"));
  dirs.push(dir);
  const env = { ...h.env, ...storeEnv, DVAULT_ARCHIVE_DIR: dir, DVAULT_WORKER_ROLES: roles };
  const child = spawn(process.execPath, ["--import", "tsx", path.resolve("test/faults/role-worker-child.ts")], {
    env: { ...process.env, ROLE_ENV: JSON.stringify(env) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  let dashboardUrl: string | undefined;
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code, signal) => reject(new Error(`host ${roles} exited (${code ?? signal}) before it was ready: ${stderr}`)));
    child.stdout?.on("data", (c: Buffer) => {
      for (const line of c.toString().split("\n")) {
        if (line.startsWith("dashboard ")) dashboardUrl = line.slice("dashboard ".length).trim();
        if (line === "ready") resolve();
      }
    });
  });
  return { roles, dir, child, ...(dashboardUrl ? { dashboardUrl } : {}), stderr: () => stderr };
}

async function stopHost(host: Host): Promise<number | null> {
  if (host.child.exitCode !== null || host.child.signalCode !== null) return host.child.exitCode;
  const exited = new Promise<number | null>((resolve) => host.child.once("exit", (code) => resolve(code)));
  host.child.kill("SIGTERM");
  return exited;
}

/** Files (not folders) anywhere under `dir`, as paths relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

async function sha256Of(body: NodeJS.ReadableStream | ReadableStream<Uint8Array>): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(body as NodeJS.ReadableStream, hash);
  return hash.digest("hex");
}

type Kill = { during: "fetch" | "upload"; at: number; doneBefore: number; jobs: string[] };

/**
 * Kills a downloads host with SIGKILL `KILLS` times, each once a share of the files is stored and while it
 * has work under way — fetches (the CDN slowed for the moment) and uploads (the uplink slowed) in turn — and
 * puts a new host with a new empty directory in its place.
 */
async function killDownloadsHosts(hosts: Host[], downloadsQueue: Queue, kills: Kill[]): Promise<void> {
  const doneCount = async () => (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'done'")).rows[0]?.n ?? 0;
  for (let i = 0; i < KILLS; i++) {
    const victimAt = hosts.findIndex((x) => x.roles === "downloads");
    const victim = hosts[victimAt] as Host;
    const holder = `${os.hostname()}:${victim.child.pid}:`;
    const threshold = Math.floor(((i + 1) * DEVIATIONS) / (2 * (KILLS + 1)));
    await expect.poll(doneCount, { timeout: 300_000, interval: 200 }).toBeGreaterThanOrEqual(threshold);
    const during = i % 2 === 0 ? "fetch" : "upload";
    const slow = (bps: number | null) => (during === "fetch" ? h.sim.setCdn({ bytesPerSecond: bps }) : uplink.setBytesPerSecond(bps));
    slow(SLOW_BYTES_PER_SECOND);
    // Its jobs running for a while: past the paced API call, in the middle of their bytes (at full speed a
    // file takes milliseconds either way).
    const midway = async () => {
      const active = await downloadsQueue.getActive();
      return active.filter((j) => j.processedBy?.startsWith(holder) && j.processedOn && Date.now() - j.processedOn > 400).length;
    };
    await expect.poll(midway, { timeout: 60_000, interval: 50 }).toBeGreaterThan(0);
    const jobs = (await downloadsQueue.getActive()).filter((j) => j.processedBy?.startsWith(holder)).map((j) => String(j.id));
    const exited = new Promise<void>((resolve) => victim.child.once("exit", () => resolve()));
    victim.child.kill("SIGKILL");
    await exited;
    slow(null);
    kills.push({ during, at: Date.now(), doneBefore: await doneCount(), jobs });
    hosts[victimAt] = await startHost("downloads");
  }
}

/** What the simulator saw of these deviations (API downloads and CDN fetches), for a failure's message. */
function timeline(deviationids: string[]): string {
  const ids = deviationids.map((id) => id.toLowerCase());
  return h.sim
    .log()
    .filter((e) => ids.some((id) => e.path.toLowerCase().includes(id)))
    .map((e) => `${e.realMs} ${e.route} ${e.status}`)
    .join("; ");
}

describe("dvault on three hosts with no shared filesystem", () => {
  it(`archives ${DEVIATIONS} deviations into the bucket once, byte-exact, through ${KILLS} SIGKILLs, and any host serves any file`, async () => {
    const hosts: Host[] = [];
    const kills: Kill[] = [];
    const connection = createRedis(TEST_REDIS_URL);
    await connection.connect();
    const downloadsQueue = new Queue("downloads", { connection, prefix: h.redis.prefix });
    const started = Date.now();
    let killing: Promise<void> = Promise.resolve();
    let exitCodes: Array<number | null> = [];
    try {
      const figures = await runArchive({ sim: h.sim, services: h.services }, async () => {
        hosts.push(...(await Promise.all([startHost("downloads"), startHost("downloads"), startHost("sync,http")])));
        killing = killDownloadsHosts(hosts, downloadsQueue, kills);
        // A failed kill fails the run now, not when the archive is over.
        killing.catch(() => {
          for (const x of hosts) x.child.kill("SIGKILL");
        });
        // The hosts keep running after the archive: the dashboard host is asked for a file below.
        return async () => undefined;
      });
      await killing;
      const wallS = ((Date.now() - started) / 1000).toFixed(1);

      // Everything wanted was stored; no paid download twice, no row twice.
      const { rows: states } = await h.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY 1");
      expect(states.filter((s) => !["done", "not_downloadable"].includes(s.status))).toEqual([]);
      expect(figures.downloadedTwice, `paid twice; the kills: ${JSON.stringify(kills)}; ${timeline(figures.downloadedTwice)}`).toEqual([]);
      expect(figures.duplicateRows).toBe(0);
      // A file fetched twice from the CDN is one a killed host was in the middle of, and no other.
      expect(figures.duplicateFetches).toBeLessThanOrEqual(kills.reduce((n, k) => n + k.jobs.length, 0));
      expect(kills.length).toBe(KILLS);
      expect(kills.every((k) => k.jobs.length > 0 && k.doneBefore < (figures.downloads.done ?? 0))).toBe(true);

      // The bucket, as the server's data folder holds it: each stored row's object once and nothing else (no
      // object or unfinished multipart upload left by the killed uploads); each byte-exact, read back through
      // dvault's store (originals against the simulator's bytes).
      const { rows: stored } = await h.pool.query<{
        id: string;
        deviationid: string;
        kind: string;
        status: string;
        rendition: string | null;
        path: string;
        sha256: string;
      }>("SELECT id::text, deviationid, kind::text, status::text, rendition, path, sha256 FROM downloads WHERE path IS NOT NULL ORDER BY id");
      expect(stored.length).toBeGreaterThan(DEVIATIONS / 2);
      // The original file (the simulator holds its bytes); other renditions are checked against their rows.
      const isOriginal = (r: { status: string; rendition: string | null }) => r.status === "done" && r.rendition === "original";
      const bucket = await leftovers(s3.dir);
      expect(bucket.multipartUploads).toEqual([]);
      const inBucket = bucket.objects.map((o) => o.slice(s3.bucket.length + 1)).filter((key) => !key.startsWith("thumbnails/"));
      expect(inBucket.sort()).toEqual([...new Set(stored.map((r) => r.path))].sort());
      const store = openBlobStore(testConfig({ ...h.env, ...s3.env }));
      for (const row of stored) {
        const object = await store.openRead(row.path);
        expect(object, row.path).toBeDefined();
        const sha256 = await sha256Of((object as { body: NodeJS.ReadableStream }).body);
        expect(sha256, `${row.kind} of ${row.deviationid}`).toBe(isOriginal(row) ? await h.sim.fileSha256(row.deviationid) : row.sha256);
      }

      // No host keeps an archived file in its own directory: they all went to the bucket.
      for (const host of hosts)
        expect(
          (await filesUnder(host.dir)).filter((f) => f.startsWith("originals/")),
          host.roles,
        ).toEqual([]);

      // The dashboard host (sync and http) has no worker on the downloads queue, so it never downloaded a
      // file; yet it serves one over its socket.
      const dashboard = hosts.find((x) => x.dashboardUrl) as Host;
      const downloadWorkers = (await downloadsQueue.getWorkers()).map((w) => JSON.stringify(w));
      // (A worker's Redis client is named after its holder, host:pid:nonce, as the downloads hosts' show.)
      const ofHost = (host: Host) => downloadWorkers.filter((w) => w.includes(`:${host.child.pid}:`));
      expect(hosts.filter((x) => x.roles === "downloads").every((x) => ofHost(x).length > 0)).toBe(true);
      expect(ofHost(dashboard)).toEqual([]);
      const original = stored.find(isOriginal) as (typeof stored)[number];
      const res = await fetch(`${dashboard.dashboardUrl}/files/${original.id}`);
      expect(res.status).toBe(200);
      expect(await sha256Of(res.body as ReadableStream<Uint8Array>)).toBe(await h.sim.fileSha256(original.deviationid));

      console.info(
        `no shared filesystem: ${stored.length} files from ${DEVIATIONS} deviations in ${wallS} s (archive ${(figures.wallMs / 1000).toFixed(1)} s), ` +
          `${figures.apiCalls} API calls, kills ${JSON.stringify(kills)}, ${figures.duplicateFetches} files fetched again from the CDN`,
      );
    } finally {
      await killing.catch(() => undefined);
      exitCodes = await Promise.all(hosts.map(stopHost));
      await downloadsQueue.close();
      await connection.quit().catch(() => connection.disconnect());
    }
    // Every host stopped cleanly on SIGTERM.
    expect(
      exitCodes.every((c) => c === 0),
      hosts.map((x) => x.stderr()).join("\n"),
    ).toBe(true);
  }, 900_000);
});
