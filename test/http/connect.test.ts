// The dashboard's "Connect DeviantArt" over real sockets, without a browser (test/browser/connect.test.ts walks
// it in chromium): the first-run page, the POST that needs its CSRF token and sends the browser to the service
// with PKCE and a state, the callback that stores the grant once and queues the account's first sync; and the
// refusals, each a 400 page that says what happened: a replayed answer, a wrong state, another browser's
// answer, a declined approval, an old code under a fresh state. The simulator whitelists redirect URIs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard } from "../../src/http/server.ts";
import { DEFAULT_CLIENTS } from "../../src/simulator/options.ts";
import { type ConnectFixture, createConnectFixture } from "../helpers/connect-fixture.ts";

let f: ConnectFixture;

/** One browser's cookie jar, enough for the dashboard's cookies. */
class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const i = pair!.indexOf("=");
      const value = pair!.slice(i + 1);
      if (/max-age=0/i.test(line) || value === "") this.cookies.delete(pair!.slice(0, i));
      else this.cookies.set(pair!.slice(0, i), value);
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
  has(name: string): boolean {
    return this.cookies.has(name);
  }
}

async function get(url: string, jar: Jar): Promise<{ res: Response; text: string }> {
  const res = await fetch(url, { redirect: "manual", headers: { cookie: jar.header() } });
  jar.take(res);
  return { res, text: await res.text() };
}

/** GET the Connect page (`/connect`, or its reconnect link), then POST its form: the service's authorize URL. */
async function startConnect(jar: Jar, path = "/connect"): Promise<URL> {
  const page = await get(`${f.dash.url}${path}`, jar);
  const form = new URLSearchParams();
  for (const [, name, value] of page.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(name!, value!);
  expect(form.get("_csrf"), "the Connect form carries a CSRF token").toBeTruthy();
  const res = await fetch(`${f.dash.url}/connect`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin: f.dash.url },
    body: form.toString(),
  });
  jar.take(res);
  expect(res.status).toBe(303);
  return new URL(res.headers.get("location")!);
}

/** The service's answer (the simulator approves at once): the callback URL with code and state. */
async function approve(authorize: URL): Promise<URL> {
  const res = await fetch(authorize, { redirect: "manual" });
  expect(res.status).toBe(302);
  return new URL(res.headers.get("location")!);
}

