// An account that must log in again is no download failure: `dvault download --once` stops at once with
// the login command and leaves every row wanted, untried; a refresh the service refuses mid-run does the
// same; the worker releases such jobs without spending attempts; `dvault status` says what waits for what.
import got from "got";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/definitions.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { Producer } from "../../src/queue/producer.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { startHarnessWorker } from "../helpers/harness-worker.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "../helpers/sync-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: DownloadHarness;

const dvault = (args: string[]) => runDvault(h, args);

type RowState = { deviationid: string; kind: string; status: string; attempts: number; failures: number; last_error: string | null; queued_at: Date | null };

async function rows(of: DownloadHarness = h): Promise<RowState[]> {
  const { rows: r } = await of.pool.query<RowState>(
    "SELECT deviationid, kind::text, status::text, attempts, failures, last_error, queued_at FROM downloads ORDER BY deviationid, kind",
  );
  return r;
}

const downloadCalls = (of: DownloadHarness = h) => of.sim.log().filter((e) => e.route.includes("/deviation/download") || e.route.includes("/_cdn")).length;

async function needsReauth(): Promise<void> {
  await h.pool.query("UPDATE accounts SET state = 'needs_reauth', state_reason = 'the service refused the refresh token' WHERE id = $1", [h.account.id]);
}

// An account with 8 deviations synced and nothing downloaded yet.
async function syncedAccount(): Promise<DownloadHarness> {
  const harness = await createDownloadHarness({
    sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100, startTime: new Date() },
    sources: [gallerySource],
  });
  await harness.syncAll(["gallery"]);
  return harness;
}

beforeAll(async () => {
  h = await syncedAccount();
}, 120_000);

afterAll(async () => {
  await h?.close();
});

// Each test below marks the account as needing a login itself and leaves every row wanted, so they run in any order.
describe("downloads of an account that must log in again", () => {
  it("download --once stops at once with the login command; rows stay wanted, attempts unchanged", async () => {
    const before = await rows();
    expect(before.length).toBeGreaterThan(0);
    expect(before.every((r) => r.status === "wanted" && r.attempts === 0)).toBe(true);
    await needsReauth();
    const calls = downloadCalls();

    const run = await dvault(["download", "--once"]);
    expect(run.code).toBe(4);
    expect(run.stderr.trim().split("\n")).toEqual([
      `dvault: account "${h.account.name}" must be authorized again: the service refused the refresh token. Run: dvault auth login --account ${h.account.name} — or, on a headless server: dvault auth import --refresh-token <token> --account ${h.account.name}`,
    ]);
    // Start-up (migrations, connections) aside, nothing waits: no retries, no backoff.
    expect(run.ms).toBeLessThan(20_000);
    expect(await rows()).toEqual(before);
    expect(downloadCalls()).toBe(calls);
  });

  it("status counts them as waiting for the login, not as transient failures", async () => {
    await needsReauth();
    // Rows an earlier version failed for this reason, with a retry scheduled, read the same way.
    const first = (await rows())[0]!;
    await h.pool.query(
      "UPDATE downloads SET status = 'failed', failures = 1, next_attempt_at = now() + interval '15 minutes', last_error = 'ReauthRequiredError', account_id = $3 WHERE deviationid = $1 AND kind = $2::download_kind",
      [first.deviationid, first.kind, h.account.id],
    );
    try {
      const run = await dvault(["status"]);
      expect(run.stdout).not.toMatch(/transient/);
      expect(run.stdout).not.toMatch(/failed for good/);
      const total = (await rows()).length;
      expect(run.stdout).toContain(`  ${total} wait for an account to log in again, not tried until then: dvault auth login --account ${h.account.name}`);
      const json = JSON.parse((await dvault(["status", "--json"])).stdout) as {
        downloads: { failedRetrying: number; waitingForLogin: { rows: number; failed: number } };
      };
      expect(json.downloads.failedRetrying).toBe(0);
      expect(json.downloads.waitingForLogin).toEqual({ rows: total, failed: 1 });
    } finally {
      await h.pool.query(
        "UPDATE downloads SET status = 'wanted', failures = 0, next_attempt_at = NULL, last_error = NULL, account_id = NULL WHERE deviationid = $1 AND kind = $2::download_kind",
        [first.deviationid, first.kind],
      );
    }
  });

  it("the worker claims nothing for the account and releases jobs already queued without spending attempts", async () => {
    await needsReauth();
    const before = await rows();
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    try {
      expect((await enqueueDueDownloads(h.services, producer)).claimed).toBe(0);
      // Jobs queued before the grant was lost: the rows are queued, the worker's start rebuilds their jobs.
      // Originals only: a journal's text needs no API call, so the worker would rightly store it.
      await h.pool.query("UPDATE downloads SET status = 'queued', queued_at = now(), account_id = $1 WHERE kind = 'original'", [h.account.id]);
      const calls = downloadCalls();
      const worker = await startHarnessWorker(h);
      try {
        await expect.poll(async () => (await rows()).filter((r) => r.queued_at !== null), { timeout: 30_000, interval: 100 }).toEqual([]);
        // The handler gives the row back before the engine records its job as done (on PostgreSQL, a statement
        // of its own after the handler returns), so the job's end is waited for, not assumed.
        const queue = queueOf(producer, "downloads");
        await expect
          .poll(() => queue.getJobCounts("failed", "delayed", "wait", "active"), { timeout: 30_000, interval: 100 })
          .toEqual({ failed: 0, delayed: 0, wait: 0, active: 0 });
      } finally {
        await worker.stop("test done");
      }
      const after = await rows();
      expect(after.map((r) => ({ ...r, queued_at: null }))).toEqual(before);
      expect(downloadCalls()).toBe(calls);
    } finally {
      await h.pool.query("UPDATE downloads SET account_id = NULL");
      await producer.close();
    }
  });
});

