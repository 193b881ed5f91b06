// `dvault sync --once && dvault download --once` as a person runs it (bin/dvault.js in child processes, real
// Postgres, Redis and the simulator) against a service that fails now and then: a 500 on every 25th call
// (docs/service-behaviour.md#server-5xx), 3 % 502 and 503, a few 429s (#throttle-429) and CDN blocks
// (#cdn-block-403). Both commands finish with exit 0 and every file the service offers stored, byte for byte;
// what cannot pass by waiting ends with exit 1, an account that must log in again with exit 4
// (src/errors.ts). The run's backoff is shrunk through its settings (DVAULT_RUN_*), not by the code.
import got from "got";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CdnHook } from "../../src/simulator/server.ts";
import { downloadableOwnerDeviations, type DatasetOptions } from "../../src/simulator/dataset.ts";
import { createDownloadHarness, parkOriginalsOf, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { storeOwnerGrant } from "../helpers/owner-grant.ts";
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET } from "../helpers/sync-harness.ts";

// Small beside the default world, so that the two commands make about 150 API calls and 40 CDN requests.
const DATASET: DatasetOptions = {
  deviations: 30,
  galleryFolders: 2,
  collectionFolders: 1,
  favourites: 6,
  trackedUsers: 0,
  messages: 20,
  notes: 10,
  feedItems: 10,
  watchers: 5,
  friends: 5,
};

/** The CDN has no file for these (a 404 for the original): a failure no waiting helps. */
const missingOnCdn = new Set<string>();
const cdn404: CdnHook = (_world, _req, d) => (missingOnCdn.has(d.deviationid) ? { status: 404, text: "Not Found", contentType: "text/plain" } : undefined);

let h: DownloadHarness;

const dvault = (args: string[]) =>
  runDvault({ redis: h.redis, env: { ...h.env, DVAULT_RUN_RETRY_DELAY: "100ms", DVAULT_RUN_ITEM_PATIENCE: "20s", DVAULT_RUN_PATIENCE: "20s" } }, args);

// A fresh account per test: the first fills the mirror, the second fails a file for good, the third revokes the grant.
beforeEach(async () => {
  // The commands use the wall clock: the simulator's week is this week.
  h = await createDownloadHarness({ sim: { dataset: DATASET, downloadQuota: 500, startTime: new Date(), cdnHooks: [cdn404] }, quota: 500 });
}, 120_000);

afterEach(async () => {
  await h?.close();
});

async function rowsByStatus(): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<{ status: string; n: number }>("SELECT status::text, count(*)::int AS n FROM downloads GROUP BY status");
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

