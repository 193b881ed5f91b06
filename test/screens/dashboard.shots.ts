// `npm run screenshots` (scripts/screenshots.ts runs this file with vitest.screenshots.config.ts; not part of CI):
// the README's pictures of the dashboard, made from the demo's own data. It runs `dvault demo` into a scratch
// folder and database as a newcomer would, opens the dashboard with the command the demo prints (the worker with
// only its http role), and photographs it light, dark, at 360 px and with the lightbox open, into
// DVAULT_SCREENSHOTS_DIR (docs/img). The pictures in the grid are the simulator's (src/simulator/pictures.ts).
// Also writes the README's feed sample (docs/img/feed-sample.xml): the arrivals feed as a reader gets it, cut to
// three entries, its token replaced by a placeholder.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { freePort } from "../../src/free-port.ts";
import { collectRun } from "../helpers/dvault-cli.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "../helpers/chromium.ts";
import { TEST_PG_URL, TEST_REDIS_URL } from "../helpers/env.ts";
import { DVAULT_COMMAND } from "../../src/cli/demo.ts";

const OUT = path.resolve(process.env.DVAULT_SCREENSHOTS_DIR ?? "docs/img");
const BIN = path.resolve("bin/dvault.js");
const DATABASE = "dvault_screenshots";
const PUBLIC_URL = "https://dvault.example.org";
const PLACEHOLDER = "dvf_YOUR-FEED-TOKEN";

let dir: string;
let env: Record<string, string>;
let worker: ChildProcess | undefined;
let base: string;

function dvault(args: string[], extra: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...env, ...extra }, stdio: ["ignore", "pipe", "pipe"] });
  return collectRun(child, Date.now());
}

/** The first `n` entries of a feed's XML, the rest of the document as it was. */
function firstEntries(xml: string, n: number): string {
  const start = xml.indexOf("<entry>");
  let end = start;
  for (let i = 0; i < n; i++) end = xml.indexOf("</entry>", end) + "</entry>".length;
  return `${xml.slice(0, end)}\n</feed>\n`;
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-shots-"));
  env = {
    PATH: process.env.PATH ?? "",
    HOME: path.join(dir, "home"),
    DATABASE_URL: withDatabase(TEST_PG_URL, DATABASE),
    REDIS_URL: TEST_REDIS_URL,
    DVAULT_REDIS_PREFIX: "dvault-screenshots",
  };
  const demo = await dvault(["demo", "--dir", path.join(dir, "demo")]);
  expect(demo.code, demo.stderr).toBe(0);
  // The demo's own command for the dashboard, as it printed it.
  const line = demo.stdout.split("\n").find((l) => l.endsWith(`DVAULT_WORKER_ROLES=http ${DVAULT_COMMAND} worker`)) ?? "";
  env = { ...env, ...Object.fromEntries([...line.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1] ?? "", m[2] ?? ""])), DVAULT_PUBLIC_URL: PUBLIC_URL };
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const w = spawn(process.execPath, [BIN, "worker"], { env: { ...env, DVAULT_HTTP_PORT: String(port) }, stdio: ["ignore", "ignore", "pipe"] });
  worker = w;
  let stderr = "";
  w.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  await vi.waitFor(
    async () => {
      if (w.exitCode !== null) throw new Error(`the dashboard exited: ${stderr}`);
      await fetch(`${base}/healthz`);
    },
    { timeout: 30_000, interval: 200 },
  );
}, 180_000);

afterAll(async () => {
  worker?.kill("SIGTERM");
  const admin = await connectPg(TEST_PG_URL);
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(`${DATABASE}_demo`)} WITH (FORCE)`);
  await admin.end();
  await fs.rm(dir, { recursive: true, force: true });
});

it("writes the feed sample", async () => {
  const made = await dvault(["feeds", "create", "phone", "--json"]);
  expect(made.code, made.stderr).toBe(0);
  const token = /dvf_[A-Za-z0-9_-]+/.exec(made.stdout)?.[0] ?? "";
  const res = await fetch(`${base}/feeds/${token}/arrivals.atom`);
  expect(res.status).toBe(200);
  await fs.mkdir(OUT, { recursive: true });
  await fs.writeFile(
    path.join(OUT, "feed-sample.xml"),
    firstEntries(await res.text(), 3)
      .split(token)
      .join(PLACEHOLDER),
  );
});

it("photographs the dashboard", async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
  try {
    await fs.mkdir(OUT, { recursive: true });
    // The first link of a page that matches `re`: the pages to photograph are found as a person would find them.
    const firstLink = async (route: string, re: RegExp) => {
      const found = re.exec(await (await fetch(`${base}${route}`)).text())?.[1];
      expect(found, `a link on ${route}`).toBeDefined();
      return (found ?? "/").replaceAll("&amp;", "&");
    };
    const item = await firstLink("/archive", /<a class="thumb" href="(\/item\/[^"?]+)/);
    const thread = await firstLink("/notes", /href="(\/notes\/[^"?]+)"/);
    const journal = await firstLink("/archive?type=journal", /<a class="thumb" href="\/item\/([^"?]+)/);
    const shoot = async (
      name: string,
      route: string,
      options: { width?: number; height?: number; dark?: boolean; mobile?: boolean; full?: boolean; lightbox?: boolean } = {},
    ) => {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 860 },
        colorScheme: options.dark ? "dark" : "light",
        ...(options.mobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
      });
      const page = await context.newPage();
      await page.goto(`${base}${route}`);
      await page.waitForLoadState("networkidle");
      if (options.lightbox) {
        await page.locator('.thumbs > .thumb[data-full$=".webp"]').nth(1).click();
        await page.locator(".lightbox img").waitFor();
        await page.waitForLoadState("networkidle");
      }
      const file = path.join(OUT, `${name}.png`);
      await page.screenshot({ path: file, fullPage: options.full ?? false });
      await context.close();
      expect((await fs.stat(file)).size).toBeGreaterThan(1000);
    };
    await shoot("dashboard-overview", "/", { full: true });
    await shoot("archive-grid", "/archive");
    await shoot("archive-grid-dark", "/archive", { dark: true });
    await shoot("archive-360", "/archive", { width: 360, height: 740, mobile: true });
    await shoot("lightbox", "/archive", { lightbox: true });
    await shoot("item", item, { full: true });
    await shoot("feeds-page", "/feeds", { full: true });
    await shoot("notes-thread", thread, { full: true });
    await shoot("messages", "/messages", {});
    await shoot("watch-feed", "/watch", {});
    await shoot("artist", "/artists/SimArtist", {});
    await shoot("reading-view", `/read/${journal}`, {});
    await shoot("reading-view-dark", `/read/${journal}`, { dark: true });
    await shoot("metrics", "/metrics", {});
    await shoot("messages-360", "/messages", { width: 360, height: 740, mobile: true });
  } finally {
    await browser.close();
  }
}, 180_000);
