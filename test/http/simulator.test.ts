// The simulator against docs/service-behaviour.md: OAuth grants and rotation, PKCE, expiry on the sim
// clock, removed endpoints, paging limits and the offset ceiling, faults, the request log, the control
// API and determinism — all over real sockets with plain fetch.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startSimulator, type Simulator } from "../../src/simulator/server.ts";

const REFRESH_INVALID = { error: "invalid_request", error_description: "The refresh_token is invalid.", status: "error" };
const NOT_FOUND = { error: "invalid_request", error_description: "Api endpoint not found.", status: "error" };
const EXPIRED = {
  error: "invalid_token",
  error_description: "Expired oAuth2 user token. The client should request a new one with an access code or a refresh token.",
  status: "error",
};
const REDIRECT = "http://127.0.0.1:8788/callback";

type Json = Record<string, unknown> & { results?: Array<Record<string, unknown>> };

async function call(sim: Simulator, path: string, token?: string, init: RequestInit = {}): Promise<{ status: number; body: Json; headers: Headers }> {
  const headers = new Headers(init.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  const res = await fetch(path.startsWith("http") ? path : sim.apiUrl + path, { ...init, headers });
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    body = { raw: text };
  }
  return { status: res.status, body, headers: res.headers };
}

function form(params: Record<string, string>, extra: RequestInit = {}): RequestInit {
  return { method: "POST", body: new URLSearchParams(params), ...extra };
}

async function token(sim: Simulator, params: Record<string, string>, basic?: [string, string]) {
  const headers: Record<string, string> = {};
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic[0]}:${basic[1]}`).toString("base64")}`;
  return call(sim, `${sim.url}/oauth2/token`, undefined, form(params, { headers }));
}

async function authorize(sim: Simulator, params: Record<string, string>): Promise<URL> {
  const res = await fetch(`${sim.url}/oauth2/authorize?${new URLSearchParams(params)}`, { redirect: "manual" });
  expect(res.status).toBe(302);
  return new URL(res.headers.get("location") ?? "");
}

function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(48).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

