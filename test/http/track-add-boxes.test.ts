// The dashboard's "Track an artist" and "Archive one work" boxes over real sockets, against the simulator (no
// browser, no worker: what the boxes queue stays visible in Redis). Track takes what `track import` takes and
// stores nobody unless the service knows everyone; Add stores the work's rows now and queues its file's download
// for the worker, claiming nothing archived; each refusal is one line on a page; a POST without the token is 403.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { enqueueDueDownloads } from "../../src/downloads/enqueue-due.ts";
import { downloadJobId } from "../../src/downloads/download-job.ts";
import { addBox, trackBox } from "../../src/http/pages/track.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { Producer } from "../../src/queue/producer.ts";
import { enqueueSyncNow, enqueueTrackedSync } from "../../src/sync/sync-now.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { queueOf } from "../helpers/producer-queue.ts";

let h: SyncHarness;
let dash: RunningDashboard;
// biome-ignore lint/suspicious/noExplicitAny: the catalogue's producer, as the worker builds it
let producer: Producer;

beforeAll(async () => {
  h = await createSyncHarness({
    sim: {
      seed: 5,
      dataset: {
        deviations: 2,
        galleryFolders: 1,
        collectionFolders: 0,
        favourites: 0,
        trackedUsers: 3,
        trackedUserDeviations: 2,
        messages: 0,
        notes: 0,
        feedItems: 0,
      },
    },
  });
  const services = h.services;
  producer = new Producer([...JOB_DEFINITIONS], services.queues);
  const sources = new Map(SOURCES.map((s) => [s.name, s]));
  // The worker's actions (src/worker.ts), through the same producer.
  const actions = {
    syncNow: (accountId?: number) => enqueueSyncNow({ services, producer, sources, accountId }),
    downloadNow: async () => 0,
    syncTracked: (accountId: number, usernames: readonly string[]) => enqueueTrackedSync({ producer, accountId, usernames }),
    downloadWorks: async (accountId: number, deviationids: readonly string[]) =>
      (await enqueueDueDownloads(services, producer, { only: { accountId, deviationids } })).checked,
  };
  dash = await startDashboard({ ...services, actions }, { host: "127.0.0.1", port: 0 });
}, 60_000);

afterAll(async () => {
  await dash?.close();
  await producer?.close();
  await h?.close();
});

/** The artists the dataset made besides the owner, with a work each. */
function artists(): { userid: string; username: string }[] {
  const t = h.sim.truth;
  const ids = [...new Set([...t.deviations.values()].map((d) => d.authorId).filter((id) => id !== t.ownerId))];
  return ids.map((id) => t.users.get(id)!).map((u) => ({ userid: u.userid, username: u.username }));
}

/** The box's page (its CSRF cookie and field), then its form POSTed with `fields`. */
async function submit(page: string, action: string, fields: Record<string, string>, withToken = true): Promise<{ res: Response; text: string }> {
  const got = await fetch(`${dash.url}${page}`);
  const cookie = got.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const form = new RegExp(`<form method="post" action="${action}"><input type="hidden" name="_csrf" value="([^"]+)">`).exec(await got.text());
  expect(form, `${page} shows the ${action} box`).not.toBeNull();
  const body = new URLSearchParams(withToken ? { _csrf: form![1]!, ...fields } : fields);
  const res = await fetch(`${dash.url}${action}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: dash.url, ...(withToken ? { cookie } : {}) },
    body,
  });
  return { res, text: await res.text() };
}

const tracked = async () =>
  (await h.pool.query<{ username: string }>("SELECT username FROM tracked_users WHERE removed_at IS NULL ORDER BY username")).rows.map((r) => r.username);

const ENTITIES: Record<string, string> = { "&quot;": '"', "&#39;": "'", "&lt;": "<", "&gt;": ">", "&amp;": "&" };
/** The one line a refusal page says (its first paragraph), as read. */
const refusalLine = (text: string) => /<h1>[^<]*<\/h1><p>([^<]*)<\/p>/.exec(text)?.[1]?.replace(/&(?:quot|#39|lt|gt|amp);/g, (e) => ENTITIES[e] ?? e);

describe("Track an artist", () => {
  it("tracks from a gallery URL and ~name, lands on the artist page with a notice, and queues their tracked sync", async () => {
    const [one, two] = artists();
    const { res } = await submit("/artists", "/track", { users: `https://www.deviantart.com/${one!.username.toLowerCase()}/gallery/all,\n~${two!.username}` });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get("location")!, dash.url);
    expect(to.pathname).toBe("/artists");
    expect(to.searchParams.get("done")).toBe(
      `Tracking ${one!.username}, ${two!.username} with the token of ${h.account.name}. Their first sync is queued (2 runs).`,
    );
    expect(await tracked()).toEqual([one!.username, two!.username].sort());
    const waiting = await queueOf(producer, "sync").getJobs(["waiting", "prioritized", "delayed"]);
    expect(waiting.map((j) => j.data).filter((p) => p.source === "tracked")).toEqual(
      expect.arrayContaining([one!, two!].map((u) => ({ accountId: h.account.id, source: "tracked", key: u.username }))),
    );
    // One user: their own page, which exists before any sync and shows the notice.
    const single = await submit("/", "/track", { users: `~${two!.username}` });
    const page = await fetch(new URL(single.res.headers.get("location")!, dash.url));
    expect(page.url).toContain(`/artists/${two!.username}?done=`);
    expect(await page.text()).toContain(`<div class="notice" role="status">Tracking ${two!.username} with the token of ${h.account.name}.`);
  });

  it("refuses a user the service does not know, in one line, adding nobody", async () => {
    const before = await tracked();
    const [, , three] = artists();
    const { res, text } = await submit("/artists", "/track", { users: `~${three!.username}\nhttps://www.deviantart.com/nobody-by-that-name` });
    expect(res.status).toBe(400);
    expect(refusalLine(text)).toBe('the service has no user "nobody-by-that-name": nothing was added (check the spelling)');
    expect(await tracked()).toEqual(before);
  });

  it("says the service could not be asked (502) when its profile lookup fails, adding nobody", async () => {
    const before = await tracked();
    const [, , three] = artists();
    h.sim.faults.add({ route: "/user/profile/{username}", kind: "gone", times: 5 });
    try {
      const { res, text } = await submit("/artists", "/track", { users: three!.username });
      expect(res.status).toBe(502);
      expect(refusalLine(text)).toMatch(new RegExp(`^could not check that ${three!.username} exists \\(.+\\): nothing was added; try again$`));
    } finally {
      h.sim.faults.clear();
    }
    expect(await tracked()).toEqual(before);
  });

  it("refuses a POST without its CSRF token (403), adding nobody", async () => {
    const before = await tracked();
    const [, , three] = artists();
    const { res } = await submit("/artists", "/track", { users: three!.username }, false);
    expect(res.status).toBe(403);
    expect(await tracked()).toEqual(before);
  });
});