const accounts = async () => (await f.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM accounts")).rows[0]!.n;

describe("Connect DeviantArt from the dashboard", () => {
  beforeAll(async () => {
    f = await createConnectFixture();
  }, 60_000);
  afterAll(async () => {
    await f?.close();
  });

  it("shows the first-run page with the callback to register and the settings to set", async () => {
    await f.services.pool.query("TRUNCATE accounts CASCADE");
    const overview = await get(`${f.dash.url}/`, new Jar());
    expect(overview.text).toContain('<a href="/connect">Connect DeviantArt</a>');
    const { res, text } = await get(`${f.dash.url}/connect`, new Jar());
    expect(res.status).toBe(200);
    expect(text).toContain("No account is connected yet");
    expect(text).toContain(`<code class="fix" id="callback-url">${f.callbackUrl}</code>`);
    expect(text).toContain("DVAULT_PUBLIC_URL is not set");
    expect(text).toMatch(/DVAULT_CLIENT_ID<\/code> \(the application's client_id\) — set/);
    expect(text).toContain("DVAULT_CLIENT_SECRET");
  });

  it("says which setting is missing before there is anything to connect, and takes the callback from DVAULT_PUBLIC_URL", async () => {
    const config = { ...f.services.config, clientId: undefined, publicUrl: "https://archive.example.org" };
    const bare = await startDashboard({ ...f.services, config }, { host: "127.0.0.1", port: 0 });
    try {
      const { res, text } = await get(`${bare.url}/connect`, new Jar());
      expect(res.status).toBe(200);
      expect(text).toContain('<code class="fix" id="callback-url">https://archive.example.org/oauth/callback</code>');
      expect(text).toContain("From DVAULT_PUBLIC_URL.");
      expect(text).toMatch(/DVAULT_CLIENT_ID<\/code> \(the application's client_id\) — not set/);
      expect(text).toContain("Set DVAULT_CLIENT_ID first");
      // Where to set them: the settings file comes first now (README "Configuration"), the environment still works.
      expect(text).toContain("in the worker's settings file (<code>.env</code> in the folder it runs in");
      expect(text).not.toContain('action="/connect"');
    } finally {
      await bare.close();
    }
  });

  it("refuses to start without the CSRF token", async () => {
    const res = await fetch(`${f.dash.url}/connect`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: f.dash.url },
      body: "",
    });
    expect(res.status).toBe(403);
  });

  it("connects through the dashboard's callback once, stores the grant and queues the first sync; a replay is refused", async () => {
    // The sync jobs read below are this connection's: another test of this file (in any order) may have queued some.
    await f.admin.queue("sync").obliterate({ force: true });
    const jar = new Jar();
    const authorize = await startConnect(jar);
    expect(jar.has("dvault_connect"), "the flow is bound to this browser").toBe(true);
    expect(authorize.searchParams.get("redirect_uri")).toBe(f.callbackUrl);
    expect(authorize.searchParams.get("code_challenge_method")).toBe("S256");
    expect(authorize.searchParams.get("state")).toMatch(/^[\w-]{32}$/);
    const callback = await approve(authorize);
    expect(`${callback.origin}${callback.pathname}`).toBe(f.callbackUrl);

    const done = await get(callback.toString(), jar);
    expect(done.res.status).toBe(303);
    const notice = new URL(done.res.headers.get("location")!, f.dash.url).searchParams.get("done") ?? "";
    const owner = f.sim.truth.users.get(f.sim.truth.ownerId)!.username;
    expect(notice).toMatch(new RegExp(`^Connected ${owner} as account "${owner}" with scopes basic browse .*First sync queued: \\d+ source runs\\.`));
    expect(await accounts()).toBe(1);
    const { rows } = await f.services.pool.query<{ id: number }>("SELECT id FROM accounts");
    const waiting = await f.admin.queue("sync").getWaiting();
    expect(waiting.length).toBeGreaterThan(0);
    expect(waiting.every((j) => (j.data as { accountId: number }).accountId === rows[0]!.id)).toBe(true);

    const landed = await get(new URL(done.res.headers.get("location")!, f.dash.url).toString(), jar);
    expect(landed.text).toContain(`role="status">Connected ${owner} as account`);
    // A link from elsewhere cannot put its words there: only a line the dashboard signed is shown.
    const lure = encodeURIComponent("Your grant expired: sign in again at https://evil.example");
    for (const p of [`/?done=${lure}`, `/?done=${lure}&sig=x`, `/jobs?done=${lure}`])
      expect((await get(`${f.dash.url}${p}`, jar)).text, p).not.toContain("evil.example");

    const overview = await get(`${f.dash.url}/`, jar);
    expect(overview.text).toContain(owner);
    expect(overview.text).toMatch(/running: sync 0 active, \d+ waiting/);

    // The same answer again (the back button, a copied address): the code is not sent twice, nothing is stored twice.
    const exchanges = f.sim.log().filter((e) => e.route.includes("/oauth2/token")).length;
    const again = await get(callback.toString(), jar);
    expect(again.res.status).toBe(400);
    expect(again.text).toContain("This sign-in was already used");
    expect(f.sim.log().filter((e) => e.route.includes("/oauth2/token")).length).toBe(exchanges);
    expect(await accounts()).toBe(1);
  });

  it("refuses a wrong state, another browser's answer, a declined approval and an old code, each with a page that says so", async () => {
    const jar = new Jar();
    const callback = await approve(await startConnect(jar));

    const forged = new URL(callback);
    forged.searchParams.set("state", "not-a-state-this-dashboard-issued");
    const wrong = await get(forged.toString(), jar);
    expect(wrong.res.status).toBe(400);
    expect(wrong.text).toContain("This sign-in was not started here");
    expect(wrong.text).toContain("Start again with Connect");

    const elsewhere = await get(callback.toString(), new Jar());
    expect(elsewhere.res.status).toBe(400);
    expect(elsewhere.text).toContain("This sign-in was started in another browser");

    const denyJar = new Jar();
    const deny = new URL(await startConnect(denyJar));
    deny.searchParams.set("sim_decision", "deny");
    const declined = await get((await approve(deny)).toString(), denyJar);
    expect(declined.res.status).toBe(400);
    expect(declined.text).toContain("Access was declined");
    expect(declined.text).toContain("access_denied");
    expect(declined.text).toContain("press Connect on the dashboard&#39;s Connect page again");

    // An old code under a state this browser was just given: the service refuses the code, the page says so.
    const usedJar = new Jar();
    const first = await approve(await startConnect(usedJar));
    expect((await get(first.toString(), usedJar)).res.status).toBe(303);
    const fresh = await approve(await startConnect(usedJar));
    fresh.searchParams.set("code", first.searchParams.get("code")!);
    const replayed = await get(fresh.toString(), usedJar);
    expect(replayed.res.status).toBe(400);
    expect(replayed.text).toContain("The service refused the code");
    expect(await accounts()).toBe(1);
  });

  it("offers a dead grant's reconnection from the overview and gives the same account a working grant", async () => {
    const jar = new Jar();
    expect((await get((await approve(await startConnect(jar))).toString(), jar)).res.status).toBe(303);
    const { rows } = await f.services.pool.query<{ id: number; name: string }>("SELECT id, name FROM accounts");
    const row = rows[0]!;
    await f.services.accounts.markNeedsReauth({ id: row.id, reason: "the service refused the refresh token", now: new Date() });
    const overview = await get(`${f.dash.url}/`, jar);
    expect(overview.text).toContain(`<a href="/connect?account=${encodeURIComponent(row.name)}">reconnect in the browser</a>`);
    const reconnect = `/connect?account=${encodeURIComponent(row.name)}`;
    const page = await get(`${f.dash.url}${reconnect}`, jar);
    expect(page.text).toContain(`Reconnect ${row.name}`);
    expect(page.text).toContain(`<input type="hidden" name="account" value="${row.name}">`);

    expect((await get((await approve(await startConnect(jar, reconnect))).toString(), jar)).res.status).toBe(303);
    const after = await f.services.pool.query<{ id: number; state: string }>("SELECT id, state FROM accounts");
    expect(after.rows).toEqual([{ id: row.id, state: "ok" }]);
  });

  it("the simulator's applications whitelist the dashboard's default callback, and refuse one not registered", async () => {
    for (const c of DEFAULT_CLIENTS) expect(c.redirectUris).toContain("http://127.0.0.1:8787/oauth/callback");
    const authorize = await startConnect(new Jar());
    authorize.searchParams.set("redirect_uri", "http://127.0.0.1:9/oauth/callback");
    const res = await fetch(authorize, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("not whitelisted");
  });
});
