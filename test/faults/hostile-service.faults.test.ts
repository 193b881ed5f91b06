// A hostile or broken service (docs/service-behaviour.md#hostile-answers), played by a small proxy in front
// of the simulator (test/helpers/hostile-proxy.ts) while the real pipeline syncs and downloads through it:
// endless bodies from the API and the CDN, trickles, a refresh answer cut short, NUL in folder names, a
// redirect to a foreign host, and a planted `.partial` link in the archive. Each case asserts the bound
// that holds now. The dashboard's half of the attacks (DNS rebinding, %00 in an address) is
// test/medium/dashboard-hostile.test.ts.
//
// Tiers: everything here runs in `npm test` with small caps and a shortened throughput window; with
// DVAULT_FAULTS_KILLS set (`npm run test:faults`) the trickles run with the production window (10 s grace,
// 30 s) and the endless CDN body against a 128 MiB cap.
import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { enqueueDownloadsHandler } from "../../jobs/enqueue-downloads/handler.ts";
import { currentConditions, evaluateAlerts, storedDownloadsPausedProbe } from "../../src/digest/alerts.ts";
import { createDeliverers } from "../../src/digest/deliver/index.ts";
import { linksDirtyKey } from "../../src/downloads/after-store.ts";
import { setDownloadTuning, type DownloadDeps, type DownloadTuning } from "../../src/downloads/deps.ts";
import { runDownloadsOnce } from "../../src/downloads/run-once.ts";
import { createLogger } from "../../src/log.ts";
import { Producer } from "../../src/queue/producer.ts";
import { createServices } from "../../src/services.ts";
import { runSource } from "../../src/sync/run-source.ts";
import { ORIGINALS_DIR, PARTIAL_DIR } from "../../src/storage/layout.ts";
import { testConfig } from "../helpers/config.ts";
import { startHostileProxy, type HostileProxy } from "../helpers/hostile-proxy.ts";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, FAST_OVERRIDES, FAULT_LOCK_TTL_MS, syncUntilConverged, type FaultHarness } from "./harness.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";
import { workerContext } from "../helpers/worker-context.ts";

const FULL = Boolean(process.env.DVAULT_FAULTS_KILLS);
const KiB = 1024;
const MiB = 1024 * KiB;
const HOUR = 3_600_000;
const API_CAP = 256 * KiB;
/** Above the simulator's largest file (a video of about 1.2 MB), small enough to fill in a moment. */
const FILE_CAP = FULL ? 128 * MiB : 8 * MiB;
const silent = createLogger({ level: "silent" });

const TUNING = { lockTtlMs: FAULT_LOCK_TTL_MS };

let proxy: HostileProxy;
let h: FaultHarness;
/** The download deps: made again with each emptied archive (an Archive remembers the folders it made). */
let deps: DownloadDeps;

beforeAll(async () => {
  proxy = await startHostileProxy();
  h = await createFaultHarness({
    sim: { seed: 21 },
    apiBase: (sim) => {
      proxy.target = sim.url;
      return proxy.url;
    },
    overrides: { transport: { ...FAST_OVERRIDES.transport, maxBodyBytes: API_CAP, timeoutMs: 3000 } },
    env: { DVAULT_RENDITION_MAX_BYTES: String(FILE_CAP) },
  });
  // Every source once, so the downloads below have rows.
  await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
}, 60_000);
afterAll(async () => {
  await h?.close();
  await proxy?.close();
});
beforeEach(() => {
  proxy.clear();
  h.sim.faults.clear();
});

/** Drops every announced size from the API's answers: every file is then capped by DVAULT_RENDITION_MAX_BYTES. */
function withoutSizes(body: string): string {
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object")
      return Object.fromEntries(
        Object.entries(v)
          .filter(([k]) => k !== "filesize" && k !== "download_filesize")
          .map(([k, x]) => [k, strip(x)]),
      );
    return v;
  };
  try {
    return JSON.stringify(strip(JSON.parse(body)));
  } catch {
    return body;
  }
}

