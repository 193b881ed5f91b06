// A `--once` run's claims (src/downloads/once-claims.ts) when rows it already had come due again: files that failed,
// whose retry time came while the run went on (a long `archive --once`, whose sync can outlast the retry delay). They
// are given back for the next run, and a claim made only of them does not end the account's claims while rows behind
// them in the priority order are due: the run still reaches every row it has not had.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { OnceClaims } from "../../src/downloads/once-claims.ts";
import type { HolderLease } from "../../src/queue/holder.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { describeNeedingRedis } from "../helpers/needs-redis.ts";

const lease: HolderLease = { hold: async () => undefined, drop: async () => undefined, stop: async () => undefined };

describeNeedingRedis("a --once run's claims when rows it had come due again", () => {
  let h: DownloadHarness;

  beforeAll(async () => {
    h = await createDownloadHarness({
      sim: { dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 } },
      sources: [gallerySource],
    });
    await h.syncAll(["gallery"]);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  /** A run's claims for the harness's account, two rows a batch. */
  const claimsOfOneAccount = (alongside?: Promise<unknown>) =>
    new OnceClaims({
      services: h.services,
      deps: h.deps,
      log: h.log,
      accounts: [{ id: h.account.id, name: h.account.name }],
      lost: new Map(),
      batch: 2,
      deviationids: undefined,
      lease,
      alongside,
    });

  // Each case starts from every row due and unclaimed (the cases run in either order).
  beforeEach(async () => {
    await h.pool.query("UPDATE downloads SET status = 'wanted', queued_at = NULL, next_attempt_at = NULL");
  });

  it("a claim of only such rows leaves them to the next run and goes on to the rows behind them", async () => {
    const due = await h.pool.query<{ id: string }>("SELECT id::text AS id FROM downloads WHERE status = 'wanted' AND queued_at IS NULL");
    expect(due.rows.length).toBeGreaterThanOrEqual(6);
    const claims = claimsOfOneAccount();
    const first = await claims.next();
    expect(first).toHaveLength(2);
    // Both failed, and their retry time has come: they are due again, at the top of the priority order.
    const failedIds = first.map((r) => r.id);
    const retryAt = new Date(h.services.now() - 60_000);
    await h.pool.query("UPDATE downloads SET status = 'failed', queued_at = NULL, next_attempt_at = $2 WHERE id = ANY($1::bigint[])", [failedIds, retryAt]);

    const rest: string[] = [];
    for (let batch = await claims.next(); batch.length > 0; batch = await claims.next()) rest.push(...batch.map((r) => r.id));
    expect(
      rest.filter((id) => failedIds.includes(id)),
      "rows the run had, claimed again",
    ).toEqual([]);
    expect(new Set(rest).size).toBe(rest.length);
    expect(rest.sort()).toEqual(
      due.rows
        .map((r) => r.id)
        .filter((id) => !failedIds.includes(id))
        .sort(),
    );
    expect(claims.open).toBe(false);
    // Given back as they were, not held by this run: due for the next one, and still failed (the run's summary says its
    // failures are kept as failed in the downloads table), not turned back into wanted by the claim.
    const left = await h.pool.query("SELECT status, queued_at, next_attempt_at FROM downloads WHERE id = ANY($1::bigint[])", [failedIds]);
    expect(left.rows).toEqual([
      { status: "failed", queued_at: null, next_attempt_at: retryAt },
      { status: "failed", queued_at: null, next_attempt_at: retryAt },
    ]);
  }, 60_000);

  it("while the sync beside the run goes on, such rows at the top do not hold back the free rows behind them", async () => {
    // Every row free: their works not offered for download, so they are claimed while the sync runs.
    await h.pool.query("UPDATE deviations SET is_downloadable = false");
    const due = await h.pool.query<{ id: string }>("SELECT id::text AS id FROM downloads WHERE kind = 'original'");
    let endSync = () => undefined as void;
    const alongside = new Promise<void>((resolve) => (endSync = resolve));
    const claims = claimsOfOneAccount(alongside);
    try {
      const first = await claims.next();
      expect(first).toHaveLength(2);
      const failedIds = first.map((r) => r.id);
      await h.pool.query("UPDATE downloads SET status = 'failed', queued_at = NULL, next_attempt_at = $2 WHERE id = ANY($1::bigint[])", [
        failedIds,
        new Date(h.services.now() - 60_000),
      ]);
      // Each look that finds nothing new waits for the sync (BESIDE_POLL_MS): a few looks, not one per row.
      const rest: string[] = [];
      for (let look = 0; look < 6 && rest.length < due.rows.length - 2; look++) rest.push(...(await claims.next()).map((r) => r.id));
      expect(rest.sort()).toEqual(
        due.rows
          .map((r) => r.id)
          .filter((id) => !failedIds.includes(id))
          .sort(),
      );
    } finally {
      endSync();
    }
  }, 60_000);
});