describe("startSimulator", () => {
  let sim: Simulator;
  let user: string;

  // A fresh simulator per test: tests advance its clock, expire and revoke tokens, write and clear its log.
  beforeEach(async () => {
    sim = await startSimulator({ seed: 42 });
    user = sim.issueUserToken().access_token;
  });
  afterEach(async () => {
    await sim.close();
  });

  describe("OAuth", () => {
    it("runs the authorization-code flow and rotates refresh tokens single-use", async () => {
      const state = "s-1";
      const redirect = await authorize(sim, { response_type: "code", client_id: "1001", redirect_uri: REDIRECT, scope: "browse user.manage", state });
      expect(redirect.origin + redirect.pathname).toBe(REDIRECT);
      expect(redirect.searchParams.get("state")).toBe(state);
      const code = redirect.searchParams.get("code") ?? "";
      const first = await token(sim, { grant_type: "authorization_code", code, redirect_uri: REDIRECT }, ["1001", "sim-secret-1001"]);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "browse user.manage", status: "success" });
      expect(typeof first.body.access_token).toBe("string");
      // The code is single-use.
      const again = await token(sim, { grant_type: "authorization_code", code, redirect_uri: REDIRECT, client_id: "1001", client_secret: "sim-secret-1001" });
      expect(again.status).toBe(400);

      const oldRefresh = String(first.body.refresh_token);
      const rotated = await token(sim, { grant_type: "refresh_token", refresh_token: oldRefresh, client_id: "1001", client_secret: "sim-secret-1001" });
      expect(rotated.status).toBe(200);
      expect(rotated.body.refresh_token).not.toBe(oldRefresh);
      expect(rotated.body.scope).toBe("browse user.manage");
      const reused = await token(sim, { grant_type: "refresh_token", refresh_token: oldRefresh, client_id: "1001", client_secret: "sim-secret-1001" });
      expect(reused.status).toBe(400);
      expect(reused.body).toEqual(REFRESH_INVALID);
      const placebo = await call(sim, "/placebo", String(rotated.body.access_token));
      expect(placebo.body).toEqual({ status: "success" });
    });

    it("rejects a redirect_uri that differs from the one sent to authorize", async () => {
      const redirect = await authorize(sim, { response_type: "code", client_id: "1001", redirect_uri: `${REDIRECT}/x`, scope: "browse" });
      const res = await token(sim, { grant_type: "authorization_code", code: redirect.searchParams.get("code") ?? "", redirect_uri: REDIRECT }, [
        "1001",
        "sim-secret-1001",
      ]);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("invalid_request");
    });

    it("binds refresh tokens to their client and expires them after three months of sim time", async () => {
      const t = sim.issueUserToken({ clientId: "1001" });
      const other = await token(sim, { grant_type: "refresh_token", refresh_token: t.refresh_token, client_id: "2002" });
      expect(other.body).toEqual(REFRESH_INVALID);
      const t2 = sim.issueUserToken();
      sim.clock.advance(91 * 86_400_000);
      const late = await token(sim, { grant_type: "refresh_token", refresh_token: t2.refresh_token }, ["1001", "sim-secret-1001"]);
      expect(late.status).toBe(400);
      expect(late.body).toEqual(REFRESH_INVALID);
      user = sim.issueUserToken().access_token;
    });

    it("answers client credentials without a refresh token, bad secrets with 401 and unknown grants", async () => {
      const cc = await token(sim, { grant_type: "client_credentials", client_id: "1001", client_secret: "sim-secret-1001" });
      expect(cc.status).toBe(200);
      expect(Object.keys(cc.body).sort()).toEqual(["access_token", "expires_in", "status", "token_type"]);
      const bad = await token(sim, { grant_type: "client_credentials" }, ["1001", "wrong"]);
      expect(bad.status).toBe(401);
      expect(bad.body.error).toBe("invalid_client");
      const unknown = await token(sim, { grant_type: "password", client_id: "1001", client_secret: "sim-secret-1001" });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error_description).toBe("Unknown grant_type");
      const viaGet = await call(sim, `${sim.url}/oauth2/token?grant_type=client_credentials&client_id=1001&client_secret=sim-secret-1001`);
      expect(viaGet.status).toBe(200);
    });

    it("grants only 'basic' when an unknown scope is asked for", async () => {
      const redirect = await authorize(sim, { response_type: "code", client_id: "1001", redirect_uri: REDIRECT, scope: "browse bogus.scope" });
      const res = await token(sim, { grant_type: "authorization_code", code: redirect.searchParams.get("code") ?? "", redirect_uri: REDIRECT }, [
        "1001",
        "sim-secret-1001",
      ]);
      expect(res.body.scope).toBe("basic");
      const gallery = await call(sim, "/gallery/all", String(res.body.access_token));
      expect(gallery.status).toBe(403);
      expect(gallery.body).toMatchObject({ error: "insufficient_scope", scope: "browse", status: "error" });
    });

    it("requires PKCE S256 from OAuth 2.1 clients and verifies the code_verifier", async () => {
      const missing = await authorize(sim, { response_type: "code", client_id: "2002", redirect_uri: REDIRECT, state: "p" });
      expect(Object.fromEntries(missing.searchParams)).toEqual({
        error: "invalid_request",
        error_description: "The code_challenge parameter is required.",
        state: "p",
        iss: "https://www.deviantart.com",
      });
      const plain = await authorize(sim, {
        response_type: "code",
        client_id: "2002",
        redirect_uri: REDIRECT,
        code_challenge: "x".repeat(43),
        code_challenge_method: "plain",
      });
      expect(plain.searchParams.get("error")).toBe("invalid_request");

      const { verifier, challenge } = pkcePair();
      const ok = await authorize(sim, {
        response_type: "code",
        client_id: "2002",
        redirect_uri: REDIRECT,
        scope: "browse",
        code_challenge: challenge,
        code_challenge_method: "S256",
      });
      const code = ok.searchParams.get("code") ?? "";
      expect(ok.searchParams.get("iss")).toBe("https://www.deviantart.com");
      const wrong = await token(sim, { grant_type: "authorization_code", client_id: "2002", code, redirect_uri: REDIRECT, code_verifier: pkcePair().verifier });
      expect(wrong.status).toBe(400);
      const ok2 = await authorize(sim, {
        response_type: "code",
        client_id: "2002",
        redirect_uri: REDIRECT,
        scope: "browse",
        code_challenge: challenge,
        code_challenge_method: "S256",
      });
      const good = await token(sim, {
        grant_type: "authorization_code",
        client_id: "2002",
        code: ok2.searchParams.get("code") ?? "",
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      });
      expect(good.status).toBe(200);
      const at = String(good.body.access_token);
      // 2.1 apps may not send the token in the query string; the header works.
      const viaQuery = await call(sim, `/placebo?access_token=${at}`);
      expect(viaQuery.status).toBe(401);
      expect((await call(sim, "/placebo", at)).status).toBe(200);
    });

    it("serves the implicit grant in the fragment for 2.0 clients over https only, never for 2.1", async () => {
      const res = await authorize(sim, { response_type: "token", client_id: "1001", redirect_uri: "https://127.0.0.1:8788/callback", state: "i" });
      const fragment = new URLSearchParams(res.hash.slice(1));
      expect(fragment.get("access_token")).toBeTruthy();
      expect(fragment.get("state")).toBe("i");
      expect(fragment.get("refresh_token")).toBeNull();
      const http = await fetch(`${sim.url}/oauth2/authorize?${new URLSearchParams({ response_type: "token", client_id: "1001", redirect_uri: REDIRECT })}`, {
        redirect: "manual",
      });
      expect(http.status).toBe(400);
      const v21 = await authorize(sim, { response_type: "token", client_id: "2002", redirect_uri: REDIRECT });
      expect(v21.searchParams.get("error")).toBe("unauthorized_client");
    });

    it("expires access tokens on the simulated clock and on demand; query tokens work for 2.0 apps", async () => {
      const t = sim.issueUserToken().access_token;
      expect((await call(sim, `/placebo?access_token=${t}`)).status).toBe(200);
      sim.clock.advance(3599_000);
      expect((await call(sim, "/placebo", t)).status).toBe(200);
      sim.clock.advance(2_000);
      const expired = await call(sim, "/placebo", t);
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual(EXPIRED);
      const t2 = sim.issueUserToken().access_token;
      sim.expireAccessTokens();
      expect((await call(sim, "/gallery/all", t2)).body).toEqual(EXPIRED);
      user = sim.issueUserToken().access_token;
    });

    it("revokes: refresh-only, then everything of the user for the client; JSON bodies get a 302", async () => {
      const a = sim.issueUserToken();
      const only = await call(sim, `${sim.url}/oauth2/revoke`, undefined, form({ token: a.refresh_token, revoke_refresh_only: "true" }));
      expect(only.body).toMatchObject({ success: true, status: "success" });
      expect((await call(sim, "/placebo", a.access_token)).status).toBe(200);
      const b = sim.issueUserToken({ clientId: "2002" });
      const all = await call(sim, `${sim.url}/oauth2/revoke`, undefined, form({ token: b.access_token }));
      expect(all.status).toBe(200);
      expect((await token(sim, { grant_type: "refresh_token", refresh_token: b.refresh_token, client_id: "2002" })).body).toEqual(REFRESH_INVALID);
      const json = await fetch(`${sim.url}/oauth2/revoke`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token: a.access_token }),
      });
      expect(json.status).toBe(302);
    });

    it("serves an approve page when autoApprove is off", async () => {
      const manual = await startSimulator({ seed: 1, autoApprove: false, dataset: { deviations: 10 } });
      const page = await fetch(
        `${manual.url}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: "1001", redirect_uri: REDIRECT, state: "m" })}`,
      );
      expect(page.status).toBe(200);
      const html = await page.text();
      const approve = /id="approve" href="([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, "&") ?? "";
      const res = await fetch(approve, { redirect: "manual" });
      const location = new URL(res.headers.get("location") ?? "");
      expect(location.searchParams.get("code")).toBeTruthy();
      expect(location.searchParams.get("state")).toBe("m");
      const deny = /id="deny" href="([^"]+)"/.exec(html)?.[1]?.replace(/&amp;/g, "&") ?? "";
      const denied = new URL((await fetch(deny, { redirect: "manual" })).headers.get("location") ?? "");
      expect(denied.searchParams.get("error")).toBe("access_denied");
      await manual.close();
    });

    it("refuses client tokens on user-only endpoints the way the service does", async () => {
      const client = sim.issueClientToken().access_token;
      const res = await call(sim, "/user/whoami", client);
      expect(res.status).toBe(401);
      expect(res.body).toEqual(EXPIRED);
      expect((await call(sim, "/user/whoami", user)).body.username).toBe("SimArtist");
    });
  });

  describe("catalogue", () => {
    it("answers removed endpoints and unknown paths with the real 404, /feed still answers", async () => {
      for (const path of [
        "/stash/delta",
        "/browse/newest",
        "/browse/popular",
        "/browse/deviantsyouwatch",
        "/browse/user/journals?username=SimArtist",
        "/browse/morelikethis",
        "/deviation/embeddedcontent",
        "/user/statuses/?username=SimArtist",
        "/no/such/thing",
      ]) {
        const res = await call(sim, path, user);
        expect([path, res.status, res.body]).toEqual([path, 404, NOT_FOUND]);
      }
      expect((await call(sim, "/feed/home", user)).status).toBe(200);
      expect((await call(sim, "/stash/submit", user, { method: "POST", body: new URLSearchParams({ title: "x" }) })).status).toBe(400);
    });

    it("pages offset listings with per-endpoint limits", async () => {
      const tooBig = await call(sim, "/gallery/all?limit=25", user);
      expect(tooBig.status).toBe(400);
      expect(tooBig.body).toEqual({
        error: "invalid_request",
        error_description: "Request field validation failed.",
        error_details: { limit: "limit is not within the allowed range" },
        status: "error",
      });
      expect((await call(sim, "/gallery/folders?limit=50", user)).status).toBe(200);
      expect((await call(sim, "/gallery/folders?limit=51", user)).status).toBe(400);
      const folders = await call(sim, "/gallery/folders?calculate_size=true&limit=50", user);
      const sized = folders.body.results?.[1];
      expect(typeof sized?.size).toBe("number");
      const folder = await call(sim, `/gallery/${String(sized?.folderid)}?limit=24&mature_content=true`, user);
      expect(folder.body).toMatchObject({ has_more: true, next_offset: 24, name: sized?.name });
      const dev = folder.body.results?.[0] ?? {};
      expect(typeof dev.published_time).toBe("string");
      expect(dev.published_time).toMatch(/^\d+$/);
    });

    it("walks a gallery with has_more/next_offset and agrees with the ground truth", async () => {
      const ownerId = sim.truth.ownerId;
      const expected = [...sim.truth.deviations.values()].filter((d) => d.authorId === ownerId && !d.isDeleted);
      const seen: string[] = [];
      let offset: number | null = 0;
      while (offset !== null) {
        const page = await call(sim, `/gallery/all?limit=24&offset=${offset}&mature_content=true`, user);
        for (const d of page.body.results ?? []) seen.push(String(d.deviationid));
        offset = page.body.has_more ? (page.body.next_offset as number) : null;
      }
      expect(new Set(seen)).toEqual(new Set(expected.map((d) => d.deviationid)));
    });

    it("hides mature items from client tokens: short pages, has_more still true", async () => {
      const client = sim.issueClientToken().access_token;
      const asUser = await call(sim, "/gallery/all?username=SimArtist&limit=24&mature_content=true", user);
      const asClient = await call(sim, "/gallery/all?username=SimArtist&limit=24&mature_content=true", client);
      expect(asClient.body.has_more).toBe(true);
      expect(asClient.body.next_offset).toBe(24);
      expect((asClient.body.results ?? []).length).toBeLessThan((asUser.body.results ?? []).length);
      expect((asClient.body.results ?? []).every((d) => d.is_mature === false)).toBe(true);
    });

    it("pages /messages/feed by cursor until an empty cursor", async () => {
      let cursor = "";
      let pages = 0;
      const ids = new Set<string>();
      do {
        const res = await call(sim, `/messages/feed${cursor ? `?cursor=${cursor}` : ""}`, user);
        expect(res.status).toBe(200);
        for (const m of res.body.results ?? []) ids.add(String(m.messageid));
        cursor = String(res.body.cursor ?? "");
        pages++;
        if (!res.body.has_more) expect(cursor).toBe("");
      } while (cursor && pages < 50);
      expect(ids.size).toBeGreaterThan(10);
      expect(pages).toBeGreaterThan(1);
    });

    it("serves comment threads, metadata in request order and the download flow with signed CDN URLs", async () => {
      const owner = sim.truth.ownerId;
      const devs = [...sim.truth.deviations.values()].filter((d) => d.authorId === owner && !d.isDeleted && !d.isMature);
      const ids = devs.slice(0, 3).map((d) => d.deviationid);
      const meta = await call(sim, `/deviation/metadata?${ids.map((id) => `deviationids[]=${id}`).join("&")}&ext_submission=1`, user);
      expect((meta.body.metadata as Array<{ deviationid: string }>).map((m) => m.deviationid)).toEqual(ids);
      const tooMany = await call(
        sim,
        `/deviation/metadata?${devs
          .slice(0, 11)
          .map((d) => `deviationids[]=${d.deviationid}`)
          .join("&")}&ext_stats=1`,
        user,
      );
      expect(tooMany.status).toBe(400);

      const withComments = devs.find((d) => sim.truth.comments.some((c) => c.target.id === d.deviationid));
      const thread = await call(sim, `/comments/deviation/${withComments?.deviationid}?maxdepth=5`, user);
      expect(thread.body).toMatchObject({ has_less: false, prev_offset: null });
      expect(Array.isArray(thread.body.thread)).toBe(true);
      expect(typeof thread.body.total).toBe("number");

      const downloadable = devs.find((d) => d.isDownloadable);
      const info = await call(sim, `/deviation/download/${downloadable?.deviationid}`, user);
      expect(info.body).toMatchObject({ filesize: downloadable?.image?.filesize });
      expect(String(info.body.src)).toMatch(new RegExp(`^${sim.url}/_cdn/original/.*\\?token=eyJ`));
      const bytes = Buffer.from(await (await fetch(String(info.body.src))).arrayBuffer());
      expect(bytes.equals(await sim.fileBytes(downloadable?.deviationid ?? ""))).toBe(true);
      const notDownloadable = devs.find((d) => !d.isDownloadable && d.kind === "image");
      const refused = await call(sim, `/deviation/download/${notDownloadable?.deviationid}`, user);
      expect(refused.body).toEqual({ error: "invalid_request", error_description: "Deviation not downloadable.", error_code: 2, status: "error" });
    });

    it("changes the dataset on writes: fave/unfave, folders, notes", async () => {
      const fav = [...sim.truth.deviations.values()].find(
        (d) => d.authorId !== sim.truth.ownerId && !d.isDeleted && !d.favedBy.some((f) => f.userid === sim.truth.ownerId),
      );
      const faved = await call(sim, "/collections/fave", user, form({ deviationid: fav?.deviationid ?? "" }));
      expect(faved.body.success).toBe(true);
      expect(sim.truth.collectionFolders[0]?.deviationIds[0]).toBe(fav?.deviationid);
      await call(sim, "/collections/unfave", user, form({ deviationid: fav?.deviationid ?? "" }));
      expect(sim.truth.collectionFolders.some((f) => f.deviationIds.includes(fav?.deviationid ?? ""))).toBe(false);
      const created = await call(sim, "/gallery/folders/create", user, form({ folder: "New Folder" }));
      expect(sim.truth.galleryFolders.some((f) => f.folderid === created.body.folderid)).toBe(true);
      const sent = await call(sim, "/notes/send", user, {
        method: "POST",
        body: `to[]=${[...sim.truth.users.values()][1]?.username}&subject=Hi&body=Hello`,
        headers: { "content-type": "application/x-www-form-urlencoded" },
      });
      expect((sent.body.results as Array<{ success: boolean }>)[0]?.success).toBe(true);
    });
  });

  describe("legacy mode and the offset ceiling", () => {
    let legacy: Simulator;
    beforeAll(async () => {
      legacy = await startSimulator({
        seed: 5,
        mode: "legacy",
        dataset: { deviations: 10_100, galleryFolders: 1, favourites: 0, messages: 5, notes: 5, feedItems: 5 },
      });
    });
    afterAll(async () => {
      await legacy.close();
    });

    it("answers removed endpoints with data", async () => {
      const t = legacy.issueUserToken().access_token;
      for (const path of ["/browse/newest", "/stash/delta", "/user/statuses/?username=SimArtist", "/browse/user/journals?username=SimArtist"]) {
        const res = await call(legacy, path, t);
        expect([path, res.status]).toEqual([path, 200]);
      }
    });

    it("stops offsets above 10 000: empty page, has_more false", async () => {
      const t = legacy.issueUserToken().access_token;
      const near = await call(legacy, "/gallery/all?offset=9984&limit=24&mature_content=true", t);
      expect(near.body).toMatchObject({ has_more: true, next_offset: 10_008 });
      const past = await call(legacy, "/gallery/all?offset=10008&limit=24&mature_content=true", t);
      expect(past.body).toEqual({ has_more: false, next_offset: null, results: [] });
      const huge = await call(legacy, "/gallery/all?offset=50001", t);
      expect(huge.status).toBe(400);
    });
  });

  describe("faults", () => {
    it("produces each kind with the service's bodies", async () => {
      const cases: Array<[string, number, unknown]> = [
        ["user_throttle", 429, { error: "user_api_threshold", error_description: "User request limit reached.", status: "error" }],
        ["app_throttle", 429, { error: "application_api_threshold", error_description: "Client request limit reached.", status: "error" }],
        ["status_500", 500, { error: "server_error", error_description: "Internal server error", status: "error" }],
      ];
      for (const [kind, status, body] of cases) {
        sim.faults.add({ kind: kind as "user_throttle", route: "/gallery/all" });
        const res = await call(sim, "/gallery/all", user);
        expect([kind, res.status, res.body]).toEqual([kind, status, body]);
        expect((await call(sim, "/gallery/all", user)).status).toBe(200);
      }
      sim.faults.add({ kind: "cdn_block" });
      const blocked = await fetch(`${sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${user}` } });
      expect(blocked.status).toBe(403);
      expect(blocked.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await blocked.text()).toContain("Request blocked");
      sim.faults.add({ kind: "status_502" });
      expect((await call(sim, "/placebo", user)).status).toBe(502);
      sim.faults.add({ kind: "status_503" });
      expect((await call(sim, "/placebo", user)).status).toBe(503);
      sim.faults.add({ kind: "malformed_json", route: "/gallery/{folderid}" });
      const folderId = sim.truth.galleryFolders[1]?.folderid ?? "";
      const broken = await fetch(`${sim.apiUrl}/gallery/${folderId}`, { headers: { authorization: `Bearer ${user}` } });
      expect(broken.status).toBe(200);
      await expect(broken.clone().json()).rejects.toThrow();
      sim.faults.add({ kind: "reset", method: "GET" });
      await expect(fetch(`${sim.apiUrl}/placebo`, { headers: { authorization: `Bearer ${user}` } })).rejects.toThrow();
      sim.faults.add({ kind: "latency", latencyMs: 150 });
      const t0 = Date.now();
      expect((await call(sim, "/placebo", user)).status).toBe(200);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
    });

    it("applies to the next N matching requests and leaves the token endpoint alone unless named", async () => {
      sim.faults.add({ kind: "user_throttle", times: 2 });
      const cc = await token(sim, { grant_type: "client_credentials" }, ["1001", "sim-secret-1001"]);
      expect(cc.status).toBe(200);
      expect((await call(sim, "/placebo", user)).status).toBe(429);
      expect((await call(sim, "/placebo", user)).status).toBe(429);
      expect((await call(sim, "/placebo", user)).status).toBe(200);
      sim.faults.add({ kind: "status_503", route: "/oauth2/token" });
      expect((await token(sim, { grant_type: "client_credentials" }, ["1001", "sim-secret-1001"])).status).toBe(503);
    });

    it("models a lost token response: reset on /oauth2/token still consumes the refresh token", async () => {
      const t = sim.issueUserToken();
      sim.faults.add({ kind: "reset", route: "/oauth2/token" });
      await expect(token(sim, { grant_type: "refresh_token", refresh_token: t.refresh_token }, ["1001", "sim-secret-1001"])).rejects.toThrow();
      const retry = await token(sim, { grant_type: "refresh_token", refresh_token: t.refresh_token }, ["1001", "sim-secret-1001"]);
      expect(retry.body).toEqual(REFRESH_INVALID);
    });

    it("draws probability faults from the seeded RNG (same seed, same pattern)", async () => {
      const pattern = async () => {
        const s = await startSimulator({ seed: 9, dataset: { deviations: 20 } });
        const at = s.issueUserToken().access_token;
        s.faults.add({ kind: "status_500", probability: 0.5 });
        const out: number[] = [];
        for (let i = 0; i < 16; i++) out.push((await call(s, "/placebo", at)).status);
        await s.close();
        return out;
      };
      const a = await pattern();
      expect(a).toEqual(await pattern());
      expect(a).toContain(500);
      expect(a).toContain(200);
    });
  });

  describe("request log, stats and control API", () => {
    it("logs every request with its route template, params as sent, auth and identity", async () => {
      sim.clearLog();
      const ids = [...sim.truth.deviations.keys()].slice(0, 2);
      await call(sim, `/deviation/metadata?deviationids[]=${ids[0]}&deviationids[]=${ids[1]}`, user);
      await call(sim, `/placebo?access_token=${user}`);
      await token(sim, { grant_type: "client_credentials" }, ["1001", "sim-secret-1001"]);
      sim.faults.add({ kind: "user_throttle", route: "/placebo" });
      await call(sim, "/placebo", user);
      await fetch(`${sim.url}/_sim/truth`);
      const log = sim.log();
      expect(log.map((e) => [e.method, e.route, e.status, e.auth])).toEqual([
        ["GET", "/api/v1/oauth2/deviation/metadata", 200, "bearer"],
        ["GET", "/api/v1/oauth2/placebo", 200, "query"],
        ["POST", "/oauth2/token", 200, "basic"],
        ["GET", "/api/v1/oauth2/placebo", 429, "bearer"],
      ]);
      expect(log[0]?.query["deviationids[]"]).toEqual(ids);
      expect(log[0]).toMatchObject({
        path: "/api/v1/oauth2/deviation/metadata",
        userId: sim.truth.ownerId,
        clientId: "1001",
        at: sim.clock.now().toISOString(),
      });
      expect(log[2]?.form).toEqual({ grant_type: "client_credentials" });
      expect(log[3]?.fault).toBe("user_throttle");
      expect(log.map((e) => e.seq)).toEqual([...log.map((e) => e.seq)].sort((a, b) => a - b));
      expect(sim.stats()["GET /placebo"]).toEqual({ count: 2, byStatus: { "200": 1, "429": 1 } });
    });

    it("drives the simulator over /_sim/", async () => {
      const post = (path: string, body: unknown = {}) =>
        call(sim, `${sim.url}/_sim${path}`, undefined, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const before = Date.parse(String((await call(sim, `${sim.url}/_sim/clock`)).body.now));
      await post("/clock/advance", { ms: 60_000 });
      expect(Date.parse(String((await call(sim, `${sim.url}/_sim/clock`)).body.now))).toBe(before + 60_000);
      const issued = await post("/tokens/user", { scopes: ["browse"] });
      const at = String(issued.body.access_token);
      expect((await call(sim, "/gallery/all", at)).status).toBe(200);
      expect((await call(sim, "/user/whoami", at)).status).toBe(403);
      await post("/faults", { rule: { kind: "app_throttle" } });
      expect((await call(sim, "/gallery/all", at)).body.error).toBe("application_api_threshold");
      await post("/faults", { rule: { kind: "app_throttle", times: 5 } });
      await call(sim, `${sim.url}/_sim/faults`, undefined, { method: "DELETE" });
      expect((await call(sim, "/gallery/all", at)).status).toBe(200);
      await post("/tokens/expire");
      expect((await call(sim, "/gallery/all", at)).status).toBe(401);
      const client = await post("/tokens/client");
      expect((await call(sim, "/gallery/all?username=SimArtist", String(client.body.access_token))).status).toBe(200);
      const truth = await call(sim, `${sim.url}/_sim/truth`);
      expect(truth.body).toMatchObject({ seed: 42, owner: { username: "SimArtist" } });
      const stats = await call(sim, `${sim.url}/_sim/stats`);
      expect(stats.body["GET /gallery/all"]).toBeDefined();
      const log = await call(sim, `${sim.url}/_sim/log`);
      expect((log.body.entries as Array<{ path: string }>).some((e) => e.path.startsWith("/_sim"))).toBe(false);
      await post("/log/clear");
      expect(sim.log()).toEqual([]);
    });

    it("applies activity: new and deleted deviations, edits, messages, notes, deactivated users", async () => {
      const post = (body: unknown) =>
        call(sim, `${sim.url}/_sim/activity`, undefined, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const at = sim.issueUserToken().access_token;
      const added = await post({ kind: "add_deviation", title: "Fresh Work", isMature: false });
      const newest = await call(sim, "/gallery/all?limit=1", at);
      expect(newest.body.results?.[0]).toMatchObject({ deviationid: added.body.deviationid, title: "Fresh Work" });
      await post({ kind: "edit_title", deviationid: added.body.deviationid, title: "Renamed" });
      expect((await call(sim, `/deviation/${String(added.body.deviationid)}`, at)).body.title).toBe("Renamed");
      await post({ kind: "delete_deviation", deviationid: added.body.deviationid });
      expect((await call(sim, "/gallery/all?limit=1", at)).body.results?.[0]?.deviationid).not.toBe(added.body.deviationid);
      const msg = await post({ kind: "new_message", type: "comment" });
      const feed = await call(sim, "/messages/feed", at);
      expect(feed.body.results?.[0]?.messageid).toBe(msg.body.messageid);
      const note = await post({ kind: "new_note", subject: "Ping" });
      expect((await call(sim, "/notes?folderid=1&limit=1", at)).body.results?.[0]?.noteid).toBe(note.body.noteid);
      const victim = [...sim.truth.users.values()].find((u) => u.userid !== sim.truth.ownerId);
      await post({ kind: "deactivate_user", username: victim?.username });
      const profile = await call(sim, `/user/profile/${victim?.username}`, at);
      expect(profile.status).toBe(400);
      expect(profile.body.error_description).toBe("Account is inactive.");
      expect((await post({ kind: "nonsense" })).status).toBe(400);
    });
  });

  describe("determinism", () => {
    it("builds the same truth from the same seed and a different one from another", async () => {
      const a = await startSimulator({ seed: 123, dataset: { deviations: 300 } });
      const b = await startSimulator({ seed: 123, dataset: { deviations: 300 } });
      const c = await startSimulator({ seed: 124, dataset: { deviations: 300 } });
      const shape = (s: Simulator) =>
        JSON.stringify({
          deviations: [...s.truth.deviations.values()],
          folders: s.truth.galleryFolders,
          collections: s.truth.collectionFolders,
          notes: s.truth.notes,
          messages: s.truth.messages,
          users: [...s.truth.users.values()],
          comments: s.truth.comments,
        });
      expect(shape(a)).toBe(shape(b));
      expect(shape(a)).not.toBe(shape(c));
      await Promise.all([a.close(), b.close(), c.close()]);
    });

    it("starts the default dataset fast and 5 000 deviations in 25 folders quickly", async () => {
      let t0 = performance.now();
      const small = await startSimulator();
      expect(performance.now() - t0).toBeLessThan(1000);
      t0 = performance.now();
      const big = await startSimulator({ dataset: { deviations: 5000, galleryFolders: 26 } });
      expect(performance.now() - t0).toBeLessThan(3000);
      const at = big.issueUserToken().access_token;
      const folders = await call(big, "/gallery/folders?limit=50", at);
      expect(folders.body.results?.length).toBe(26);
      await Promise.all([small.close(), big.close()]);
    });
  });
});