describe("Archive one work", () => {
  it("stores the work from its URL and queues its file's download, saying queued, not archived", async () => {
    const t = h.sim.truth;
    const d = [...t.deviations.values()].find((x) => x.authorId !== t.ownerId && x.isDownloadable && !x.isDeleted && x.kind !== "journal")!;
    const artist = t.users.get(d.authorId)!;
    const { res } = await submit("/", "/add", { url: `https://www.deviantart.com/${artist.username}/art/${d.slug}-${d.numericId}` });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get("location")!, dash.url);
    expect(to.pathname).toBe(`/item/${d.deviationid}`);
    expect(to.searchParams.get("done")).toMatch(/its metadata is stored and its file's download is queued; the worker fetches it\.$/);
    const { rows } = await h.pool.query(
      "SELECT d.author_userid, w.status, w.path FROM deviations d JOIN downloads w USING (deviationid) WHERE deviationid = $1",
      [d.deviationid],
    );
    expect(rows).toEqual([{ author_userid: artist.userid, status: "queued", path: null }]);
    expect(await queueOf(producer, "downloads").getJobState(downloadJobId({ deviationid: d.deviationid, kind: "original" }))).not.toBe("unknown");
    const page = await fetch(to);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("its file&#39;s download is queued");
    // Added again once its file is stored: nothing new, said so (not "Added").
    await h.pool.query("UPDATE downloads SET status = 'done', path = 'originals/x', sha256 = repeat('0', 64), size = 1 WHERE deviationid = $1", [
      d.deviationid,
    ]);
    const again = await submit("/", "/add", { url: `https://www.deviantart.com/${artist.username}/art/${d.slug}-${d.numericId}` });
    expect(new URL(again.res.headers.get("location")!, dash.url).searchParams.get("done")).toBe(
      `"${d.title}" by ${artist.username} was already archived: nothing new was added.`,
    );
  });

  it("refuses a URL that names no work in one line, storing nothing", async () => {
    const before = (await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations")).rows[0]!.n;
    const { res, text } = await submit("/", "/add", { url: "https://www.deviantart.com/someone/gallery" });
    expect(res.status).toBe(400);
    expect(refusalLine(text)).toBe(
      `"https://www.deviantart.com/someone/gallery" names no deviation (not a deviation's URL (…/<artist>/art/<title>-<number>) nor its id)`,
    );
    expect((await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations")).rows[0]!.n).toBe(before);
  });
});

describe("the boxes' account", () => {
  it("is a list to choose from when several accounts are connected, none with one, a link to Connect with none", () => {
    for (const box of [trackBox, addBox]) {
      expect(String(box({ csrf: "t", accounts: ["alice", "bob"] }))).toMatch(
        /<select id="[a-z-]+" name="account"><option value="alice">alice<\/option><option value="bob">bob<\/option><\/select>/,
      );
      expect(String(box({ csrf: "t", accounts: ["alice"] }))).not.toContain("<select");
    }
    expect(String(trackBox({ csrf: "t", accounts: [] }))).toContain('<a href="/connect">Connect an account</a> first');
  });
});
