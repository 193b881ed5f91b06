// The dashboard's theme cookie and /metrics' two answers over real sockets (issue 28): /theme sets or clears
// only a display cookie and goes back to the page it was pressed on (never to another site), behind the
// dashboard's token like every page; each page carries the choice in <html data-theme>; /metrics gives
// Prometheus text to a scraper (no Accept, Prometheus' Accept, curl's */*) and to the page's "raw" link, and
// the metrics page to a browser, whose numbers are the text's.
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { createLogger } from "../../src/log.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const TOKEN = "shell-token-0123456789abcdef";
const PROMETHEUS_ACCEPT =
  "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

let h: SyncHarness;
let dash: RunningDashboard;

function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${dash.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers }, redirect: "manual" });
}

beforeAll(async () => {
  h = await createSyncHarness({ sim: { seed: 3, dataset: { deviations: 3 } } });
  await h.runSource("gallery");
  dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0, token: TOKEN });
});

afterAll(async () => {
  await dash?.close();
  await h?.close();
});

describe("the theme cookie", () => {
  it("is set by /theme?set=dark and sends the browser back to the page it came from", async () => {
    const res = await get("/theme?set=dark", { referer: `${dash.url}/jobs?queue=sync` });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/jobs?queue=sync");
    const cookie = res.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^dvault_theme=dark; /);
    expect(cookie).toMatch(/Max-Age=31536000/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).toMatch(/SameSite=Lax/);
  });

  it("is cleared by /theme?set=system", async () => {
    const res = await get("/theme?set=system", { referer: `${dash.url}/feeds` });
    expect(res.headers.get("location")).toBe("/feeds");
    expect(res.headers.get("set-cookie")).toMatch(/^dvault_theme=; Max-Age=0/);
  });

  it("goes back to the overview from another site's page or none", async () => {
    expect((await get("/theme?set=light", { referer: "https://evil.example/jobs" })).headers.get("location")).toBe("/");
    expect((await get("/theme?set=light")).headers.get("location")).toBe("/");
  });

  it("refuses a theme it does not know in one line", async () => {
    const res = await get("/theme?set=purple");
    expect(res.status).toBe(400);
    expect(await res.text()).toBe("dvault: choose a theme: /theme?set=system, /theme?set=light or /theme?set=dark\n");
  });

  it("stays behind the dashboard's token", async () => {
    const res = await fetch(`${dash.url}/theme?set=dark`, { redirect: "manual" });
    expect(res.status).toBe(401);
    expect(res.headers.get("set-cookie")).toBeNull();
  });

  it("is written into each page's <html data-theme>; none or an unknown one is the system's", async () => {
    const theme = async (cookie?: string) => /<html lang="en" data-theme="(\w+)">/.exec(await (await get("/jobs", cookie ? { cookie } : {})).text())?.[1];
    expect(await theme("dvault_theme=dark")).toBe("dark");
    expect(await theme("dvault_theme=light")).toBe("light");
    expect(await theme()).toBe("system");
    expect(await theme('dvault_theme="><script>')).toBe("system");
  });
});

describe("GET /metrics", () => {
  it("answers a scraper with Prometheus text, whatever it sends", async () => {
    for (const accept of [undefined, PROMETHEUS_ACCEPT, "*/*", "text/plain"]) {
      const res = await get("/metrics", accept ? { accept } : {});
      expect(res.status, String(accept)).toBe(200);
      expect(res.headers.get("content-type"), String(accept)).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(res.headers.get("vary")).toMatch(/Accept/);
      expect(await res.text()).toMatch(/^# HELP /);
    }
  });

  it("answers a browser with the metrics page, and its raw link with the text", async () => {
    const page = await get("/metrics", { accept: BROWSER_ACCEPT });
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
    const body = await page.text();
    expect(body).toContain('href="/metrics?format=text"');
    const raw = await get("/metrics?format=text", { accept: BROWSER_ACCEPT });
    expect(raw.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await raw.text();
    // Each download status the page shows is the text's.
    const shown = [...body.matchAll(/<data value="([^"]*)" data-metric="dvault_downloads" data-series="([^"]*)">/g)].map((m) => [
      m[2]!.replace(/&quot;/g, '"'),
      m[1],
    ]);
    expect(shown.length).toBeGreaterThan(0);
    for (const [series, value] of shown) expect(text).toContain(`dvault_downloads${series} ${value}\n`);
  });
});

describe("the dashboard's start-up line", () => {
  it("says whether the token is required, in a field the log's redaction leaves readable", async () => {
    const seen: string[] = [];
    const log = createLogger({ level: "info", destination: new Writable({ write: (chunk, _enc, done) => done(void seen.push(String(chunk))) }) });
    for (const token of [TOKEN, undefined]) {
      const other = await startDashboard({ ...h.services, log }, { host: "127.0.0.1", port: 0, token });
      await other.close();
    }
    const lines = seen.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === "dashboard listening");
    expect(lines.map((l) => l.access)).toEqual(["DVAULT_HTTP_TOKEN required", "open to whoever reaches it"]);
    expect(seen.join("")).not.toContain(TOKEN);
  });
});
