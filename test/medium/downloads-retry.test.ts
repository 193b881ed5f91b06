// A download that failed is tried again on its own, later: a transient fault (5xx, reset) leaves the row
// failed with a next attempt that grows with each failure in a row (15 min, 1 h, 4 h, 12 h, then a day),
// due on the injectable clock and not before; a permanent refusal (the CDN has no such file) stays
// failed with no next attempt; `dvault status` shows how many wait for a retry and when the next is.
import { type Queue, UnrecoverableError } from "bullmq";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { formatStatus } from "../../src/cli/status.ts";
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { downloadJobId } from "../../src/downloads/download-job.ts";
import { RETRY_DELAYS_MS } from "../../src/downloads/retry.ts";
import { retryDownloadNow } from "../../src/downloads/retry-now.ts";
import { Producer } from "../../src/queue/producer.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { startDashboard } from "../../src/http/server.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { downloadableOwnerDeviations, generateDataset, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { DEFAULT_START_TIME, type CdnHook } from "../../src/simulator/server.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, parkOriginalsOf, type DownloadHarness } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 20, galleryFolders: 1, collectionFolders: 1, favourites: 0, trackedUsers: 0 };
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let h: DownloadHarness;
let ids: string[];
/** The CDN has no file for these (a 404 for the original): a permanent failure. */
const missingOnCdn = new Set<string>();

const cdn404: CdnHook = (_world, _req, d) => (missingOnCdn.has(d.deviationid) ? { status: 404, text: "Not Found", contentType: "text/plain" } : undefined);

beforeAll(async () => {
  ids = downloadableOwnerDeviations(generateDataset(2, DATASET, DEFAULT_START_TIME))
    .slice(0, 3)
    .map((d) => d.deviationid);
  h = await createDownloadHarness({ sim: { seed: 2, dataset: DATASET, downloadQuota: 100, cdnHooks: [cdn404] }, sources: [gallerySource], quota: 100 });
  await h.syncAll(["gallery"]);
  await parkOriginalsOf(h.pool, ids);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

// Each test starts from the three originals parked (failed, no failures, no next attempt) and makes the
// rows it reads itself, so the tests run in any order.
beforeEach(async () => {
  await h.pool.query("UPDATE downloads SET status = 'failed', failures = 0, next_attempt_at = NULL, last_error = NULL");
});

async function want(id: string): Promise<void> {
  await h.pool.query("UPDATE downloads SET status = 'wanted', failures = 0, next_attempt_at = NULL WHERE deviationid = $1", [id]);
}

async function row(id: string) {
  const { rows } = await h.pool.query<{ status: string; failures: number; next_attempt_at: Date | null; last_error: string | null }>(
    "SELECT status::text AS status, failures, next_attempt_at, last_error FROM downloads WHERE deviationid = $1 AND kind = 'original'",
    [id],
  );
  return rows[0]!;
}

const now = () => h.sim.clock.now().getTime();

/** Adds the file's download.file job and has a worker refuse it for good (a 404 from the CDN): failed, one attempt made. */
async function failForGood(downloads: Queue, payload: { deviationid: string; kind: "original" }): Promise<void> {
  const jobId = downloadJobId(payload);
  await downloads.add("download.file", payload, { jobId, attempts: 5 });
  // A worker of the run's engine (Redis, or PostgreSQL alone).
  const failing = h.services.queues.worker("downloads", async () => Promise.reject(new UnrecoverableError("HTTP 404 from the CDN")), { concurrency: 1 });
  try {
    await expect.poll(() => downloads.getJobState(jobId), { timeout: 10_000 }).toBe("failed");
  } finally {
    await failing.close();
  }
}

/** Downloads `id` through a run, so its row is done. */
async function downloaded(id: string): Promise<void> {
  await want(id);
  expect(await h.runOnce()).toMatchObject({ done: 1, failed: 0 });
}

/** Fails `id` for good the way a CDN 404 does through a run: one failure, no next attempt. */
async function failedForGood(id: string): Promise<void> {
  await want(id);
  missingOnCdn.add(id);
  try {
    expect(await h.runOnce({ attempts: 1 })).toMatchObject({ done: 0, failed: 1 });
  } finally {
    missingOnCdn.delete(id);
  }
  expect(await row(id)).toMatchObject({ status: "failed", failures: 1, next_attempt_at: null });
}

describe("a failed download", () => {
  it("is retried after its backoff, and not before", async () => {
    const id = ids[0]!;
    await want(id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_500", probability: 1 });
    const failedAt = now();
    const before = h.lastSeq();
    try {
      const summary = await h.runOnce({ attempts: 2 });
      expect(summary).toMatchObject({ done: 0, failed: 1 });
      // The run's own attempts, not the download.file job's default: the second one is the last.
      expect(h.sim.log().filter((e) => e.seq > before && e.route.includes("/_cdn/") && e.path.toLowerCase().includes(id.toLowerCase()))).toHaveLength(2);
      expect(summary.failures[0]?.nextAttemptAt?.getTime()).toBe(failedAt + 15 * MINUTE);
    } finally {
      h.sim.faults.clear();
    }
    expect(await row(id)).toMatchObject({ status: "failed", failures: 1, next_attempt_at: new Date(failedAt + 15 * MINUTE) });
    expect((await row(id)).last_error).toMatch(/HTTP 500/);

    // A second before it is due: nothing is claimed, nothing is asked of the service.
    h.sim.clock.advance(15 * MINUTE - 1000);
    const seq = h.lastSeq();
    expect(await h.runOnce()).toMatchObject({ done: 0, failed: 0 });
    expect(h.sim.log().filter((e) => e.seq > seq)).toEqual([]);
    expect((await row(id)).status).toBe("failed");

    // Due: the next run takes it, with no operator, and the file is stored.
    h.sim.clock.advance(1000);
    expect(await h.runOnce()).toMatchObject({ done: 1, failed: 0 });
    expect(await row(id)).toMatchObject({ status: "done", failures: 0, next_attempt_at: null, last_error: null });
  });

  it("waits longer after each failure in a row, capped at a day", async () => {
    const id = ids[1]!;
    await want(id);
    const waits: number[] = [];
    h.sim.faults.add({ route: "/_cdn/original/", kind: "reset", probability: 1 });
    try {
      for (let i = 0; i < RETRY_DELAYS_MS.length + 2; i++) {
        const at = now();
        expect(await h.runOnce({ attempts: 1 })).toMatchObject({ failed: 1 });
        const r = await row(id);
        expect(r).toMatchObject({ status: "failed", failures: i + 1 });
        waits.push(r.next_attempt_at!.getTime() - at);
        h.sim.clock.set(r.next_attempt_at!);
      }
    } finally {
      h.sim.faults.clear();
    }
    expect(waits).toEqual([15 * MINUTE, HOUR, 4 * HOUR, 12 * HOUR, 24 * HOUR, 24 * HOUR, 24 * HOUR]);
    expect(await h.runOnce()).toMatchObject({ done: 1, failed: 0 });
    expect(await row(id)).toMatchObject({ status: "done", failures: 0 });
  });

  it("that the service refuses for good is not retried", async () => {
    const id = ids[2]!;
    await want(id);
    missingOnCdn.add(id);
    try {
      const summary = await h.runOnce({ attempts: 3 });
      expect(summary).toMatchObject({ done: 0, failed: 1 });
      expect(summary.failures[0]).toMatchObject({ deviationid: id, nextAttemptAt: null });
      expect(summary.failures[0]?.error).toMatch(/HTTP 404/);
      expect(await row(id)).toMatchObject({ status: "failed", failures: 1, next_attempt_at: null });
      // A month later it is still left alone.
      h.sim.clock.advance(30 * 24 * HOUR);
      const seq = h.lastSeq();
      expect(await h.runOnce()).toMatchObject({ done: 0, failed: 0 });
      expect(h.sim.log().filter((e) => e.seq > seq)).toEqual([]);
      expect((await row(id)).status).toBe("failed");
    } finally {
      missingOnCdn.delete(id);
    }
  });

  it("shows in dvault status: how many wait for a retry, when the next is, how many failed for good", async () => {
    // ids[1] is downloaded, ids[2] failed for good; ids[0] fails on a transient fault now.
    await downloaded(ids[1]!);
    await failedForGood(ids[2]!);
    const id = ids[0]!;
    await want(id);
    h.sim.faults.add({ route: "/_cdn/original/", kind: "status_503", probability: 1 });
    try {
      await h.runOnce({ attempts: 1 });
    } finally {
      h.sim.faults.clear();
    }
    const next = (await row(id)).next_attempt_at!;
    const queues = new QueueAdmin(h.services.queues);
    try {
      const report = await collectStatus({ ...h.services, queues, tokens: h.services.tokens });
      expect(report.downloads).toMatchObject({ failedRetrying: 1, nextRetryAt: next.toISOString() });
      expect(report.downloads.byStatus.failed).toBe(2);
      const text = formatStatus(report);
      expect(text).toContain("1 failed on a transient fault, retried on their own; next attempt");
      expect(text).toContain("1 failed for good");
      const page = overviewPage(report);
      expect(page).toContain("1 failed on a transient fault, retried on their own; next attempt");
      expect(page).toContain("1 failed for good");
    } finally {
      await queues.close();
    }
  });

  it("retried by a person (dvault jobs retry, the dashboard) is due now with a fresh failure count, and queued through the table", async () => {
    // ids[2] failed for good: no next attempt. Its download.file job sits failed in the downloads queue.
    const id = ids[2]!;
    await failedForGood(id);
    const payload = { deviationid: id, kind: "original" as const };
    const jobId = downloadJobId(payload);
    const admin = new QueueAdmin(h.services.queues);
    const downloads = admin.queue("downloads");
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    const throughTable = new QueueAdmin(h.services.queues, (data) => retryDownloadNow(h.services, producer, data));
    try {
      await failForGood(downloads, payload);
      // Without the table's hook a download job is not retried in place (that would ignore the row's schedule).
      expect((await admin.retry(jobId, "downloads")).skipped[0]?.reason).toMatch(/through its row in the downloads table/);
      expect(await downloads.getJobState(jobId)).toBe("failed");

      expect(await throughTable.retry(jobId, "downloads")).toEqual({ retried: [{ queue: "downloads", id: jobId }], skipped: [] });
      const r = await h.pool.query<{ status: string; failures: number; queued_at: Date | null }>(
        "SELECT status::text AS status, failures, queued_at FROM downloads WHERE deviationid = $1 AND kind = 'original'",
        [id],
      );
      expect(r.rows[0]).toMatchObject({ status: "queued", failures: 0, queued_at: expect.any(Date) });
      // A new job in place of the failed one, with the definition's whole attempt budget.
      expect(["waiting", "prioritized"]).toContain(await downloads.getJobState(jobId));
      expect((await downloads.getJob(jobId))?.attemptsMade).toBe(0);
      // Asking again finds nothing failed.
      expect((await throughTable.retry(jobId, "downloads")).retried).toEqual([]);
    } finally {
      await downloads.remove(jobId).catch(() => undefined);
      await throughTable.close();
      await producer.close();
      await admin.close();
    }
  });

  it("on the dashboard: bull-board's Retry is refused and leaves the job as it was; the /jobs page retries through the table", async () => {
    const id = ids[2]!;
    const payload = { deviationid: id, kind: "original" as const };
    const jobId = downloadJobId(payload);
    const admin = new QueueAdmin(h.services.queues);
    const downloads = admin.queue("downloads");
    await downloads.remove(jobId).catch(() => undefined);
    // The row failed for good, and its download.file job sits failed in the downloads queue, one attempt made.
    await downloadDepsFor(h.services).repo.recordDownloadFailure({
      ...payload,
      error: "HTTP 404 from the CDN",
      final: true,
      permanent: true,
      retryDelaysMs: RETRY_DELAYS_MS,
      at: new Date(now()),
    });
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    // As the worker starts its dashboard (src/worker.ts): a download's retry goes through the table.
    const dash = await startDashboard({ ...h.services, retryDownload: (data) => retryDownloadNow(h.services, producer, data) }, { host: "127.0.0.1", port: 0 });
    try {
      await failForGood(downloads, payload);
      const before = await downloads.getJob(jobId);
      expect(before?.attemptsMade).toBe(1);

      // bull-board's own Retry (one job, and every failed job) from the dashboard's own page: read-only, refused.
      const sameOrigin = { origin: dash.url, "sec-fetch-site": "same-origin" };
      for (const target of [`/queues/api/queues/downloads/${jobId}/retry`, "/queues/api/queues/downloads/retry/failed"]) {
        for (const method of ["PUT", "POST"]) {
          const res = await fetch(dash.url + target, { method, headers: sameOrigin });
          expect(res.status, `${method} ${target}`).not.toBe(200);
          expect(res.status, `${method} ${target}`).toBeGreaterThanOrEqual(400);
        }
        expect((await fetch(dash.url + target, { method: "PUT", headers: sameOrigin })).status).toBe(405);
      }
      expect(await downloads.getJobState(jobId)).toBe("failed");
      const after = await downloads.getJob(jobId);
      expect(after?.attemptsMade).toBe(before?.attemptsMade);
      expect(after?.failedReason).toBe(before?.failedReason);
      expect(await row(id)).toMatchObject({ status: "failed", next_attempt_at: null });
      // Its page lists the queues with no Retry offered: every queue says it is read-only.
      const listed = (await (await fetch(`${dash.url}/queues/api/queues`)).json()) as {
        queues: Array<{ name: string; readOnlyMode: boolean; allowRetries: boolean }>;
      };
      expect(listed.queues.length).toBeGreaterThan(0);
      for (const q of listed.queues) expect(q, q.name).toMatchObject({ readOnlyMode: true, allowRetries: false });

      // The dashboard's own Retry (the /jobs page's form) makes the row due now with a fresh failure count.
      const page = await fetch(`${dash.url}/jobs?queue=downloads`);
      const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
      const retried = await fetch(`${dash.url}/jobs/retry`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie, ...sameOrigin },
        body: new URLSearchParams({ id: jobId, queue: "downloads", _csrf: csrf }).toString(),
      });
      expect(retried.status).toBe(303);
      expect(new URLSearchParams((retried.headers.get("location") ?? "").split("?")[1]).get("done")).toBe(`Retried downloads/${jobId}.`);
      const r = await h.pool.query<{ status: string; failures: number; queued_at: Date | null }>(
        "SELECT status::text AS status, failures, queued_at FROM downloads WHERE deviationid = $1 AND kind = 'original'",
        [id],
      );
      expect(r.rows[0]).toMatchObject({ status: "queued", failures: 0, queued_at: expect.any(Date) });
      expect(["waiting", "prioritized"]).toContain(await downloads.getJobState(jobId));
      expect((await downloads.getJob(jobId))?.attemptsMade).toBe(0);
    } finally {
      await downloads.remove(jobId).catch(() => undefined);
      await dash.close();
      await producer.close();
      await admin.close();
    }
  });
});
