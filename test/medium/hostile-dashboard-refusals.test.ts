// Hostile tier, issue 27 row 17: every answer of the dashboard carries a Content-Security-Policy (the feeds,
// /metrics, /healthz, /api/activity and the 401 page had none), every route the app has is asked (read from its
// router, so a route added later is asked too), and every refusal says what it is, never "unexpected error" nor
// "something failed": a wrong token, a foreign Host, a method the path does not take, a form too big, a port or
// an address the dashboard cannot listen on. And `dvault verify` on an archive whose thumbnails folder is a
// link out of it reports the link and goes on, where it aborted.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.ts";
import { createDashboardApp, type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { type RawAnswer, rawRequest } from "../helpers/dashboard-request.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const TOKEN = "refusals-token-0123456789abcdef";
/** What no refusal may say: the CLI's word for a bug, the dashboard's page for one. */
const UNEXPECTED = /unexpected error|Something failed/i;

let h: SyncHarness;
let dash: RunningDashboard;
let archiveDir: string;
let routes: Array<{ method: string; path: string }>;

type Answer = RawAnswer;

function send(
  target: string,
  { method = "GET", headers = {}, body }: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return rawRequest(`${dash.url}${target}`, { method, headers: { host: `127.0.0.1:${dash.port}`, ...headers }, ...(body !== undefined ? { body } : {}) });
}

/** A concrete path for a route's pattern: each parameter given a value of the shape it expects. */
function concrete(pattern: string): string {
  return pattern.replace(/:(\w+)/g, (_, name: string) => ({ token: "dvf_notatoken", variant: "s", file: `${"a".repeat(64)}.webp`, id: "1" })[name] ?? "x");
}

beforeAll(async () => {
  archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-refusals-"));
  h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
  await h.pool.query("INSERT INTO deviations (deviationid, raw) VALUES ('refusals-1', '{}')");
  await archiveFile(h.pool, archiveDir, "refusals-1", artworkPng(3, 8, 8));
  const config = { ...h.services.config, archiveDir };
  const { app, close } = createDashboardApp({ ...h.services, config });
  const stack = (app.router as unknown as { stack: Array<{ route?: { path: unknown; methods: Record<string, boolean> } }> }).stack;
  routes = stack.flatMap((l) =>
    l.route && typeof l.route.path === "string"
      ? Object.keys(l.route.methods)
          .filter((m) => m !== "_all")
          .map((m) => ({ method: m.toUpperCase(), path: concrete(l.route!.path as string) }))
      : [],
  );
  await close();
  dash = await startDashboard({ ...h.services, config }, { host: "127.0.0.1", port: 0, token: TOKEN });
}, 60_000);

afterAll(async () => {
  await dash?.close();
  await h?.close();
  if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
});

describe("the dashboard's answers", () => {
  it("carry a Content-Security-Policy on every route, with the token and without", async () => {
    expect(routes.length).toBeGreaterThan(15);
    expect(routes.map((r) => r.path)).toEqual(expect.arrayContaining(["/metrics", "/healthz", "/api/activity", "/feeds/dvf_notatoken/arrivals.atom"]));
    const asked = [...routes, { method: "GET", path: "/queues" }, { method: "GET", path: "/feeds/dvf_x/anything" }, { method: "GET", path: "/nowhere" }];
    const answers = await Promise.all(
      asked.flatMap((r) =>
        ([{ authorization: `Bearer ${TOKEN}` }, { accept: "text/html" }] as Array<Record<string, string>>).map(async (headers) => ({
          r,
          headers,
          a: await send(r.path, { method: r.method, headers }),
        })),
      ),
    );
    const without = answers.filter(({ a }) => !/default-src 'none'|default-src 'self'/.test(String(a.headers["content-security-policy"])));
    expect(without.map(({ r, a }) => `${r.method} ${r.path} → ${a.status}`)).toEqual([]);
    expect(answers.filter(({ a }) => a.status >= 500 && a.status !== 503).map(({ r, a }) => `${r.method} ${r.path} → ${a.status}`)).toEqual([]);
    // The answers that are not pages let nothing load, run or frame them.
    for (const path of ["/metrics", "/healthz", "/api/activity"]) {
      const a = answers.find(({ r, headers }) => r.path === path && "authorization" in headers)!.a;
      expect(a.headers["content-security-policy"], path).toBe("default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    }
  });

  it("say what each refusal is", async () => {
    const bearer = { authorization: `Bearer ${TOKEN}` };
    const cases: Array<[string, Promise<Answer>, number, RegExp]> = [
      ["no token, a browser", send("/archive", { headers: { accept: "text/html" } }), 401, /Token required/],
      ["no token, a script", send("/archive", { headers: { accept: "text/plain" } }), 401, /^dvault: this dashboard needs DVAULT_HTTP_TOKEN/],
      ["a wrong token", send("/login?token=wrong-token-0123456789"), 401, /Wrong token/],
      ["a foreign Host", send("/archive", { headers: { host: "evil.example" } }), 421, /^dvault: this dashboard does not answer for that host name/],
      ["a NUL in the address", send("/item/%00", { headers: bearer }), 400, /^dvault: the address holds a character dvault does not accept/],
      [
        "a cross-site write",
        send("/actions/sync", { method: "POST", headers: { ...bearer, origin: "https://evil.example" } }),
        403,
        /^dvault: cross-site request refused/,
      ],
      ["a write without its CSRF token", send("/actions/sync", { method: "POST", headers: bearer }), 403, /^dvault: missing or invalid CSRF token/],
      [
        "a method the page does not take",
        send("/archive", { method: "PUT", headers: bearer }),
        405,
        /^dvault: PUT is not allowed on \/archive \(it takes GET, HEAD\)/,
      ],
      ["a GET of a form's target", send("/jobs/retry", { headers: bearer }), 405, /^dvault: GET is not allowed on \/jobs\/retry \(it takes POST\)/],
      ["a page that does not exist", send("/nowhere", { headers: bearer }), 404, /There is no such page/],
      ["a wrong feed token", send("/feeds/dvf_notatoken/arrivals.atom"), 404, /^not found/],
      ["a file not in the archive", send("/files/999999", { headers: bearer }), 404, /^not in the archive/],
    ];
    for (const [what, answer, status, says] of cases) {
      const a = await answer;
      expect(a.status, what).toBe(status);
      expect(a.text, what).toMatch(says);
      expect(a.text, what).not.toMatch(UNEXPECTED);
      expect(a.headers["content-security-policy"], what).toBeDefined();
    }
    expect((await send("/archive", { method: "PUT", headers: bearer })).headers.allow).toBe("GET, HEAD");
  });
});

describe("the dashboard's start", () => {
  it("refuses a port or an address it cannot listen on in one line that says what to do", async () => {
    const refusal = (options: { host?: string; port?: number }) =>
      startDashboard(h.services, { token: TOKEN, ...options }).then(
        async (d) => {
          await d.close();
          return "started";
        },
        (err: unknown) => err,
      );
    const taken = await refusal({ host: "127.0.0.1", port: dash.port });
    expect(taken).toBeInstanceOf(UserError);
    expect((taken as Error).message).toMatch(/the port is in use \(choose another with --http-port\)$/);
    const foreign = await refusal({ host: "192.0.2.1", port: 0 });
    expect(foreign).toBeInstanceOf(UserError);
    expect((foreign as Error).message).toMatch(/no interface of this machine has that address/);
    const port = await refusal({ host: "127.0.0.1", port: 70000 });
    expect(port).toBeInstanceOf(UserError);
    expect((port as Error).message).toMatch(/give a port from 0 to 65535/);

    const cli = await runDvault({ redis: h.redis, env: { DATABASE_URL: h.db.url, LOG_LEVEL: "silent" } }, ["worker", "--http", "--http-port", "99999"]);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toMatch(/option '--http-port <port>' argument '99999' is invalid\. expects a port from 0 to 65535/);
    expect(cli.stderr).not.toMatch(UNEXPECTED);
  });
});

describe("dvault verify", () => {
  it("reports a thumbnails folder (or originals/) that is a link out of the archive, and goes on", async () => {
    const outside = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-refusals-outside-"));
    await fs.symlink(outside, path.join(archiveDir, "thumbnails"));
    try {
      const env = { DATABASE_URL: h.db.url, DVAULT_REDIS_PREFIX: h.services.config.redisPrefix, DVAULT_ARCHIVE_DIR: archiveDir, LOG_LEVEL: "silent" };
      const run = await runDvault({ redis: h.redis, env }, ["verify"]);
      expect(run.stderr).not.toMatch(UNEXPECTED);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^ok {8}1$/m);
      expect(run.stdout).toMatch(/^ {2}1 path\(s\) lead out of the archive through a link, not followed \(remove the link; the check went on\):$/m);
      expect(run.stdout).toMatch(/^ {2}outside {4}thumbnails\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}-\d+\.s\.webp$/m);
      expect(await fs.readdir(outside)).toEqual([]);

      // originals/ itself a link out: the files behind it unreadable (exit 3), the thumbnails' look says why.
      await fs.rm(path.join(archiveDir, "thumbnails"));
      await fs.rename(path.join(archiveDir, "originals"), path.join(outside, "originals"));
      await fs.symlink(path.join(outside, "originals"), path.join(archiveDir, "originals"));
      const linked = await runDvault({ redis: h.redis, env }, ["verify"]);
      expect(linked.stderr).not.toMatch(UNEXPECTED);
      expect(linked.code).toBe(3);
      expect(linked.stdout).toMatch(/^ {2}outside {4}originals$/m);
      await fs.rm(path.join(archiveDir, "originals"));
      await fs.rename(path.join(outside, "originals"), path.join(archiveDir, "originals"));
    } finally {
      await fs.rm(path.join(archiveDir, "thumbnails"), { force: true });
      if ((await fs.lstat(path.join(archiveDir, "originals"))).isSymbolicLink()) {
        await fs.rm(path.join(archiveDir, "originals"));
        await fs.rename(path.join(outside, "originals"), path.join(archiveDir, "originals"));
      }
      await fs.rm(outside, { recursive: true, force: true });
    }
  });
});
