// `dvault track add` and `track remove` as a person runs them (bin/dvault.js in child processes, real Postgres,
// Redis and the simulator), held to their --help: add says "the worker picks it up within 5 minutes" (the
// schedules.reconcile job, every 5 minutes, installs the user's schedule) and "dvault sync --once --only tracked
// runs it now"; remove says "what is archived stays" (the schedule goes, the mirror and the files stay), and takes
// the user as add does (a profile URL too).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { reconcileSchedulesDefinition } from "../../jobs/reconcile-schedules/definition.ts";
import { reconcileSchedulesHandler } from "../../jobs/reconcile-schedules/handler.ts";
import { Producer } from "../../src/queue/producer.ts";
import { DEFAULT_EVERY_MS } from "../../src/sync/source.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { queueOf } from "../helpers/producer-queue.ts";
import { workerContext } from "../helpers/worker-context.ts";

let h: DownloadHarness;
let producer: Producer;

beforeAll(async () => {
  // One tracked artist with a small gallery; the owner's own sources are not run here.
  h = await createDownloadHarness({
    sim: {
      dataset: {
        deviations: 2,
        galleryFolders: 1,
        collectionFolders: 0,
        favourites: 0,
        trackedUsers: 1,
        trackedUserDeviations: 6,
        messages: 0,
        notes: 0,
        feedItems: 0,
      },
      startTime: new Date(),
    },
  });
  producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
}, 120_000);

afterAll(async () => {
  await producer?.close();
  await h?.close();
});

/** What the worker's maintenance host does every 5 minutes: rebuild the sync schedules from PostgreSQL. */
async function reconcile(): Promise<Map<string, number>> {
  const ctx = workerContext({ log: h.log, services: h.services, producer, sources: new Map(SOURCES.map((s) => [s.name, s])) });
  expect(await reconcileSchedulesHandler({}, ctx)).toMatchObject({ status: "done" });
  const schedulers = await queueOf(producer, "sync").getJobSchedulers(0, -1);
  return new Map(schedulers.map((s) => [s.key, Number(s.every)]));
}

async function authored(userid: string): Promise<{ deviations: number; downloads: number }> {
  const { rows } = await h.pool.query<{ deviations: number; downloads: number }>(
    `SELECT (SELECT count(*)::int FROM deviations WHERE author_userid = $1 AND removed_at IS NULL) AS deviations,
            (SELECT count(*)::int FROM downloads w JOIN deviations d USING (deviationid) WHERE d.author_userid = $1) AS downloads`,
    [userid],
  );
  return rows[0]!;
}

describe("dvault track add / remove", () => {
  it("add: picked up by the next reconcile (every 5 minutes), run now by sync --once --only tracked; remove: the schedule goes, the archive stays", async () => {
    const t = h.sim.truth;
    const artist = t.users.get(t.galleryFolders.find((f) => f.ownerId !== t.ownerId)!.ownerId)!;
    const scheduler = `sched-${h.account.id}-tracked-${artist.username}`;
    expect(reconcileSchedulesDefinition.every).toBeLessThanOrEqual(5 * 60_000);

    const add = await runDvault(h, ["track", "add", artist.username]);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toBe(`tracking ${artist.username} with the token of ${h.account.name}\n`);
    expect((await reconcile()).get(scheduler)).toBe(DEFAULT_EVERY_MS.tracked);

    const now = await runDvault(h, ["sync", "--once", "--only", "tracked"]);
    expect(now.code, now.stderr).toBe(0);
    expect(now.stdout).toMatch(new RegExp(`^${h.account.name}\\s+tracked:${artist.username}\\s+ok\\b`, "m"));
    const archived = await authored(artist.userid);
    expect(archived.deviations).toBeGreaterThan(0);
    expect(archived.downloads).toBeGreaterThan(0);

    // Named as add takes them: the profile URL a person copies. One name it does not track refuses them all.
    const profile = `https://www.deviantart.com/${artist.username}`;
    const refused = await runDvault(h, ["track", "remove", profile, "nobody-tracked"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`dvault: ${h.account.name} does not track nobody-tracked: nothing was removed; see dvault track list\n`);
    const remove = await runDvault(h, ["track", "remove", profile]);
    expect(remove.code, remove.stderr).toBe(0);
    expect(remove.stdout).toBe(`stopped tracking ${artist.username}; everything archived from them stays\n`);
    expect((await reconcile()).has(scheduler)).toBe(false);
    expect(await authored(artist.userid)).toEqual(archived);
  }, 90_000);
});

describe("--account naming the client-credentials account (track, add, sync, import, download)", () => {
  it("says what that account is, not 'no account named' while dvault auth status lists it", async () => {
    // As `dvault auth client` (or a first static sync) makes it.
    await h.services.tokens().requestClientToken();
    const { rows } = await h.pool.query<{ name: string }>("SELECT name FROM accounts WHERE kind = 'client'");
    const client = rows[0]?.name;
    if (!client) throw new Error("no client-credentials account was made");
    // The other test of this file (in either order) runs the user account's sources alone.
    const runs = await Promise.all([
      runDvault(h, ["track", "add", "someone", "--account", client]),
      runDvault(h, ["add", "https://www.deviantart.com/someone/art/a-work-123", "--account", client]),
      runDvault(h, ["sync", "--once", "--account", client]),
      runDvault(h, ["import", "gallery-dl", h.archiveDir, "--account", client]),
      runDvault(h, ["download", "--once", "--account", client]),
    ]).finally(() => h.pool.query("DELETE FROM accounts WHERE kind = 'client'"));
    const line = `dvault: "${client}" is a client-credentials account, which sees no mature work and owns no allowance: give --account <a user account>\n`;
    expect(runs.map((r) => r.stderr)).toEqual([line, line, line, line, line]);
    expect(runs.map((r) => r.code)).toEqual([1, 1, 1, 1, 1]);
  }, 60_000);
});
