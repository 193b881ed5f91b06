// The simulator's variance and its switches for what the real service allows (docs/service-behaviour.md):
// off by default and then identical to no option; on, unfiled and doubly filed gallery deviations, empty
// folders, gone users with their error codes, the drawn bucket page key, locked works. Plus notes/send per
// recipient, profile "2026", offsetCeiling, quotaExhaustion "500" and the unknown_grant_type fault. Real
// sockets, plain fetch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { galleryAllIds, type GroundTruth } from "../../src/simulator/dataset.ts";
import { startSimulator, type Simulator, type SimulatorOptions } from "../../src/simulator/server.ts";

type Json = Record<string, unknown> & { results?: Array<Record<string, unknown>> };
type Answer = { status: number; body: Json; text: string; contentType: string };

const SMALL = { deviations: 120, favourites: 60, trackedUserDeviations: 40, notes: 10, messages: 20, feedItems: 20 };
const NOT_FOUND = { error: "invalid_request", error_description: "Api endpoint not found.", status: "error" };
const INACTIVE = { error: "invalid_request", error_description: "Account is inactive.", error_code: 1, status: "error" };
const SUSPENDED = { error: "invalid_request", error_description: "Account is suspended.", error_code: 0, status: "error" };
const UNKNOWN_USER = { error: "invalid_request", error_description: "User not found.", error_code: 2, status: "error" };
const UNKNOWN_GRANT = { error: "invalid_request", error_description: "Unknown grant_type", status: "error" };
const REFRESH_INVALID = { error: "invalid_request", error_description: "The refresh_token is invalid.", status: "error" };

async function call(sim: Simulator, path: string, token?: string, init: RequestInit = {}): Promise<Answer> {
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  const res = await fetch(path.startsWith("http") ? path : sim.apiUrl + path, { ...init, headers });
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = {};
  }
  return { status: res.status, body, text, contentType: res.headers.get("content-type") ?? "" };
}

/** Every id an offset listing serves, page by page. */
async function walk(sim: Simulator, path: string, token: string, key = "results"): Promise<string[]> {
  const ids: string[] = [];
  let offset: number | null = 0;
  while (offset !== null) {
    const sep = path.includes("?") ? "&" : "?";
    const page = await call(sim, `${path}${sep}offset=${offset}&limit=24&mature_content=true`, token);
    expect(page.status, path).toBe(200);
    for (const d of page.body[key] as Array<{ deviationid: string }>) ids.push(d.deviationid);
    offset = page.body.has_more === true ? (page.body.next_offset as number) : null;
  }
  return ids;
}

/** The dataset as bytes (Maps included), for "identical" comparisons. */
function serialise(truth: GroundTruth): string {
  return JSON.stringify(truth, (_k, v: unknown) => (v instanceof Map ? [...v.entries()] : v));
}

/** A response's bytes without what differs per instance (signed CDN tokens, the port). */
function stable(sim: Simulator, a: Answer): string {
  return `${a.status} ${a.text.replace(/\?token=[A-Za-z0-9_.-]+/g, "?token=T").replaceAll(sim.url, "BASE")}`;
}

function galleryOwners(truth: GroundTruth): string[] {
  return [...new Set(truth.galleryFolders.map((f) => f.ownerId))];
}

function usernameOf(truth: GroundTruth, userid: string): string {
  const u = truth.users.get(userid);
  if (!u) throw new Error(`no user ${userid}`);
  return u.username;
}

async function start(options: SimulatorOptions): Promise<Simulator> {
  return startSimulator({ dataset: SMALL, ...options });
}

