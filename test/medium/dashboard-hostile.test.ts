// The dashboard against hostile requests, over real sockets with the Host header set by hand: a DNS-rebinding
// page's foreign Host gets 421 on every route (token or not) while the names it answers for work; a foreign
// Origin changes nothing; a write reaches bull-board's API only from the dashboard's own pages (or with the
// bearer token), and bull-board, read-only, refuses it; NUL and undecodable addresses get a plain 400; and an error inside a handler shows no internal text.
import http from "node:http";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHostGuard, hostName } from "../../src/http/host-guard.ts";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { createLogger } from "../../src/log.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const PUBLIC_URL = "https://archive.example.org";
const ALLOWED = "nas.local";
const TOKEN = "hostile-token-0123456789abcdef";
const REFUSED_HOST =
  /^dvault: this dashboard does not answer for that host name; add it to DVAULT_HTTP_ALLOWED_HOSTS \(or set DVAULT_PUBLIC_URL\) to use it\n$/;
const MALFORMED = "dvault: the address holds a character dvault does not accept (NUL or invalid UTF-8)\n";
/** What must never reach a page: PostgreSQL's words, a URIError, a stack frame. */
const INTERNALS = /postgres|invalid byte sequence|0x00|relation|does not exist|URIError|decode param|\bat [\w.]+ \(|node_modules/i;

let h: SyncHarness;
let dash: RunningDashboard;
let admin: QueueAdmin;

type Answer = { status: number; headers: http.IncomingHttpHeaders; text: string };
type Send = { method?: string; host?: string | null; headers?: Record<string, string>; body?: string };

/** One request to the dashboard on 127.0.0.1 with the Host given (null: none at all); fetch cannot set Host. */
function send(port: number, target: string, { method = "GET", host, headers = {}, body }: Send = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port,
        path: target,
        method,
        agent: false,
        setHost: false,
        headers: {
          ...(host === null ? {} : { host: host ?? `127.0.0.1:${port}` }),
          ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A CSRF token and its cookie, read through an allowed Host as the dashboard's own page would. */
async function csrfSession(port: number): Promise<{ cookie: string; csrf: string }> {
  const jobs = await send(port, "/jobs");
  const cookie = String(jobs.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(jobs.text)![1]!;
  return { cookie, csrf };
}

beforeAll(async () => {
  h = await createSyncHarness({ sim: { seed: 3, dataset: { deviations: 4, notes: 0, messages: 0, favourites: 0 } } });
  admin = new QueueAdmin(h.services.queues);
  const config = { ...h.services.config, publicUrl: PUBLIC_URL, httpAllowedHosts: [ALLOWED] };
  dash = await startDashboard({ ...h.services, config }, { host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await dash?.close();
  await admin?.close();
  await h?.close();
});

describe("the Host check", () => {
  const routes: Array<[method: string, target: string]> = [
    ["GET", "/"],
    ["GET", "/archive"],
    ["GET", "/item/x"],
    ["GET", "/files/1"],
    ["GET", "/jobs"],
    ["POST", "/jobs/pause"],
    ["GET", "/queues"],
    ["GET", "/queues/api/queues"],
    ["PUT", "/queues/api/queues/digest/pause"],
    ["GET", "/healthz"],
    ["GET", "/metrics"],
    ["GET", `/login?token=${TOKEN}`],
  ];

  it("refuses a foreign or missing Host with 421 on every route, before any handler", async () => {
    const evil = `evil.example:${dash.port}`;
    for (const [method, target] of routes) {
      const res = await send(dash.port, target, { method, host: evil, headers: FORM, body: method === "GET" ? undefined : "queue=digest" });
      expect(res.status, `${method} ${target}`).toBe(421);
      expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      expect(res.text).toMatch(REFUSED_HOST);
    }
    for (const host of [
      null,
      "",
      "127.0.0.1.evil.example",
      "localhost.evil.example:80",
      "archive.example.org.evil.example",
      "evil.example@127.0.0.1",
      "127.0.0.1 evil",
      "[::2]:1",
    ]) {
      expect((await send(dash.port, "/", { host })).status, String(host)).toBe(421);
    }
    expect(await admin.queue("digest").isPaused()).toBe(false);
  });

  it("answers for loopback names, the public URL's host and DVAULT_HTTP_ALLOWED_HOSTS, any case, any port", async () => {
    const p = dash.port;
    for (const host of [
      `127.0.0.1:${p}`,
      "127.0.0.1",
      `localhost:${p}`,
      `LocalHost:${p}`,
      `127.3.2.1:${p}`,
      `[::1]:${p}`,
      "archive.example.org",
      "Archive.Example.ORG:443",
      `nas.local:${p}`,
      "NAS.local.",
    ]) {
      const res = await send(p, "/", { host });
      expect(res.status, host).toBe(200);
    }
    expect((await send(p, "/healthz", { host: "archive.example.org" })).status).not.toBe(421);
  });

  it("holds with a token on every interface: the token opens nothing for a foreign Host; this machine's addresses work", async () => {
    const guarded = await startDashboard(
      { ...h.services, config: { ...h.services.config, publicUrl: undefined, httpAllowedHosts: [] } },
      { host: "0.0.0.0", port: 0, token: TOKEN },
    );
    const auth = { authorization: `Bearer ${TOKEN}` };
    try {
      const refused = await send(guarded.port, "/", { host: "evil.example", headers: auth });
      expect(refused.status).toBe(421);
      expect(refused.text).toMatch(REFUSED_HOST);
      expect((await send(guarded.port, `/login?token=${TOKEN}`, { host: "evil.example" })).status).toBe(421);
      expect((await send(guarded.port, "/", { host: `127.0.0.1:${guarded.port}`, headers: auth })).status).toBe(200);
      const own = Object.values(os.networkInterfaces())
        .flatMap((list) => list ?? [])
        .filter((a) => !a.internal)
        .map((a) => (a.family === "IPv6" ? `[${a.address}]` : a.address));
      for (const address of own) expect((await send(guarded.port, "/", { host: `${address}:${guarded.port}`, headers: auth })).status, address).toBe(200);
      const stranger = ["192.0.2.77", "198.51.100.77", "203.0.113.77"].find((a) => !own.includes(a))!;
      expect((await send(guarded.port, "/", { host: stranger, headers: auth })).status).toBe(421);
    } finally {
      await guarded.close();
    }
  });

  it("normalises names the way it compares them", () => {
    expect(hostName("[::1]:8787")).toBe("::1");
    expect(hostName("[0:0:0:0:0:0:0:1]")).toBe("::1");
    expect(hostName("Archive.Example.Org.:443")).toBe("archive.example.org");
    for (const bad of ["a b", "a@b", "a/b", "[evil]", "", undefined]) expect(hostName(bad)).toBeUndefined();
    const bound = createHostGuard({ bindHost: "192.168.7.9", allowedHosts: ["[FD00::1]"], log: createLogger({ level: "silent" }) });
    expect(bound.allows("192.168.7.9:8787")).toBe(true);
    expect(bound.allows("[fd00::1]:8787")).toBe(true);
    expect(bound.allows("192.168.7.10")).toBe(false);
  });
});

describe("the Origin check", () => {
  it("refuses a POST with a foreign Origin before its handler: the queue stays running", async () => {
    const p = dash.port;
    const { cookie, csrf } = await csrfSession(p);
    const body = new URLSearchParams({ queue: "digest", _csrf: csrf }).toString();
    for (const origin of [`http://evil.example:${p}`, "http://localhost:3000", "null", `https://archive.example.org.evil.example`]) {
      const res = await send(p, "/jobs/pause", { method: "POST", headers: { ...FORM, cookie, origin }, body });
      expect(res.status, origin).toBe(403);
      expect(res.text).toBe("dvault: cross-site request refused\n");
    }
    expect(await admin.queue("digest").isPaused()).toBe(false);

    // Behind a proxy that rewrites Host, the page's origin is DVAULT_PUBLIC_URL's.
    const viaProxy = await send(p, "/jobs/pause", { method: "POST", headers: { ...FORM, cookie, origin: PUBLIC_URL, "sec-fetch-site": "same-origin" }, body });
    expect(viaProxy.status).toBe(303);
    expect(await admin.queue("digest").isPaused()).toBe(true);
    await admin.resume("digest");
  });

  it("lets a write reach bull-board only from the dashboard's own pages, or with the bearer token, and bull-board refuses it: read-only", async () => {
    const p = dash.port;
    const pause = (headers: Record<string, string>, target = "/queues/api/queues/digest/pause") => send(p, target, { method: "PUT", headers });
    const refused: Array<Record<string, string>> = [
      {},
      { origin: `http://evil.example:${p}` },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "none" },
    ];
    for (const headers of refused) {
      const res = await pause(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(res.text).toMatch(/^dvault: (cross-site request refused|bull-board changes queues only from the dashboard's own pages)\n$/);
    }
    expect((await pause({}, "/QUEUES/api/queues/digest/pause")).status).toBe(403);
    expect(await admin.queue("digest").isPaused()).toBe(false);

    // From the dashboard's own pages the write passes this lock and reaches bull-board, which is read-only:
    // 405 and nothing changes (pausing is the /jobs page's, through QueueAdmin).
    const sameOrigin = await pause({ origin: `http://127.0.0.1:${p}` });
    expect(sameOrigin.status).toBe(405);
    expect(sameOrigin.text).toContain("QUEUE_READ_ONLY");
    expect(await admin.queue("digest").isPaused()).toBe(false);
    await admin.pause("digest");
    expect((await send(p, "/queues/api/queues/digest/resume", { method: "PUT", headers: { "sec-fetch-site": "same-origin" } })).status).toBe(405);
    expect(await admin.queue("digest").isPaused()).toBe(true);
    await admin.resume("digest");

    const guarded = await startDashboard(h.services, { host: "127.0.0.1", port: 0, token: TOKEN });
    try {
      const login = await send(guarded.port, `/login?token=${TOKEN}`);
      const cookie = String(login.headers["set-cookie"]?.[0] ?? "").split(";")[0]!;
      const viaCookie = await send(guarded.port, "/queues/api/queues/digest/pause", { method: "PUT", headers: { cookie } });
      expect(viaCookie.status).toBe(403);
      expect(viaCookie.text).toBe("dvault: bull-board changes queues only from the dashboard's own pages or with Authorization: Bearer <DVAULT_HTTP_TOKEN>\n");
      expect(await admin.queue("digest").isPaused()).toBe(false);
      const withToken = await send(guarded.port, "/queues/api/queues/digest/pause", { method: "PUT", headers: { authorization: `Bearer ${TOKEN}` } });
      expect(withToken.status).toBe(405);
      expect(withToken.text).toContain("QUEUE_READ_ONLY");
      expect(await admin.queue("digest").isPaused()).toBe(false);
    } finally {
      await admin.resume("digest");
      await guarded.close();
    }
  });
});

describe("malformed requests", () => {
  it("answer NUL and undecodable addresses with a plain 400, without PostgreSQL's words", async () => {
    for (const target of [
      "/item/%00",
      "/archive?artist=%00",
      "/archive?q=%00",
      "/item/%E0%A4%A",
      "/archive?q=%FF",
      "/files/%C0%80",
      "/jobs?queue=%00",
      "/queues/queue/%00",
      "/archive?%00=1",
    ]) {
      const res = await send(dash.port, target);
      expect(res.status, target).toBe(400);
      expect(res.headers["content-type"]).toMatch(/^text\/plain/);
      expect(res.text).toBe(MALFORMED);
    }
  });

  it("take the first of repeated parameters and a default for a page that is not a number", async () => {
    for (const target of [
      "/archive?artist=a&artist=b",
      "/archive?page=abc",
      "/archive?page=-3&page=x",
      "/archive?q=a&q=b&type=nonsense",
      "/jobs?queue=nope&queue=sync",
      "/archive?folder=%27%3B--",
    ]) {
      const res = await send(dash.port, target);
      expect(res.status, target).toBe(200);
      expect(res.text).not.toMatch(INTERNALS);
    }
  });

  it("answer an unreadable form body with a plain status and what it is, no parser text", async () => {
    const { cookie, csrf } = await csrfSession(dash.port);
    const body = new URLSearchParams([["_csrf", csrf], ...Array.from({ length: 30 }, (_, i): [string, string] => [`k${i}`, "v"])]).toString();
    const res = await send(dash.port, "/jobs/pause", { method: "POST", headers: { ...FORM, cookie }, body });
    expect(res.status).toBe(413);
    expect(res.text).toBe("dvault: the request was refused (HTTP 413 Payload Too Large): the form has more fields than dvault accepts\n");
  });

  it("show no internal message for an error inside a handler; the log has it", async () => {
    await h.pool.query("ALTER TABLE downloads RENAME TO downloads_hidden");
    try {
      const res = await send(dash.port, "/files/1");
      expect(res.status).toBe(500);
      expect(res.text).toContain("Something failed; the worker&#39;s log has the details.");
      expect(res.text).not.toMatch(INTERNALS);
    } finally {
      await h.pool.query("ALTER TABLE downloads_hidden RENAME TO downloads");
    }
  });
});
