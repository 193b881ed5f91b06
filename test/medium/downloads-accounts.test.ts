// Two accounts of one install, each with its own gallery: each account's works are claimed by it and spend its own
// weekly allowance, whichever account's claim runs first (the worker's after a sync, `download --once` for all accounts
// or for one): the first claim took every unattributed row, so one account paid for both galleries while the other's
// allowance went unused.
import { expect, it } from "vitest";
import { createDownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { storeUserGrant } from "../helpers/owner-grant.ts";

type Bound = { account_id: number | null; status: string; author: string; user_id: string | null };

it("each account's own gallery is claimed by it and paid from its own allowance", async () => {
  const h = await createDownloadHarness({
    sim: {
      seed: 32,
      dataset: { deviations: 8, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 2, messages: 0, notes: 0, feedItems: 0 },
      downloadQuota: 500,
      startTime: new Date(),
    },
    quota: 3,
  });
  try {
    const otherUser = [...h.sim.truth.users.keys()].find((u) => u !== h.sim.truth.ownerId) ?? "";
    // "Other" sorts before the owner's name, so its claims run first.
    const other = await storeUserGrant(h.services, h.sim, { userId: otherUser, name: "Other" });
    const originals = async () =>
      (
        await h.pool.query<Bound>(
          `SELECT d.account_id, d.status::text, v.author_userid AS author, a.user_id
           FROM downloads d JOIN deviations v USING (deviationid) LEFT JOIN accounts a ON a.id = d.account_id
           WHERE d.kind = 'original'`,
        )
      ).rows;
    const used = async () =>
      Object.fromEntries(
        (await h.pool.query<{ account_id: number; used: number }>("SELECT account_id, used FROM download_quota_usage")).rows.map((r) => [r.account_id, r.used]),
      );

    // The sync queues each account's files for the worker (the sync job's claim, src/downloads/enqueue-due.ts).
    const synced = await runDvault({ redis: h.redis, env: h.env }, ["sync", "--once", "--only", "gallery"]);
    expect(synced.code, synced.stderr).toBe(0);
    const queued = await originals();
    expect(new Set(queued.map((r) => r.author))).toEqual(new Set([otherUser, h.sim.truth.ownerId]));
    expect(queued.filter((r) => r.account_id === null || r.user_id !== r.author)).toEqual([]);

    // download --once for one account leaves the other's works unclaimed and says nothing is left for it.
    await h.pool.query("UPDATE downloads SET account_id = NULL, queued_at = NULL, status = 'wanted'");
    const mine = await runDvault({ redis: h.redis, env: h.env }, ["download", "--once", "--account", h.account.name]);
    expect(mine.code, mine.stdout + mine.stderr).toBe(0);
    const afterMine = await originals();
    expect(afterMine.filter((r) => r.author === otherUser).every((r) => r.account_id === null && r.status === "wanted")).toBe(true);
    expect(await used()).toEqual({ [h.account.id]: 3 });

    // download --once for every account: the other one pays for its own works.
    const all = await runDvault({ redis: h.redis, env: h.env }, ["download", "--once"]);
    expect(all.code, all.stdout + all.stderr).toBe(0);
    expect((await originals()).filter((r) => r.account_id !== null && r.user_id !== r.author)).toEqual([]);
    expect(await used()).toEqual({ [h.account.id]: 3, [other.id]: 3 });
  } finally {
    await h.close();
  }
}, 180_000);
