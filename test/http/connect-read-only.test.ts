// "Connect DeviantArt" from the dashboard while the database refuses writes (a standby after a fail-over,
// default_transaction_read_only): the authorization code is single-use, so it is not exchanged when the grant could
// not be stored; the page says why, and a Connect once the database takes writes again works.
import { afterAll, beforeAll, expect, it } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { type ConnectFixture, createConnectFixture } from "../helpers/connect-fixture.ts";
import { TEST_PG_URL } from "../helpers/env.ts";

let f: ConnectFixture;

/** One browser's cookies, enough for the dashboard's. */
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
}

async function get(url: string, jar: Jar): Promise<{ res: Response; text: string }> {
  const res = await fetch(url, { redirect: "manual", headers: { cookie: jar.header() } });
  jar.take(res);
  return { res, text: await res.text() };
}

/** The Connect form posted, the simulator's approval followed: the callback address with code and state. */
async function approvedCallback(jar: Jar): Promise<string> {
  const page = await get(`${f.dash.url}/connect`, jar);
  const form = new URLSearchParams();
  for (const [, name, value] of page.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(name!, value!);
  const res = await fetch(`${f.dash.url}/connect`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: jar.header(), "content-type": "application/x-www-form-urlencoded", origin: f.dash.url },
    body: form.toString(),
  });
  jar.take(res);
  expect(res.status).toBe(303);
  const approved = await fetch(res.headers.get("location")!, { redirect: "manual" });
  expect(approved.status).toBe(302);
  return approved.headers.get("location")!;
}

/** Every new session of the test's database read-only (or not), and the pool's open ones ended so it opens new ones. */
async function setReadOnly(on: boolean): Promise<void> {
  const admin = await connectPg(TEST_PG_URL);
  try {
    await admin.query(`ALTER DATABASE ${quoteIdent(f.db.name)} ${on ? "SET default_transaction_read_only = on" : "RESET default_transaction_read_only"}`);
    await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [f.db.name]);
  } finally {
    await admin.end();
  }
  // The pool drops the ended connections as it notices them.
  await new Promise((r) => setTimeout(r, 300));
}

const tokenRequests = () => f.sim.log().filter((e) => e.route.includes("/oauth2/token")).length;

beforeAll(async () => {
  f = await createConnectFixture();
}, 60_000);
afterAll(async () => {
  await f?.close();
});

it("does not exchange the code while the database refuses writes, says so, and connects once it takes them", async () => {
  const jar = new Jar();
  const callback = await approvedCallback(jar);
  const before = tokenRequests();
  await setReadOnly(true);
  let refused: { res: Response; text: string };
  try {
    refused = await get(callback, jar);
  } finally {
    await setReadOnly(false);
  }
  expect(tokenRequests(), "the code was not sent").toBe(before);
  expect(refused.res.status).toBe(503);
  expect(refused.text).toContain("the database refuses writes");
  expect((await f.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM accounts")).rows[0]!.n).toBe(0);

  const again = await get(await approvedCallback(jar), jar);
  expect(again.res.status, again.text).toBe(303);
  expect((await f.services.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM accounts")).rows[0]!.n).toBe(1);
}, 60_000);