describe(`${startSimulator.name}: variance and fidelity switches`, () => {
  describe("off", () => {
    it("is the default: variance false gives the same dataset and the same answers as no option", async () => {
      for (const seed of [3, 11]) {
        const plain = await start({ seed });
        const off = await start({ seed, variance: false });
        expect(serialise(off.truth)).toBe(serialise(plain.truth));
        expect(plain.truth.unfiled.size).toBe(0);
        expect(plain.truth.variance).toBeUndefined();
        expect(plain.variance).toEqual({ enabled: false, bucketKey: "items" });
        const owner = usernameOf(plain.truth, plain.truth.ownerId);
        const folder = plain.truth.galleryFolders[1]?.folderid ?? "";
        const paths = [
          `/gallery/all?username=${owner}&limit=24&mature_content=true`,
          `/gallery/folders?username=${owner}&calculate_size=1`,
          `/gallery/${folder}?username=${owner}&limit=24`,
          `/collections/all?username=${owner}&limit=24`,
          `/user/profile/${owner}`,
          `/feed/home/${plain.truth.feed[0]?.bucketid ?? ""}`,
        ];
        const a = plain.issueUserToken().access_token;
        const b = off.issueUserToken().access_token;
        for (const p of paths) expect(stable(off, await call(off, p, b)), p).toBe(stable(plain, await call(plain, p, a)));
        expect((await call(plain, paths[5] ?? "", a)).body.items).toBeDefined();
        await Promise.all([plain.close(), off.close()]);
      }
    });
  });

  describe("on", () => {
    const seeds = [1, 7, 42];
    const sims = new Map<number, Simulator>();

    beforeAll(async () => {
      for (const seed of seeds) sims.set(seed, await start({ seed, variance: true }));
    });
    afterAll(async () => {
      await Promise.all([...sims.values()].map((s) => s.close()));
    });

    function sim(seed: number): Simulator {
      const s = sims.get(seed);
      if (!s) throw new Error(`no simulator for seed ${seed}`);
      return s;
    }

    it("leaves the base dataset alone and draws differently per seed", async () => {
      const base = await start({ seed: 7 });
      const varied = sim(7).truth;
      expect([...varied.deviations.keys()]).toEqual([...base.truth.deviations.keys()]);
      for (const key of ["comments", "notes", "messages", "statuses", "feed"] as const) {
        expect(JSON.stringify(varied[key]), key).toBe(JSON.stringify(base.truth[key]));
      }
      await base.close();
      const unfiled = seeds.map((s) => JSON.stringify(sim(s).truth.unfiled.get(sim(s).truth.ownerId)));
      expect(new Set(unfiled).size).toBe(seeds.length);
      expect(sim(7).variance.enabled).toBe(true);
    });

    it("lists unfiled deviations in /gallery/all only, counts them in the profile, and adds empty and shared folders", async () => {
      for (const seed of seeds) {
        const s = sim(seed);
        const truth = s.truth;
        const token = s.issueUserToken().access_token;
        for (const ownerId of galleryOwners(truth)) {
          const name = usernameOf(truth, ownerId);
          const all = galleryAllIds(truth, ownerId);
          const unfiled = truth.unfiled.get(ownerId) ?? [];
          expect(unfiled.length, `${seed} ${name} unfiled share`).toBeGreaterThanOrEqual(Math.floor(all.length * 0.15));
          expect(unfiled.length, `${seed} ${name} unfiled share`).toBeLessThanOrEqual(Math.ceil(all.length * 0.3));
          const live = all.filter((id) => truth.deviations.get(id)?.isDeleted === false);
          expect(await walk(s, `/gallery/all?username=${name}`, token)).toEqual(live);

          const folders = await call(s, `/gallery/folders?username=${name}&calculate_size=1&limit=50`, token);
          const listed = folders.body.results as Array<{ folderid: string; size: number }>;
          const drawn = truth.variance?.galleries.get(ownerId);
          expect(drawn?.emptyFolders.length).toBeGreaterThanOrEqual(1);
          for (const id of drawn?.emptyFolders ?? []) expect(listed.find((f) => f.folderid === id)?.size, `${name} empty folder`).toBe(0);
          const inFolders = new Set<string>();
          for (const f of listed) for (const id of await walk(s, `/gallery/${f.folderid}?username=${name}`, token)) inFolders.add(id);
          for (const id of unfiled) expect(inFolders.has(id), `${id} is in no folder`).toBe(false);
          expect(inFolders.size + unfiled.filter((id) => live.includes(id)).length).toBe(live.length);

          const profile = await call(s, `/user/profile/${name}`, token);
          expect((profile.body.stats as { user_deviations: number }).user_deviations).toBe(live.length);
        }
        const own = truth.variance?.galleries.get(truth.ownerId);
        expect(own?.secondFolder.length).toBeGreaterThan(0);
        for (const id of own?.secondFolder ?? []) {
          const holders = truth.galleryFolders.filter((f) => f.ownerId === truth.ownerId && f.name !== "Featured" && f.deviationIds.includes(id));
          expect(holders.length, `${id} in two folders`).toBeGreaterThanOrEqual(2);
        }
        // Every favourite sits in at least one folder; the drawn empty one holds none.
        const emptyCollection = truth.variance?.emptyCollectionFolders[0];
        expect(truth.collectionFolders.find((f) => f.folderid === emptyCollection)?.deviationIds).toEqual([]);
      }
    });

    it("sends the bucket page under the drawn key, both keys across seeds", async () => {
      const keys = new Set<string>();
      for (const seed of [...seeds, 2, 3, 4, 5, 6]) {
        const s = sims.get(seed) ?? (await start({ seed, variance: true, dataset: { ...SMALL, deviations: 20 } }));
        const key = s.variance.bucketKey;
        keys.add(key);
        const bucket = s.truth.feed.find((f) => f.deviationIds.length > 0);
        const page = await call(s, `/feed/home/${bucket?.bucketid ?? ""}?mature_content=true`, s.issueUserToken().access_token);
        expect(page.status).toBe(200);
        expect(Array.isArray(page.body[key])).toBe(true);
        expect(page.body[key === "items" ? "results" : "items"]).toBeUndefined();
        expect(s.truth.variance?.bucketKey).toBe(key);
        if (!sims.has(seed)) await s.close();
      }
      expect([...keys].sort()).toEqual(["items", "results"]);
    });

    it("answers gone and unknown users with error_code 0, 1 and 2 on every user-scoped endpoint", async () => {
      const s = sim(42);
      const truth = s.truth;
      const token = s.issueUserToken().access_token;
      const client = s.issueClientToken().access_token;
      const [deactivated] = truth.variance?.deactivatedUsers ?? [];
      expect(deactivated).toBeDefined();
      const tracked = galleryOwners(truth).filter((id) => id !== truth.ownerId);
      for (const id of tracked) expect(truth.users.get(id)?.isDeactivated).toBe(false);
      const [first, second] = tracked.map((id) => usernameOf(truth, id));
      s.activity({ kind: "suspend_user", username: first ?? "" });
      s.activity({ kind: "deactivate_user", username: second ?? "" });
      const cases: Array<[string, unknown]> = [
        [first ?? "", SUSPENDED],
        [second ?? "", INACTIVE],
        [usernameOf(truth, deactivated ?? ""), INACTIVE],
        ...(truth.variance?.suspendedUsers ?? []).map((id): [string, unknown] => [usernameOf(truth, id), SUSPENDED]),
        ["nobody-by-this-name", UNKNOWN_USER],
      ];
      const endpoints = (u: string) => [
        `/user/profile/${u}`,
        `/gallery/all?username=${u}`,
        `/gallery/folders?username=${u}`,
        `/collections/all?username=${u}`,
        `/collections/folders?username=${u}`,
        `/user/friends/${u}`,
        `/user/watchers/${u}`,
        `/user/profile/posts?username=${u}`,
        `/comments/profile/${u}`,
        `/user/tiers/${u}`,
      ];
      for (const [name, expected] of cases) {
        for (const path of endpoints(name)) {
          const answer = await call(s, path, path.startsWith("/user/tiers") ? token : client);
          expect(answer.status, path).toBe(400);
          expect(answer.body, path).toEqual(expected);
        }
      }
      // Back again: the tracked user's gallery answers, and their works show in the owner's listings again.
      s.activity({ kind: "reactivate_user", username: first ?? "" });
      expect((await call(s, `/gallery/all?username=${first}`, token)).status).toBe(200);
      s.activity({ kind: "reactivate_user", username: second ?? "" });
    });

    it("hides the favourites of users gone before the first sync", async () => {
      const s = sim(1);
      const truth = s.truth;
      const gone = new Set([...(truth.variance?.deactivatedUsers ?? []), ...(truth.variance?.suspendedUsers ?? [])]);
      const owner = usernameOf(truth, truth.ownerId);
      const listed = await walk(s, `/collections/all?username=${owner}`, s.issueUserToken().access_token);
      const faves = truth.collectionFolders.filter((f) => f.ownerId === truth.ownerId).flatMap((f) => [...f.deviationIds]);
      const ofGone = faves.filter((id) => {
        const d = truth.deviations.get(id);
        return d && !d.isDeleted && gone.has(d.authorId);
      });
      expect(ofGone.length).toBeGreaterThan(0);
      for (const id of ofGone) expect(listed).not.toContain(id);
    });

    it("lists a few of the tracked users' works locked, without content", async () => {
      const s = sim(7);
      const truth = s.truth;
      const token = s.issueUserToken().access_token;
      const locked = truth.variance?.lockedDeviations ?? [];
      expect(locked.length).toBeGreaterThan(0);
      for (const id of locked) {
        const d = truth.deviations.get(id);
        const answer = await call(s, `/deviation/${id}`, token);
        expect(answer.body).toMatchObject({ tier_access: "locked", premium_folder_data: { has_access: false } });
        expect(["watchers", "paid"]).toContain((answer.body.premium_folder_data as { type: string }).type);
        expect(answer.body.content).toBeUndefined();
        const listed = await walk(s, `/gallery/all?username=${usernameOf(truth, d?.authorId ?? "")}`, token);
        expect(listed).toContain(id);
        expect((await call(s, `/deviation/download/${id}`, token)).body.error_description).toBe("Deviation not downloadable.");
      }
    });
  });

  it("answers notes/send per recipient: a partial success in one 200", async () => {
    const s = await start({ seed: 5 });
    const truth = s.truth;
    const others = [...truth.users.values()].filter((u) => u.userid !== truth.ownerId && u.type !== "group");
    const [friend, leaver] = others;
    s.activity({ kind: "deactivate_user", username: leaver?.username ?? "" });
    const token = s.issueUserToken().access_token;
    const body = new URLSearchParams({ subject: "Hi", body: "Hello there" });
    for (const name of [friend?.username ?? "", "nobody-by-this-name", leaver?.username ?? ""]) body.append("to[]", name);
    const sent = await call(s, "/notes/send", token, { method: "POST", body });
    expect(sent.status).toBe(200);
    const [ok, unknown, gone] = sent.body.results ?? [];
    expect(ok).toMatchObject({ success: true, user: { userid: friend?.userid, username: friend?.username } });
    expect(typeof ok?.noteid).toBe("string");
    expect(unknown).toEqual({ success: false, user: { userid: null, username: "nobody-by-this-name", usericon: null, type: null }, noteid: null });
    expect(gone).toEqual({ success: false, user: { userid: null, username: leaver?.username, usericon: null, type: null }, noteid: null });
    await s.close();
  });

  it('removes deviation comments and siblings under profile "2026", keeps profile comments', async () => {
    const s = await start({ seed: 9, profile: "2026" });
    const truth = s.truth;
    const token = s.issueUserToken().access_token;
    const onDeviation = truth.comments.find((c) => c.target.kind === "deviation");
    expect(await call(s, `/comments/deviation/${onDeviation?.target.id}`, token)).toMatchObject({ status: 404, body: NOT_FOUND });
    expect(await call(s, `/comments/${onDeviation?.commentid}/siblings`, token)).toMatchObject({ status: 404, body: NOT_FOUND });
    const profile = await call(s, `/comments/profile/${usernameOf(truth, truth.ownerId)}`, token);
    expect(profile.status).toBe(200);
    expect((profile.body.thread as unknown[]).length).toBeGreaterThan(0);
    expect(s.profile).toBe("2026");
    await s.close();
    await expect(startSimulator({ profile: "2026", mode: "legacy" })).rejects.toThrow(/mode "current"/);
  });

  it("honours offsetCeiling on /gallery/all, folders and collections", async () => {
    const ceiling = 16;
    const s = await start({ seed: 4, offsetCeiling: ceiling });
    const truth = s.truth;
    const token = s.issueUserToken().access_token;
    const owner = usernameOf(truth, truth.ownerId);
    const folder = truth.galleryFolders.find((f) => f.ownerId === truth.ownerId && f.deviationIds.length > ceiling + 4);
    expect(folder, "a folder longer than the ceiling").toBeDefined();
    for (const path of [`/gallery/all?username=${owner}`, `/gallery/${folder?.folderid}?username=${owner}`, `/collections/all?username=${owner}`]) {
      const at = await call(s, `${path}&offset=${ceiling}&limit=10&mature_content=true`, token);
      expect(at.status, path).toBe(200);
      expect((at.body.results as unknown[]).length, path).toBeGreaterThan(0);
      const beyond = await call(s, `${path}&offset=${ceiling + 1}&limit=10&mature_content=true`, token);
      expect(beyond.body, path).toMatchObject({ has_more: false, next_offset: null, results: [] });
    }
    await s.close();
  });

  it('answers an over-quota download with a bare 500 under quotaExhaustion "500" and counts nothing', async () => {
    const s = await start({ seed: 6, quotaExhaustion: "500", downloadQuota: 2 });
    const truth = s.truth;
    const token = s.issueUserToken().access_token;
    const ids = [...truth.deviations.values()].filter((d) => d.authorId === truth.ownerId && d.isDownloadable && !d.isDeleted).map((d) => d.deviationid);
    for (const id of ids.slice(0, 2)) expect((await call(s, `/deviation/download/${id}`, token)).status).toBe(200);
    const over = await call(s, `/deviation/download/${ids[2]}`, token);
    expect(over.status).toBe(500);
    expect(over.contentType).toMatch(/^text\/html/);
    expect(over.text).toContain("Internal Server Error");
    expect(() => JSON.parse(over.text) as unknown).toThrow();
    expect(s.quotaUsed(truth.ownerId)).toBe(2);
    s.setDownloadQuota({ allowance: 3 });
    expect((await call(s, `/deviation/download/${ids[2]}`, token)).status).toBe(200);
    expect(s.quotaUsed(truth.ownerId)).toBe(3);
    await s.close();
  });

  it("answers unknown_grant_type on the token endpoint only, without consuming the refresh token", async () => {
    const s = await start({ seed: 8 });
    const grant = s.issueUserToken();
    const refresh = (token: string) =>
      call(s, `${s.url}/oauth2/token`, undefined, {
        method: "POST",
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token, client_id: "1001", client_secret: "sim-secret-1001" }),
      });
    expect(() => s.faults.add({ kind: "unknown_grant_type", route: "/gallery/all" })).toThrow(/only to \/oauth2\/token/);
    s.faults.add({ kind: "unknown_grant_type" });
    expect((await call(s, "/placebo", grant.access_token)).status).toBe(200);
    expect(await refresh(grant.refresh_token)).toMatchObject({ status: 400, body: UNKNOWN_GRANT });
    const rotated = await refresh(grant.refresh_token);
    expect(rotated.status).toBe(200);
    expect(typeof rotated.body.refresh_token).toBe("string");
    expect(await refresh(grant.refresh_token)).toMatchObject({ status: 400, body: REFRESH_INVALID });
    await s.close();
  });
});