/** The largest `.partial` file seen while `run` goes on, sampled every 5 ms. */
async function largestPartialDuring<T>(run: () => Promise<T>): Promise<{ result: T; largest: number }> {
  const dir = path.join(h.archiveDir, PARTIAL_DIR);
  let largest = 0;
  let on = true;
  const sample = async () => {
    while (on) {
      for (const name of await fs.readdir(dir).catch(() => [] as string[])) {
        const st = await fs.stat(path.join(dir, name)).catch(() => undefined);
        if (st && st.size > largest) largest = st.size;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const sampling = sample();
  try {
    return { result: await run(), largest };
  } finally {
    on = false;
    await sampling;
  }
}

async function resetDownloads(tuning: DownloadTuning = TUNING): Promise<void> {
  await h.pool.query("UPDATE downloads SET status = 'wanted', attempts = 0, next_attempt_at = NULL, last_error = NULL, sha256 = NULL, path = NULL");
  await fs.rm(h.archiveDir, { recursive: true, force: true });
  await fs.mkdir(h.archiveDir, { recursive: true });
  deps = setDownloadTuning(h.services, tuning);
}

describe("an endless body", () => {
  it("from the API: the read stops at the byte cap, is asked for again, then kept as unreadable; the next run reads everything", async () => {
    proxy.rules.push({ match: /\/gallery\/all/, times: 3, act: { kind: "endless" } });
    const result = await h.runSource("gallery", { full: true });
    expect(result.status).toBe("incomplete");
    expect(result.unreadable).toBeGreaterThanOrEqual(1);
    expect(proxy.stats.applied[0]).toBe(3);
    const { rows } = await h.pool.query<{ operation: string; raw: { received: number; maxBytes: number } }>(
      "SELECT operation, raw FROM unreadable_responses WHERE operation = 'gallery.all'",
    );
    expect(rows).toHaveLength(1);
    // Bytes held in memory: the cap and the one socket read that passed it.
    expect(rows[0]!.raw.maxBytes).toBe(API_CAP);
    expect(rows[0]!.raw.received).toBeGreaterThan(API_CAP);
    expect(rows[0]!.raw.received).toBeLessThanOrEqual(API_CAP + 128 * KiB);

    const again = await h.runSource("gallery", { full: true });
    expect(again.status).toBe("ok");
  }, 60_000);

  it(
    "from the CDN with no size announced: never more than the cap on disk, the partial file removed, the row tried again",
    async () => {
      await resetDownloads();
      proxy.rules.push({ match: /^\/api\//, act: { kind: "rewrite", transform: withoutSizes } });
      proxy.rules.push({ match: /^\/_cdn\//, times: 1, act: { kind: "endless", contentType: "image/png" } });
      const { result, largest } = await largestPartialDuring(() => runDownloadsOnce({ services: h.services, deps, log: silent, retryDelayMs: 5 }));
      expect(proxy.stats.applied[1]).toBe(1);
      // The proxy kept sending: dvault stopped reading at the cap.
      expect(proxy.stats.bytesSent[1]).toBeGreaterThan(FILE_CAP);
      expect(largest).toBeLessThanOrEqual(FILE_CAP);
      expect(result.paused).toBeUndefined();
      await downloadUntilConverged({ services: h.services, deps });
      expect(await fs.readdir(path.join(h.archiveDir, PARTIAL_DIR)).catch(() => [])).toEqual([]);
      await checkMirror(h);
    },
    FULL ? 300_000 : 60_000,
  );
});

describe("a trickle", () => {
  it(
    `from the CDN at 1 byte/s is aborted within the floor's window while the other downloads complete${FULL ? " (production window)" : ""}`,
    async () => {
      const window = FULL ? { graceMs: 10_000, windowMs: 30_000 } : { graceMs: 400, windowMs: 800 };
      await resetDownloads({ ...TUNING, limits: window });
      const trickles = FULL ? 2 : 1;
      proxy.rules.push({ match: /^\/_cdn\//, times: trickles, act: { kind: "trickle", bytesPerSecond: 1 } });
      const started = Date.now();
      let othersDoneAt = 0;
      const watchOthers = setInterval(() => {
        void h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status <> 'done'").then(({ rows }) => {
          if (!othersDoneAt && rows[0]!.n <= trickles) othersDoneAt = Date.now();
        });
      }, 50);
      try {
        await downloadUntilConverged({ services: h.services, deps });
      } finally {
        clearInterval(watchOthers);
      }
      const elapsed = Date.now() - started;
      expect(proxy.stats.applied[0]).toBe(trickles);
      expect(proxy.stats.bytesSent[0] ?? 0).toBeLessThan(200);
      // The others were not held behind the trickle; the trickle itself was cut within grace + window + slack.
      expect(othersDoneAt - started).toBeLessThan(window.graceMs + window.windowMs);
      expect(elapsed).toBeLessThan(trickles * (window.graceMs + window.windowMs) + 15_000);
      await checkMirror(h);
    },
    FULL ? 240_000 : 60_000,
  );

  it("from the API past the deadline is a transient timeout with its own words, never an HTTP status", async () => {
    proxy.rules.push({ match: /\/gallery\/folders/, act: { kind: "trickle", bytesPerSecond: 100 } });
    // A deadline of 1 s for this run alone: every attempt (the first and its 3 retries) sits out the whole deadline,
    // 4 s here rather than 12 s at the file's 3 s. The run after it, on the file's services, reads everything.
    const shortDeadline = await createServices({
      config: h.services.config,
      log: silent,
      overrides: { ...FAST_OVERRIDES, now: h.services.now, transport: { ...FAST_OVERRIDES.transport, maxBodyBytes: API_CAP, timeoutMs: 1000 } },
    });
    const failed = await runSource(
      { accountId: h.account.id, source: "gallery", full: true },
      { services: shortDeadline, sources: h.sourceMap, lockTtlMs: FAULT_LOCK_TTL_MS },
    )
      .then(
        () => undefined,
        (err: Error) => err,
      )
      .finally(() => shortDeadline.close());
    expect(failed?.message).toMatch(/timed out after \d+ s at [\d.]+ KiB\/s/);
    expect(failed?.message).not.toMatch(/HTTP 200|bug in dvault/);
    proxy.clear();
    expect((await h.runSource("gallery", { full: true })).status).toBe("ok");
  }, 60_000);
});

describe("text a database refuses", () => {
  it("a NUL in gallery folder names is mirrored as U+FFFD and the source finishes", async () => {
    proxy.rules.push({ match: /\/gallery\/folders/, act: { kind: "rewrite", transform: (body) => body.replaceAll('"name":"', '"name":"\\u0000') } });
    const result = await h.runSource("gallery", { full: true });
    expect(result.status).toBe("ok");
    const { rows } = await h.pool.query<{ name: string }>("SELECT name FROM gallery_folders WHERE name LIKE '%' || chr(65533) || '%'");
    expect(rows.length).toBeGreaterThan(0);
    proxy.clear();
    await h.runSource("gallery", { full: true });
  }, 60_000);
});

describe("a redirect", () => {
  it("to the same host is followed; to a foreign host it is a permanent, named refusal and nothing is asked of it", async () => {
    await resetDownloads();
    // A foreign host that counts what reaches it: 127.0.0.2 is loopback, but not the name dvault was given.
    let foreignHits = 0;
    const foreign = http.createServer((_req, res) => {
      foreignHits++;
      res.end("nope");
    });
    await new Promise<void>((resolve) => foreign.listen(0, "127.0.0.2", resolve));
    const foreignPort = (foreign.address() as AddressInfo).port;
    try {
      // Same host (the proxy's): followed, the file is fetched from where the redirect points.
      proxy.rules.push({
        match: /^\/_cdn\/(?!.*hop=1)/,
        times: 1,
        act: { kind: "redirect", location: (p) => `${proxy.url}${p}${p.includes("?") ? "&" : "?"}hop=1` },
      });
      proxy.rules.push({ match: /^\/_cdn\/(?!.*hop=1)/, times: 1, act: { kind: "redirect", location: (p) => `http://127.0.0.2:${foreignPort}${p}` } });
      await runDownloadsOnce({ services: h.services, deps, log: silent, retryDelayMs: 5 });
      expect(proxy.stats.applied).toEqual([1, 1]);
      const { rows } = await h.pool.query<{ status: string; next_attempt_at: Date | null; last_error: string }>(
        "SELECT status::text, next_attempt_at, last_error FROM downloads WHERE status = 'failed'",
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ next_attempt_at: null });
      expect(rows[0]!.last_error).toMatch(
        new RegExp(`redirected from 127\\.0\\.0\\.1:\\d+ to 127\\.0\\.0\\.2:${foreignPort}, which is not a host of the service's CDN`),
      );
      expect(foreignHits).toBe(0);
      const { rows: done } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status IN ('wanted', 'queued')");
      expect(done[0]!.n).toBe(0);
    } finally {
      await new Promise<void>((resolve) => foreign.close(() => resolve()));
    }
  }, 60_000);
});

describe("a link in the archive", () => {
  it.each([PARTIAL_DIR, ORIGINALS_DIR])(
    "a planted %s link to a folder outside: nothing written there, downloads paused with the reason and an alert, no row failed; removed, they resume",
    async (planted) => {
      await resetDownloads();
      const outside = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-outside-"));
      try {
        await fs.symlink(outside, path.join(h.archiveDir, planted));
        const summary = await runDownloadsOnce({ services: h.services, deps, log: silent, retryDelayMs: 5 });
        expect(summary.paused?.reason).toContain(`the archive contains a link that points outside it: ${path.join(h.archiveDir, planted)}.`);
        expect(await fs.readdir(outside)).toEqual([]);
        const { rows } = await h.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY 1");
        expect(rows.find((r) => r.status === "failed")).toBeUndefined();

        const conditions = await currentConditions({
          db: h.pool,
          coord: h.services.coord,
          prefix: h.services.config.redisPrefix,
          now: new Date(h.services.now()),
          downloadsPaused: storedDownloadsPausedProbe(h.services.coord, h.services.config.redisPrefix),
        });
        expect(conditions.find((c) => c.kind === "downloads_paused")?.title).toBe("downloads are paused: the archive contains a link that points outside it");

        // While the link is there, another run stays paused and touches nothing; so does the worker's round, whose
        // readable tree waits with the downloads (jobs/enqueue-downloads/handler.ts) instead of failing on the link.
        expect((await runDownloadsOnce({ services: h.services, deps, log: silent })).paused).toBeDefined();
        const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
        const round = () => enqueueDownloadsHandler({ scope: "links" }, workerContext({ services: h.services, producer, log: silent }));
        try {
          // The tree due (a file stored since its last write): while paused, the round leaves it due.
          await h.services.coord.put(linksDirtyKey(h.services.config.redisPrefix), "1");
          expect(await round()).not.toHaveProperty("links");
          expect(await h.services.coord.exists(linksDirtyKey(h.services.config.redisPrefix))).toBe(true);
          await fs.rm(path.join(h.archiveDir, planted));
          // Removed, the next round resumes the downloads and writes the tree.
          expect(await round()).toHaveProperty("links");
        } finally {
          await producer.close();
        }
        await downloadUntilConverged({ services: h.services, deps });
        expect(await fs.readdir(outside)).toEqual([]);
        await checkMirror(h);
      } finally {
        await fs.rm(outside, { recursive: true, force: true });
      }
    },
    60_000,
  );
});

describe("a refresh answer cut short", () => {
  it("is tried once more with the same token; refused, the account needs a new login within that run, with one alert", async () => {
    const digestDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-hostile-digest-"));
    try {
      const seq = h.lastSeq();
      proxy.rules.push({ match: /\/oauth2\/token/, method: "POST", times: 1, act: { kind: "truncate", bytes: 20 } });
      h.sim.clock.advance(2 * HOUR);
      await expect(h.runSource("gallery")).rejects.toThrow(/dvault auth login --account/);
      const tokenCalls = h.sim.log().filter((e) => e.seq > seq && e.route === "/oauth2/token");
      // The first was answered (the proxy cut it short); the same token again was refused as spent.
      expect(tokenCalls.map((e) => e.status)).toEqual([200, 400]);
      expect((await h.services.accounts.findById(h.account.id))?.state).toBe("needs_reauth");

      const config = testConfig({ ...h.env, DVAULT_DIGEST_CHANNELS: "file", DVAULT_DIGEST_DIR: digestDir });
      const alerts = await evaluateAlerts({
        db: h.pool,
        coord: h.services.coord,
        prefix: config.redisPrefix,
        now: new Date(h.services.now()),
        deliverers: createDeliverers(config.digest),
        timezone: "UTC",
        log: silent,
      });
      expect(alerts.notified.filter((title) => /needs re-authorization/.test(title))).toHaveLength(1);
    } finally {
      await fs.rm(digestDir, { recursive: true, force: true });
      // The new login the account asks for, so the tests that run after this one (in any order) have a grant.
      await storeOwnerGrant(h.services, h.sim);
    }
  }, 60_000);
});
