// Worker roles (DVAULT_WORKER_ROLES): a host with only `downloads` archives originals and leaves a sync job
// waiting; one with `sync,http` runs that job and serves the dashboard but downloads nothing; status names
// each worker's roles and the roles nobody runs.
import { TEST_ENGINE } from "../helpers/env.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { Producer } from "../../src/queue/producer.ts";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { formatStatus } from "../../src/cli/status.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { collectStatus } from "../../src/status/collect.ts";
import { missingRoles, workersWithRoles } from "../../src/status/redis-state.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import type { RunningWorker } from "../../src/worker.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { doneOriginals, startHarnessWorker } from "../helpers/harness-worker.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: DownloadHarness;
let producer: Producer;
const running: RunningWorker[] = [];

async function startWithRoles(roles: string): Promise<RunningWorker> {
  const worker = await startHarnessWorker(h, { DVAULT_WORKER_ROLES: roles, DVAULT_HTTP_PORT: "0" });
  running.push(worker);
  return worker;
}

/** Original download requests the simulator answered since `seq`. */
function downloadCallsSince(seq: number): number {
  return h.sim.log().filter((e) => e.seq > seq && e.route.endsWith("/deviation/download/{deviationid}")).length;
}

const POLL = { timeout: 30_000, interval: 50 };

/** Presses one of the overview's buttons as a browser would (its CSRF cookie and field); the notice its redirect carries. */
async function pressButton(base: string, page: { headers: Headers; html: string }, action: string): Promise<string | null> {
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const token = /name="_csrf" value="([^"]+)"/.exec(page.html)?.[1] ?? "";
  const res = await fetch(`${base}${action}`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: token }).toString(),
  });
  expect(res.status).toBe(303);
  return new URL(res.headers.get("location") ?? "", base).searchParams.get("done");
}
const SYNC_JOB = { accountId: 0, source: "gallery", key: "" } as const;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 6, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
    sources: [gallerySource],
  });
  await h.syncAll(["gallery"]);
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
}, 120_000);

afterAll(async () => {
  for (const worker of running) await worker.stop("test done");
  await producer?.close();
  await h?.close();
});

// One story: the second host starts from what the first left (its sync job still waiting).
describe("worker roles", () => {
  it("a downloads host takes no sync job; a sync,http host runs it and serves the dashboard but downloads nothing", async () => {
    const originals = downloadableOwnerDeviations(h.sim.truth).length;
    expect(originals).toBeGreaterThanOrEqual(2);
    await producer.enqueue("sync.source", { ...SYNC_JOB, accountId: h.account.id });
    const syncQueue = queueOf(producer, "sync");

    const downloads = await startWithRoles("downloads");
    expect(downloads.dashboard).toBeUndefined();
    // The host rebuilt the downloads queue from the table at start and archived every original...
    await expect.poll(() => doneOriginals(h), POLL).toBe(originals);
    // ...while the sync job, queued before it started, still waits: no worker of the sync queue ran here.
    expect(await syncQueue.getJobCounts("wait", "active", "completed", "failed")).toEqual({ wait: 1, active: 0, completed: 0, failed: 0 });
    const beforeStop = await workersWithRoles(h.services.coord, h.redis.prefix, Date.now());
    expect(beforeStop.map((w) => w.roles)).toEqual([["downloads"]]);
    expect(missingRoles(beforeStop)).toEqual(["sync", "digest", "maintenance"]);
    await downloads.stop("next host");

    // Two originals wanted again and queued, for a host that must leave them alone.
    await h.pool.query(
      "UPDATE downloads SET status = 'wanted' WHERE id IN (SELECT id FROM downloads WHERE kind = 'original' AND status = 'done' ORDER BY id LIMIT 2)",
    );
    await enqueueDueDownloads(h.services, producer);
    const seq = h.lastSeq();

    const web = await startWithRoles("sync,http");
    await expect.poll(async () => (await syncQueue.getJobCounts("completed")).completed, POLL).toBeGreaterThanOrEqual(1);
    const page = await fetch(`${web.dashboard?.url}/healthz`);
    expect(page.status).toBe(200);
    const hosts = await workersWithRoles(h.services.coord, h.redis.prefix, Date.now());
    expect(hosts.map((w) => w.roles)).toEqual([["sync", "http"]]);
    expect(missingRoles(hosts)).toEqual(["downloads", "digest", "maintenance"]);
    // dvault status says the same in words (and --json in missingRoles), as does the dashboard's overview.
    const queues = new QueueAdmin(h.services.queues);
    const report = await collectStatus({ ...h.services, queues }).finally(() => queues.close());
    expect(report.missingRoles).toEqual(["downloads", "digest", "maintenance"]);
    const text = formatStatus(report);
    expect(text).toContain(`${hosts[0]?.id} (sync, http): last heartbeat`);
    expect(text).toContain("WARNING: no running worker has the downloads role: start one whose DVAULT_WORKER_ROLES includes downloads");
    expect(report.engine).toEqual({ name: TEST_ENGINE, prefix: h.redis.prefix, movedTo: null });
    expect(report.redis).toEqual(TEST_ENGINE === "redis" ? { prefix: h.redis.prefix, hashTagged: false, legacy: false } : null);
    expect(formatStatus({ ...report, redis: { prefix: "dvault", hashTagged: false, legacy: true } })).toContain(
      'Redis keys stay under the prefix "dvault" of an older install',
    );
    const overview = await fetch(`${web.dashboard?.url}/`);
    const overviewHtml = await overview.text();
    expect(overviewHtml).toContain("no worker runs downloads");
    // Its buttons say what their work waits for: this host runs sync, and no live host the maintenance and downloads roles.
    const needs =
      "no running worker has the maintenance and downloads roles, so nothing runs until one starts whose DVAULT_WORKER_ROLES includes maintenance and downloads";
    expect(overviewHtml).toContain(`Download now: ${needs}.`);
    expect(overviewHtml).not.toContain("Sync now: ");
    const pressed = await pressButton(web.dashboard?.url ?? "", { headers: overview.headers, html: overviewHtml }, "/actions/download");
    expect(pressed).toBe(`Downloads asked for: the due files wait: ${needs}.`);
    // Nothing downloaded: the queued originals are still waiting, and the service saw no download request.
    const { wait = 0, prioritized = 0, active, completed } = await queueOf(producer, "downloads").getJobCounts("wait", "prioritized", "active", "completed");
    expect(wait + prioritized).toBe(2);
    expect({ active, completed }).toEqual({ active: 0, completed: 0 });
    expect(await doneOriginals(h)).toBe(originals - 2);
    expect(downloadCallsSince(seq)).toBe(0);
  }, 60_000);
});