describe("sync --once && download --once", () => {
  it("finish with exit 0 and every offered file stored while the service throws 5xx, 429s and CDN blocks", async () => {
    h.sim.faults.add({ kind: "status_500", every: 25 });
    h.sim.faults.add({ route: "/_cdn/", kind: "status_500", every: 25 });
    // 3 % of the calls answered 502 or 503 (a 503 counts as a throttle: docs/service-behaviour.md#server-5xx).
    h.sim.faults.add({ kind: "status_502", probability: 0.02 });
    h.sim.faults.add({ kind: "status_503", probability: 0.01 });
    h.sim.faults.add({ route: "/_cdn/", kind: "status_502", probability: 0.03 });
    h.sim.faults.add({ kind: "user_throttle", probability: 0.03, times: 2 });
    h.sim.faults.add({ route: "/_cdn/", kind: "cdn_block", probability: 0.05, times: 2 });
    const seq = h.lastSeq();
    try {
      const sync = await dvault(["sync", "--once"]);
      expect(sync.stdout + sync.stderr).not.toMatch(/FAILED/);
      expect(sync.code).toBe(0);
      const download = await dvault(["download", "--once"]);
      expect(download.stdout).toMatch(/^failed\s+0$/m);
      expect(download.code).toBe(0);
    } finally {
      h.sim.faults.clear();
    }
    // The faults were met, in both commands: this is not a clean run.
    const faulted = h.sim.log().filter((e) => e.seq > seq && e.status >= 429);
    expect(faulted.filter((e) => e.status >= 500).length).toBeGreaterThanOrEqual(4);
    expect(faulted.some((e) => e.path.startsWith("/_cdn/"))).toBe(true);

    // Nothing is left waiting or failed, and every original the owner's gallery offers is stored, byte for byte.
    const byStatus = await rowsByStatus();
    expect(byStatus).not.toHaveProperty("wanted");
    expect(byStatus).not.toHaveProperty("queued");
    expect(byStatus).not.toHaveProperty("failed");
    const offered = downloadableOwnerDeviations(h.sim.truth).map((d) => d.deviationid);
    expect(offered.length).toBeGreaterThan(10);
    const { rows } = await h.pool.query<{ deviationid: string; status: string; sha256: string | null }>(
      "SELECT deviationid, status::text, sha256 FROM downloads WHERE kind = 'original' AND deviationid = ANY($1)",
      [offered],
    );
    expect(rows.map((r) => r.deviationid).sort()).toEqual([...offered].sort());
    const mismatched: string[] = [];
    for (const r of rows) if (r.status !== "done" || r.sha256 !== (await h.sim.fileSha256(r.deviationid))) mismatched.push(r.deviationid);
    expect(mismatched).toEqual([]);
  }, 120_000);

  it("ends with exit 1 when a file fails for good, and says it is not tried again", async () => {
    const id = downloadableOwnerDeviations(h.sim.truth)[0]!.deviationid;
    // Its row in the mirror, and no other file wanted.
    await h.syncAll(["gallery"]);
    await parkOriginalsOf(h.pool, [id]);
    missingOnCdn.add(id);
    await h.pool.query("UPDATE downloads SET status = 'wanted', path = NULL, sha256 = NULL WHERE deviationid = $1 AND kind = 'original'", [id]);
    try {
      const run = await dvault(["download", "--once"]);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/^failed\s+1$/m);
      expect(run.stdout).toContain(`failed ${id} (original)`);
      expect(run.stdout).toMatch(/HTTP 404.*not tried again \(permanent\)/);
      expect(run.stderr).toMatch(/1 download\(s\) failed/);
    } finally {
      missingOnCdn.delete(id);
    }
  }, 30_000);

  it("ends with exit 4 when the account's refresh token was revoked", async () => {
    // A new login whose tokens the person then revokes (docs/service-behaviour.md#revoke-json-body).
    const issued = h.sim.issueUserToken({ userId: h.sim.truth.ownerId });
    await storeOwnerGrant(h.services, h.sim, issued);
    await got.post(`${h.sim.url}/oauth2/revoke`, { form: { token: issued.refresh_token, client_id: SIM_CLIENT_ID, client_secret: SIM_CLIENT_SECRET } });

    const sync = await dvault(["sync", "--once"]);
    expect(sync.code).toBe(4);
    expect(sync.stderr).toContain(`dvault auth login --account ${h.account.name}`);
    const download = await dvault(["download", "--once"]);
    expect(download.code).toBe(4);
    expect(download.stderr).toContain(`dvault auth login --account ${h.account.name}`);
  }, 30_000);

  it("document their exit codes in --help", async () => {
    for (const command of ["sync", "download"]) {
      const help = await dvault([command, "--help"]);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Exit codes:\n {2}0 {2}everything that can be archived now is archived/m);
      expect(help.stdout).toMatch(/^ {2}4 {2}an account must log in again/m);
      // A database that refuses writes ends a run with 3 too (medium/read-only-database): the table says so.
      expect(help.stdout).toMatch(/^ {2}3 {2}PostgreSQL or Redis cannot be reached[^\n]*\n[^\n]*refuses writes/m);
    }
  }, 30_000);
});
