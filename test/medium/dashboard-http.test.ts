// The dashboard's HTTP side over a synced mirror: /metrics has the counters with sane values after a
// sync, /healthz turns unhealthy when Redis stops (a private redis-server killed by the test), a
// non-loopback bind without a token is refused and so is a request without it, state changes need a
// CSRF token and a same-origin request, service text is escaped, and files never leave the archive.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { UnrecoverableError } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertSafeBind, isLoopbackHost, startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { redisCoordinator } from "../../src/coord/redis.ts";
import { archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { testConfig } from "../helpers/config.ts";
import { createTestDatabase } from "../helpers/db.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { createLogger } from "../../src/log.ts";
import { itNeedingRedis } from "../helpers/needs-redis.ts";
import { startWorker } from "../../src/worker.ts";
import { freePort } from "../../src/free-port.ts";

const run = promisify(execFile);
let h: SyncHarness;
let dash: RunningDashboard;
let archiveDir: string;
const TOKEN = "test-token-0123456789abcdef";

function deps() {
  return { ...h.services, config: { ...h.services.config, archiveDir } };
}

beforeAll(async () => {
  archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-dash-"));
  h = await createSyncHarness({ sim: { seed: 5, dataset: { deviations: 30, notes: 10, messages: 10, favourites: 5 } } });
  await h.runSource("gallery");
  await h.runSource("notes");
  dash = await startDashboard(deps(), { host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await dash?.close();
  await h?.close();
  if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
});

/** The value of one sample of the exposition text, e.g. sample(text, 'dvault_queue_jobs{queue="sync",state="failed"}'). */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : undefined;
}

describe("GET /metrics", () => {
  it("exposes API calls, pacing, token expiry, jobs, queue lag, downloads and archive with sane values after a sync", async () => {
    const admin = new QueueAdmin(h.services.queues);
    // A worker of the run's engine (Redis, or PostgreSQL alone).
    const worker = h.services.queues.worker(
      "maintenance",
      async (job) => {
        if (job.name === "tokens.refresh") throw new UnrecoverableError("the token endpoint answered 500");
        return { status: "done" };
      },
      { concurrency: 1 },
    );
    try {
      // The first scrape starts the job-event counters; jobs finished after it are counted. Other tests of
      // this file archive files too: the download and archive figures are compared with this scrape's.
      const first = await (await fetch(`${dash.url}/metrics`)).text();
      const firstScrape = (series: string) => sample(first, series) ?? 0;
      await admin.queue("maintenance").add("tokens.refresh", {}, { jobId: "metrics-fail" });
      await admin.queue("maintenance").add("schedules.reconcile", {}, { jobId: "metrics-ok" });
      await admin
        .queue("sync")
        .add("sync.source", { accountId: h.account.id, source: "notes", key: "" }, { jobId: "metrics-waiting", timestamp: Date.now() - 5000 });
      const finished = () => admin.queue("maintenance").getJobCounts("failed", "completed");
      await expect.poll(finished, { timeout: 10_000, interval: 25 }).toEqual({ failed: 1, completed: 1 });
      const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE type = 'image' ORDER BY 1 LIMIT 1");
      const file = await archiveFile(h.pool, archiveDir, rows[0]!.deviationid, artworkPng(7, 12, 12));
      const pacedBefore = h.services.apiTotals.paced.count;
      const throttledBefore = h.services.apiTotals.throttled;
      const api = await h.services.apiFor(h.account.id);
      // The first answer takes 300 ms, so the other two are sure to arrive while it holds the key's one permit,
      // however loaded the machine (without it, a first call that finished early left one of them unpaced).
      h.sim.faults.add({ route: "/placebo", kind: "latency", times: 1, latencyMs: 300 });
      await Promise.all([api.client.placebo(), api.client.placebo(), api.client.placebo()]);

      const res = await fetch(`${dash.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
      const text = await res.text();
      const apiCalls = text
        .split("\n")
        .filter((l) => l.startsWith("dvault_api_calls_total{"))
        .map((l) => Number(l.split(" ").pop()));
      expect(apiCalls.reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
      expect(text).toMatch(/dvault_api_calls_total\{operation="[a-z_.]+",status="200"\} \d+/);
      // Three concurrent requests on one pacer key that admits one at a time: the last two waited (paced), and the
      // service refused none of them (throttled counts only its refusals).
      expect(sample(text, "dvault_api_paced_total")).toBe(pacedBefore + 2);
      expect(sample(text, "dvault_api_paced_seconds_total")).toBeGreaterThan(0);
      expect(sample(text, "dvault_api_throttled_total")).toBe(throttledBefore);
      expect(sample(text, `dvault_token_expiry_seconds{account="${h.account.name}"}`)).toBeGreaterThan(60);
      expect(text).toMatch(/dvault_pacer_rate\{key="[^"]+"\} \d+/);
      expect(text).toMatch(/dvault_pacer_throttled_seconds\{key="[^"]+"\} 0/);
      expect(sample(text, 'dvault_jobs_failed_total{queue="maintenance",name="tokens.refresh"}')).toBe(1);
      expect(sample(text, 'dvault_jobs_completed_total{queue="maintenance",name="schedules.reconcile"}')).toBe(1);
      expect(sample(text, 'dvault_queue_jobs{queue="maintenance",state="failed"}')).toBe(1);
      expect(sample(text, 'dvault_queue_lag_seconds{queue="sync"}')).toBeGreaterThanOrEqual(4);
      expect(sample(text, 'dvault_downloads{status="done"}')).toBe(firstScrape('dvault_downloads{status="done"}') + 1);
      expect(sample(text, "dvault_archive_size_bytes")).toBe(firstScrape("dvault_archive_size_bytes") + file.size);
      expect(sample(text, "dvault_archive_free_bytes")).toBeGreaterThan(0);
      expect(sample(text, `dvault_download_quota_remaining{account="${h.account.name}"}`)).toBe(h.services.config.downloadQuota);
      expect(sample(text, `dvault_download_quota_used{account="${h.account.name}"}`)).toBe(0);
      expect(sample(text, "dvault_downloaded_bytes")).toBe(firstScrape("dvault_downloaded_bytes") + file.size);
      expect(text).toContain("dvault_process_resident_memory_bytes");
      // Counters never go backwards between scrapes.
      const again = await (await fetch(`${dash.url}/metrics`)).text();
      expect(sample(again, 'dvault_jobs_failed_total{queue="maintenance",name="tokens.refresh"}')).toBe(1);
    } finally {
      await worker.close();
      await admin.close();
    }
  });
});

describe("GET /healthz", () => {
  let redisServer: ChildProcess | undefined;
  let privateRedis: Redis | undefined;
  let privateDash: RunningDashboard | undefined;

  afterAll(async () => {
    await privateDash?.close();
    privateRedis?.disconnect();
    if (redisServer && redisServer.exitCode === null) redisServer.kill("SIGKILL");
  });

  // A redis-server of its own, killed: on a run without Redis (Node alone), skipped.
  itNeedingRedis("is healthy with Postgres, Redis and a worker heartbeat, and unhealthy once Redis stops", async () => {
    const port = await freePort();
    redisServer = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"], {
      stdio: "ignore",
    });
    const url = `redis://127.0.0.1:${port}`;
    privateRedis = createRedis(url, "command", { retryStrategy: () => 200 });
    // The server may not listen yet: the retry strategy reconnects until it does.
    privateRedis.connect().catch(() => undefined);
    await expect.poll(() => privateRedis!.status, { timeout: 5_000, interval: 50 }).toBe("ready");
    const prefix = h.services.config.redisPrefix;
    privateDash = await startDashboard({ ...deps(), coord: redisCoordinator(privateRedis) }, { port: 0 });

    const noWorker = await fetch(`${privateDash.url}/healthz`);
    expect(noWorker.status).toBe(503);
    expect(((await noWorker.json()) as { checks: { workers: { ok: boolean } } }).checks.workers.ok).toBe(false);

    await privateRedis.set(`${prefix}:heartbeat:box:1`, JSON.stringify({ id: "box:1", at: new Date().toISOString() }), "EX", 60);
    const healthy = await fetch(`${privateDash.url}/healthz`);
    const body = (await healthy.json()) as { status: string; checks: Record<string, { ok: boolean }> };
    expect(healthy.status).toBe(200);
    expect(body).toMatchObject({ status: "ok", checks: { postgres: { ok: true }, redis: { ok: true }, workers: { ok: true, count: 1 } } });

    redisServer.kill("SIGKILL");
    await new Promise((r) => redisServer!.once("exit", r));
    const started = Date.now();
    const down = await fetch(`${privateDash.url}/healthz`);
    const downBody = (await down.json()) as { status: string; checks: Record<string, { ok: boolean; error?: string }> };
    expect(down.status).toBe(503);
    expect(downBody.status).toBe("unhealthy");
    expect(downBody.checks.postgres?.ok).toBe(true);
    expect(downBody.checks.redis?.ok).toBe(false);
    expect(downBody.checks.redis?.error).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe("access control", () => {
  it("knows loopback addresses", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "example.com"]) expect(isLoopbackHost(host)).toBe(false);
  });

  it("refuses a non-loopback bind without a token, in one line", async () => {
    expect(() => assertSafeBind("0.0.0.0", undefined)).toThrow(/^refusing to serve the dashboard on 0\.0\.0\.0 without DVAULT_HTTP_TOKEN/);
    await expect(startDashboard(deps(), { host: "0.0.0.0", port: 0 })).rejects.toThrow(/without DVAULT_HTTP_TOKEN/);
    expect(() => assertSafeBind("0.0.0.0", TOKEN)).not.toThrow();
  });

  it("dvault worker --http refuses before connecting anything", async () => {
    const failure = await run(process.execPath, ["bin/dvault.js", "worker", "--http", "--http-host", "0.0.0.0"], {
      env: { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none", REDIS_URL: "redis://127.0.0.1:1" },
      timeout: 30_000,
    }).catch((err: { stderr: string; code: number }) => err);
    expect("code" in failure && failure.code).not.toBe(0);
    const lines = ("stderr" in failure ? failure.stderr : "").trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^dvault: refusing to serve the dashboard on 0\.0\.0\.0 without DVAULT_HTTP_TOKEN/);
  });

  it("with a token, refuses every request without it and accepts the bearer header or the login cookie", async () => {
    const guarded = await startDashboard(deps(), { host: "0.0.0.0", port: 0, token: TOKEN });
    const base = `http://127.0.0.1:${guarded.port}`;
    try {
      for (const p of ["/", "/archive", "/healthz", "/metrics", "/queues", "/files/1", "/jobs"]) {
        expect((await fetch(base + p, { redirect: "manual" })).status, p).toBe(401);
      }
      expect((await fetch(`${base}/`, { headers: { authorization: "Bearer wrong-token-0123456789" } })).status).toBe(401);
      expect((await fetch(`${base}/`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      expect((await fetch(`${base}/login?token=nope`, { redirect: "manual" })).status).toBe(401);
      const login = await fetch(`${base}/login?token=${TOKEN}`, { redirect: "manual" });
      expect(login.status).toBe(303);
      const cookie = login.headers.get("set-cookie")!;
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Lax/);
      const viaCookie = await fetch(`${base}/archive`, { headers: { cookie: cookie.split(";")[0]! } });
      expect(viaCookie.status).toBe(200);
      expect((await fetch(`${base}/queues`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    } finally {
      await guarded.close();
    }
  });
});

describe("state-changing requests", () => {
  async function csrfSession(): Promise<{ cookie: string; csrf: string }> {
    const page = await fetch(`${dash.url}/jobs`);
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    return { cookie, csrf };
  }
  const post = (p: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(dash.url + p, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(body).toString(),
    });

  it("refuses a POST without the CSRF token, with a token that doesn't match the cookie, and from another site", async () => {
    const { cookie, csrf } = await csrfSession();
    expect((await post("/jobs/pause", { queue: "digest" })).status).toBe(403);
    expect((await post("/jobs/pause", { queue: "digest", _csrf: csrf })).status).toBe(403);
    expect((await post("/jobs/pause", { queue: "digest", _csrf: "forged.token" }, { cookie: "dvault_csrf=forged.token" })).status).toBe(403);
    expect((await post("/jobs/pause", { queue: "digest", _csrf: csrf }, { cookie, origin: "https://evil.example" })).status).toBe(403);
    expect((await post("/jobs/pause", { queue: "digest", _csrf: csrf }, { cookie, "sec-fetch-site": "cross-site" })).status).toBe(403);
    expect((await fetch(`${dash.url}/queues/api/queues/digest/pause`, { method: "PUT", headers: { origin: "https://evil.example" } })).status).toBe(403);
    expect(await new QueueAdmin(h.services.queues).queue("digest").isPaused()).toBe(false);
  });

  it("accepts a same-origin POST with the token and does it", async () => {
    const { cookie, csrf } = await csrfSession();
    const res = await post("/jobs/pause", { queue: "digest", _csrf: csrf }, { cookie, origin: dash.url, "sec-fetch-site": "same-origin" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toMatch(/^\/jobs\?done=digest\+paused/);
    const admin = new QueueAdmin(h.services.queues);
    try {
      expect(await admin.queue("digest").isPaused()).toBe(true);
      await admin.resume("digest");
    } finally {
      await admin.close();
    }
  });
});

describe("pages", () => {
  it("escape service-provided text: a <script> title shows as text", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE title LIKE '<script>%'");
    expect(rows.length).toBeGreaterThan(0);
    const item = await fetch(`${dash.url}/item/${rows[0]!.deviationid}`);
    const html = await item.text();
    expect(item.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Study");
    expect(html).not.toContain("<script>alert");
    const archive = await (await fetch(`${dash.url}/archive`)).text();
    expect(archive).not.toContain("<script>alert");
    const search = await (await fetch(`${dash.url}/archive?q=study`)).text();
    expect(search).toContain("&lt;script&gt;");
    expect(search).not.toContain("<script>alert");
  });

  it("serves archived files from inside the archive only", async () => {
    const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE type = 'image' ORDER BY 1 OFFSET 3 LIMIT 3");
    const good = await archiveFile(h.pool, archiveDir, rows[0]!.deviationid, artworkPng(9, 10, 10));
    const res = await fetch(`${dash.url}/files/${good.downloadId}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    expect(Buffer.from(await res.arrayBuffer()).equals(await fs.readFile(good.absPath))).toBe(true);

    // A row whose path climbs out of the archive, and a symlink inside it that points out of it.
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-outside-"));
    await fs.writeFile(path.join(outside, "secret.png"), "secret");
    await fs.symlink(path.join(outside, "secret.png"), path.join(archiveDir, "link.png"));
    const plantOutside = async (deviationid: string, stored: string) =>
      (
        await h.pool.query<{ id: string }>(
          `INSERT INTO downloads (deviationid, kind, status, path, sha256, size) VALUES ($1, 'original', 'done', $2, 'x', 6)
         ON CONFLICT (deviationid, kind) DO UPDATE SET path = EXCLUDED.path, status = 'done', sha256 = 'x' RETURNING id::text`,
          [deviationid, stored],
        )
      ).rows[0]!.id;
    for (const id of [
      await plantOutside(rows[1]!.deviationid, `../${path.basename(outside)}/secret.png`),
      await plantOutside(rows[2]!.deviationid, "link.png"),
    ]) {
      const r = await fetch(`${dash.url}/files/${id}`);
      expect(r.status).toBe(404);
      expect(await r.text()).not.toContain("secret");
    }
    expect((await fetch(`${dash.url}/files/..%2F..%2Fetc%2Fpasswd`)).status).toBe(404);
    await fs.rm(outside, { recursive: true, force: true });
  });
});

describe("dvault worker --http", () => {
  it("serves the dashboard from the worker, healthy with the worker's own heartbeat, and stops with it", async () => {
    // A database of its own: a worker on the shared one would download its wanted files, which /metrics counts.
    const db = await createTestDatabase();
    const config = testConfig({
      DATABASE_URL: db.url,
      DVAULT_REDIS_PREFIX: `${h.services.config.redisPrefix}-w`,
      DVAULT_API_BASE: h.sim.url,
      DVAULT_CLIENT_ID: SIM_CLIENT_ID,
      DVAULT_CLIENT_SECRET: SIM_CLIENT_SECRET,
    });
    const options = { config, log: createLogger({ level: "silent" }), handleSignals: false, everyMs: {}, http: { host: "127.0.0.1", port: 0 } };
    const worker = await startWorker(options).catch(async (err: unknown) => {
      await db.drop();
      throw err;
    });
    try {
      const url = worker.dashboard!.url;
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as { checks: { workers: { count: number } } }).checks.workers.count).toBe(1);
      expect((await fetch(`${url}/`)).status).toBe(200);
    } finally {
      await worker.stop("test");
      await db.drop();
    }
    await expect(fetch(`${worker.dashboard!.url}/healthz`)).rejects.toThrow();
  });

  it("refuses a non-loopback address without a token before starting anything", async () => {
    const config = testConfig({ DATABASE_URL: "postgresql://nobody@127.0.0.1:1/none" });
    await expect(startWorker({ config, log: createLogger({ level: "silent" }), handleSignals: false, http: { host: "0.0.0.0", port: 0 } })).rejects.toThrow(
      /without DVAULT_HTTP_TOKEN/,
    );
  });
});