// This story downloads every row once logged in again, so it has an account of its own.
describe("a refresh the service refuses during a run", () => {
  let own: DownloadHarness;

  beforeAll(async () => {
    own = await syncedAccount();
  }, 120_000);

  afterAll(async () => {
    await own?.close();
  });

  it("a refresh the service refuses during the run: that run stops, the rows stay wanted, attempts unchanged", async () => {
    // A new login, whose refresh token is then spent elsewhere; the access token expires before the run.
    const issued = own.sim.issueUserToken({ userId: own.sim.truth.ownerId });
    await storeOwnerGrant(own.services, own.sim, issued);
    await got.post(`${own.sim.url}/oauth2/token`, {
      form: { grant_type: "refresh_token", refresh_token: issued.refresh_token, client_id: SIM_CLIENT_ID, client_secret: SIM_CLIENT_SECRET },
    });
    own.sim.clock.advance(2 * 3600_000);
    // Journals' texts need no API call and are stored all the same: the originals are what waits.
    const originals = async () => (await rows(own)).filter((r) => r.kind === "original");
    const before = await originals();
    const calls = downloadCalls(own);

    const summary = await own.runOnce();
    expect(summary.needsLogin.map((n) => n.account)).toEqual([own.account.name]);
    expect(summary.needsLogin[0]?.message).toContain(`dvault auth login --account ${own.account.name}`);
    expect(summary).toMatchObject({ failed: 0, failures: [] });
    expect(await originals()).toEqual(before);
    expect(downloadCalls(own)).toBe(calls);
    const { rows: state } = await own.pool.query<{ state: string }>("SELECT state::text FROM accounts WHERE id = $1", [own.account.id]);
    expect(state[0]?.state).toBe("needs_reauth");

    // Once logged in again, the same rows download.
    await storeOwnerGrant(own.services, own.sim);
    const next = await own.runOnce();
    expect(next.needsLogin).toEqual([]);
    expect(next.failed).toBe(0);
    expect((await rows(own)).some((r) => r.status === "wanted" || r.status === "queued")).toBe(false);
  });
});
