// The dashboard in a real browser (playwright-core driving Debian's /usr/bin/chromium, headless) over an
// archive synced from the simulator (test/helpers/dashboard-fixture.ts): the overview and "Sync now" followed
// to its end by a worker started afterwards, the grid on thumbnails with renditions shown, the lightbox,
// paging and infinite scroll with totals, the folder tree, search paging, an item, a failed job retried,
// every page at 360 px, dark mode, and bull-board branded without web fonts. Screenshots: npm run screenshots.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDashboardFixture, type DashboardFixture, FAILING_JOB, NEW_TITLE } from "../helpers/dashboard-fixture.ts";
import { CHROMIUM, CHROMIUM_ARGS, chromiumFor } from "../helpers/chromium.ts";
import { startHostileProxy } from "../helpers/hostile-proxy.ts";

const hasChromium = chromiumFor("test/browser/dashboard.test.ts");

/** The bits of the DOM the checks read (the project compiles without the DOM library). */
type Doc = { documentElement: { scrollWidth: number; clientWidth: number } };
declare const document: Doc;
declare const getComputedStyle: (el: unknown) => { backgroundColor: string };
declare const window: { scrollTo(x: number, y: number): void; document: { body: unknown; scrollingElement: { scrollHeight: number } } };

let f: DashboardFixture;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let archiveDir: string;
let url: string;

const countText = async (p: Page = page) => (await p.textContent(".count"))?.replace(/\u00a0/g, " ");
const fmt = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, " ");

describe.skipIf(!hasChromium)("dashboard in a browser", () => {
  beforeAll(async () => {
    archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-browser-archive-"));
    f = await createDashboardFixture(archiveDir);
    url = f.dash.url;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await f?.close();
    if (archiveDir) await fs.rm(archiveDir, { recursive: true, force: true });
  });

  it("shows the overview with scripts only from dvault (CSP script-src 'self')", async () => {
    const res = await page.goto(`${url}/`);
    expect(res?.headers()["content-security-policy"]).toContain("script-src 'self'");
    await expect(page.locator("h1").first().textContent()).resolves.toContain("Overview");
    const body = (await page.textContent("main")) ?? "";
    expect(body).toContain(f.h.account.name);
    expect(body).toMatch(/deferred by the weekly quota/);
    const scripts = await page.locator("script").evaluateAll((els) => els.map((e) => (e as unknown as { src: string }).src));
    expect(scripts).toEqual([expect.stringMatching(/\/assets\/app\.[0-9a-f]{12}\.js$/)]);
    const asset = await page.request.get(scripts[0]!);
    expect(asset.headers()["cache-control"]).toContain("immutable");
  });

  it("grids thumbnails, never originals, and shows renditions with why", async () => {
    // A context of its own: in the shared one an earlier test (in any order) leaves the tiles in the browser's cache,
    // and a tile served from there makes no request to see.
    const fresh = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const p = await fresh.newPage();
    const requests: string[] = [];
    // The handler only notes what was asked for: a body read here races the next navigation (its answer is gone by
    // then, and the read rejects outside the test). The tiles' sizes are fetched below, after the page settled.
    p.on("response", (r) => {
      if (r.ok()) requests.push(new URL(r.url()).pathname);
    });
    await p.goto(`${url}/archive`);
    await p.waitForLoadState("networkidle");
    const { rows } = await f.h.pool.query<{ total: number }>("SELECT count(*)::int AS total FROM deviations");
    expect(await p.locator(".thumbs > .thumb").count()).toBe(48);
    expect(await countText(p)).toBe(`1–48 of ${fmt(rows[0]!.total)}`);
    const srcs = await p.locator(".thumb .img img").evaluateAll((els) => els.map((e) => e.getAttribute("src") ?? ""));
    const thumbs = srcs.filter((s) => /^\/thumb\/s\/[0-9a-f]{64}\.webp$/.test(s));
    expect(thumbs.length).toBeGreaterThanOrEqual(30);
    expect(srcs.every((s) => /^\/thumb\/s\/[0-9a-f]{64}\.webp$/.test(s) || s.startsWith("/static/"))).toBe(true);
    expect(requests.filter((path) => path.startsWith("/thumb/s/")).length, "thumbnails the grid loaded").toBeGreaterThan(0);
    expect(
      requests.filter((path) => path.startsWith("/files/")),
      "originals loaded by the grid",
    ).toEqual([]);
    // Each tile is at most 100 KB (the thumbnails route).
    const sizes: number[] = [];
    for (const src of thumbs) sizes.push((await (await p.request.get(`${url}${src}`)).body()).length);
    expect(sizes.filter((n) => n > 100 * 1024)).toEqual([]);
    const badges = await p.locator(".thumb .badge").allTextContents();
    expect(badges).toContain("free rendition · quota");
    expect(badges).toContain("free rendition · not downloadable");
    expect(badges.filter((b) => b === "not archived yet").length).toBeLessThan(48 - 30);
    await fresh.close();
  });

  it("opens a tile in a lightbox and walks it with ←/→, Esc and a swipe", async () => {
    await page.goto(`${url}/archive`);
    const titles = await page.locator(".thumbs > .thumb").evaluateAll((els) => els.slice(0, 3).map((e) => e.getAttribute("data-title")));
    await page.locator(".thumbs > .thumb").first().click();
    const box = page.locator(".lightbox");
    await expect.poll(() => box.isVisible()).toBe(true);
    expect(page.url()).toBe(`${url}/archive`);
    expect(await box.locator("img").getAttribute("src")).toMatch(/^\/thumb\/m\/[0-9a-f]{64}\.webp$|^\/static\//);
    const caption = () => box.locator(".lb-cap a").textContent();
    await expect.poll(caption).toBe(titles[0]);
    await page.keyboard.press("ArrowRight");
    await expect.poll(caption).toBe(titles[1]);
    await page.keyboard.press("ArrowRight");
    await expect.poll(caption).toBe(titles[2]);
    await page.keyboard.press("ArrowLeft");
    await expect.poll(caption).toBe(titles[1]);
    // A swipe to the left is "next".
    await page.mouse.move(700, 450);
    await page.mouse.down();
    await page.mouse.move(400, 450, { steps: 4 });
    await page.mouse.up();
    await expect.poll(caption).toBe(titles[2]);
    await page.keyboard.press("Escape");
    await expect.poll(() => box.isVisible()).toBe(false);
  });

  it("appends the next page on scroll, and pages with plain links without script", async () => {
    const { rows } = await f.h.pool.query<{ total: number }>("SELECT count(*)::int AS total FROM deviations");
    const total = rows[0]!.total;
    expect(total, "the fixture holds more than one page").toBeGreaterThan(48);
    await page.goto(`${url}/archive`);
    await page.evaluate(() => window.scrollTo(0, window.document.scrollingElement.scrollHeight));
    await expect.poll(() => page.locator(".thumbs > .thumb").count()).toBe(Math.min(96, total));
    expect(await countText()).toBe(`1–${Math.min(96, total)} of ${fmt(total)}`);

    const plain = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
    const p = await plain.newPage();
    await p.goto(`${url}/archive`);
    // One paging model: the next page is named by a cursor (after=), as the script's appended pages are.
    await p.locator("nav.pager a[rel=next]").first().click();
    await p.waitForURL(/after=/);
    expect(await p.locator(".thumbs > .thumb").count()).toBe(Math.min(48, total - 48));
    expect(await countText(p)).toBe(`49–${Math.min(96, total)} of ${fmt(total)}`);
    // The date scrubber filters: the oldest month shows that month's items only.
    const oldest = p.locator("nav.dates div > a:not(.y)").last();
    const month = ((await oldest.getAttribute("title")) ?? "").slice(0, 7);
    expect(month).toMatch(/^\d{4}-\d{2}$/);
    await oldest.click();
    await p.waitForURL(new RegExp(`from=${month}&to=${month}`));
    const captions = await p.locator(".thumb .a").allTextContents();
    expect(captions.some((t) => t.includes(` · ${month}-`))).toBe(true);
    expect(captions.every((t) => t.includes(` · ${month}-`))).toBe(true);
    // The lightbox needs script: without it a tile is a link to the item's page.
    await p.locator(".thumbs > .thumb").first().click();
    await p.waitForURL(/\/item\//);
    await plain.close();
  });

  it("asks again for a next page the dashboard was too busy to give, after the wait its 503 names", async () => {
    const { rows } = await f.h.pool.query<{ total: number }>("SELECT count(*)::int AS total FROM deviations");
    const total = rows[0]!.total;
    await page.goto(`${url}/archive`);
    await page.waitForLoadState("networkidle");
    expect(await page.locator(".thumbs > .thumb").count()).toBe(48);
    const nextPages: number[] = [];
    const onResponse = (r: import("playwright-core").Response) => {
      if (new URL(r.url()).searchParams.has("after")) nextPages.push(r.status());
    };
    page.on("response", onResponse);
    // Every connection of the dashboard's pool taken: the next page's query waits for one, then the dashboard
    // answers 503 with Retry-After (src/http/refusals.ts), as on a busy server. The wait is the pool's
    // (src/db/connect.ts: 5 s), shortened for the queries that start while the connections are held: pg-pool reads
    // it when a query joins the queue, so the other tests of this file keep 5 s.
    const pool = f.h.services.pool;
    const poolWait = pool.options.connectionTimeoutMillis;
    const held = await Promise.all(Array.from({ length: pool.options.max }, () => pool.connect()));
    try {
      pool.options.connectionTimeoutMillis = 300;
      await page.evaluate(() => window.scrollTo(0, window.document.scrollingElement.scrollHeight));
      await expect.poll(() => nextPages, { timeout: 30_000 }).toContain(503);
    } finally {
      pool.options.connectionTimeoutMillis = poolWait;
      for (const client of held) client.release();
    }
    await expect.poll(() => page.locator(".thumbs > .thumb").count(), { timeout: 30_000 }).toBe(Math.min(96, total));
    page.off("response", onResponse);
    expect(nextPages).toEqual([503, 200]);
    expect(await countText()).toBe(`1–${Math.min(96, total)} of ${fmt(total)}`);
  });

  it("asks again for a next page whose answer was cut off mid-body, as for a connection lost before it", async () => {
    const { rows } = await f.h.pool.query<{ total: number }>("SELECT count(*)::int AS total FROM deviations");
    const total = rows[0]!.total;
    // Between the browser and the dashboard, a proxy that cuts the first next page's body short: its headers (200)
    // came, then the connection closed, so the page's text never arrives.
    const proxy = await startHostileProxy(url);
    proxy.rules.push({ match: /[?&]after=/, times: 1, act: { kind: "truncate", bytes: 200 } });
    try {
      await page.goto(`${proxy.url}/archive`);
      await page.waitForLoadState("networkidle");
      expect(await page.locator(".thumbs > .thumb").count()).toBe(48);
      await page.evaluate(() => window.scrollTo(0, window.document.scrollingElement.scrollHeight));
      await expect.poll(() => proxy.stats.applied[0], { timeout: 30_000 }).toBe(1);
      await expect.poll(() => page.locator(".thumbs > .thumb").count(), { timeout: 30_000 }).toBe(Math.min(96, total));
      expect(await countText()).toBe(`1–${Math.min(96, total)} of ${fmt(total)}`);
    } finally {
      // Off the proxy's page before it closes: that page would go on asking the closed proxy for its next pages.
      await page.goto("about:blank");
      await proxy.close();
    }
  });

  it("filters by a folder from the tree: nested folders under their parent, no duplicate labels", async () => {
    const { rows } = await f.h.pool.query<{ folderid: string; parent: string; name: string }>(
      `SELECT c.folderid, c.parent_folderid AS parent, c.name FROM gallery_folders c JOIN gallery_folders p ON p.folderid = c.parent_folderid
       WHERE c.removed_at IS NULL AND p.removed_at IS NULL LIMIT 1`,
    );
    expect(rows.length, "the simulator drew a nested folder (variance on)").toBe(1);
    await page.goto(`${url}/archive`);
    const child = page.locator(`.tree a[href*="folder=${rows[0]!.folderid}"]`);
    const parentLink = page.locator(`.tree li:has(> a[href*="folder=${rows[0]!.parent}"])`);
    await expect(parentLink.locator(`a[href*="folder=${rows[0]!.folderid}"]`).count()).resolves.toBe(1);
    await expect(child.count()).resolves.toBe(1);
    const siblingsOk = await page.locator(".tree ul").evaluateAll((lists) =>
      lists.every((ul) => {
        const labels = [...ul.children].map((li) => li.querySelector("a")?.firstChild?.textContent ?? "");
        return new Set(labels).size === labels.length;
      }),
    );
    expect(siblingsOk).toBe(true);

    const folder = await f.h.pool.query<{ folderid: string; size: number }>(
      `SELECT fm.folderid, count(*)::int AS size FROM folder_members fm WHERE fm.kind = 'gallery' AND fm.removed_at IS NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`,
    );
    await page.locator(`.tree a[href*="folder=${folder.rows[0]!.folderid}"]`).click();
    await page.waitForURL(/folder=/);
    expect(await page.locator(".tree a.on").count()).toBe(1);
    expect(await countText()).toMatch(new RegExp(` of ${folder.rows[0]!.size}$`));
  });

  it("pages search results with totals, in the CLI's query language, and says which words it ignored", async () => {
    await page.goto(`${url}/archive?q=${encodeURIComponent("the")}`);
    expect(await page.textContent(".notice.warn")).toContain("“the”");
    // The word most deviations share, and how many deviations (not journals or literature) it matches.
    const common = await f.h.pool.query<{ word: string }>(`SELECT word FROM ts_stat('SELECT search_tsv FROM deviations') ORDER BY ndoc DESC, word LIMIT 1`);
    const word = common.rows[0]!.word;
    const { rows } = await f.h.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM deviations WHERE search_tsv @@ plainto_tsquery('english', $1) AND coalesce(type::text, '') NOT IN ('journal', 'literature')`,
      [word],
    );
    await page.goto(`${url}/archive?q=${encodeURIComponent(word)}&type=deviation`);
    const total = Number(await page.locator("[data-hits]").getAttribute("data-hits"));
    expect(total, `enough deviations match “${word}” for two pages`).toBeGreaterThan(25);
    expect(total).toBe(rows[0]!.n);
    expect(await page.locator(".hit").count()).toBe(25);
    await page.locator("nav.pager a", { hasText: "2" }).first().click();
    await page.waitForURL(/page=2/);
    expect(await page.locator(".hit").count()).toBe(Math.min(25, total - 25));
    expect(((await page.textContent("[data-hits]")) ?? "").replace(/\u00a0/g, " ")).toContain(`26–${Math.min(50, total)} of ${total} results`);
  });

  it("searches, opens an item and sees its metadata, history, files and picture", async () => {
    await page.goto(`${url}/`);
    await page.fill("header input[name=q]", "lantern harbor");
    await page.press("header input[name=q]", "Enter");
    await page.waitForURL(/\/archive\?q=/);
    await page.locator(".hit a", { hasText: NEW_TITLE }).first().click();
    await page.waitForURL(/\/item\//);
    expect(await page.textContent("h1")).toBe(NEW_TITLE);
    const main = (await page.textContent("main")) ?? "";
    for (const tag of f.item.tags) expect(main).toContain(`#${tag}`);
    expect(main).toContain("Harbor lights at dusk, painted on location.");
    expect(await page.locator("table tr", { hasText: "title" }).first().textContent()).toContain(NEW_TITLE);
    expect(await page.locator(".original img").getAttribute("src")).toMatch(/^\/thumb\/m\/[0-9a-f]{64}\.webp$/);
    const original = await page.locator(".original a").getAttribute("href");
    const res = await page.request.get(`${url}${original}`);
    expect(res.headers()["content-type"]).toBe("image/png");
  });

  it("retries a failed job from the failed-jobs page", async () => {
    await page.goto(`${url}/jobs`);
    const row = page.locator("tr", { hasText: `sync/${FAILING_JOB}` });
    await expect(row.count()).resolves.toBe(1);
    await row.locator("button", { hasText: "Retry" }).click();
    await page.waitForURL(/\/jobs\?done=/);
    expect(await page.textContent(".notice")).toBe(`Retried sync/${FAILING_JOB}.`);
    expect(await f.admin.queue("sync").getJobState(FAILING_JOB)).toBe("waiting");
    await f.admin.queue("sync").remove(FAILING_JOB);
  });

  it("'Sync now' queues a run the page follows to its end, run by a worker started afterwards", async () => {
    f.h.sim.clock.advance(60_000); // dvault's clock is the simulator's: a run now finishes later than the last one
    await page.goto(`${url}/`);
    const before = (await page.locator("[data-last]").getAttribute("data-last")) ?? "";
    await page.click("button:has-text('Sync now')");
    await page.waitForURL(/\/\?done=/);
    expect(await page.textContent(".notice")).toMatch(/^Sync started: \d+ source runs queued\.$/);
    const state = page.locator("[data-state]");
    await expect.poll(() => state.textContent()).toMatch(/^running: .*sync 0 active, \d+ waiting/);
    const worker = f.startSyncWorker();
    try {
      // Sync runs queue downloads, which no worker of this test takes: the sync queue empties, the downloads' waits.
      await expect.poll(() => state.textContent(), { timeout: 30_000 }).not.toMatch(/sync \d+ active/);
      const after = (await page.locator("[data-last]").getAttribute("data-last")) ?? "";
      expect(after > before, `last sync ${after} after ${before}`).toBe(true);
    } finally {
      await worker.close();
    }
    // "Download now" hands the due downloads to the worker: a downloads.enqueue job, through the Producer.
    await page.click("button:has-text('Download now')");
    await page.waitForURL(/\/\?done=/);
    expect(await page.textContent(".notice")).toContain("Downloads asked for");
    const waiting = await f.admin.queue("maintenance").getJobs(["waiting", "prioritized"]);
    expect(waiting.map((j) => j.name)).toContain("downloads.enqueue");
  });

  it("fits every page into 360 px without horizontal scrolling", async () => {
    const narrow = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    const p = await narrow.newPage();
    const pages = ["/", "/archive", "/archive?page=2", "/archive?q=deviation", `/item/${f.item.deviationid}`, "/jobs", "/no-such-page"];
    for (const path of pages) {
      await p.goto(`${url}${path}`);
      const width = await p.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} is ${width} px wide`).toBeLessThanOrEqual(360);
    }
    await narrow.close();
  });

  it("turns dark when the system prefers it", async () => {
    const dark = await browser.newContext({ colorScheme: "dark" });
    const p = await dark.newPage();
    for (const path of ["/", "/archive"]) {
      await p.goto(`${url}${path}`);
      const bg = await p.evaluate(() => getComputedStyle(window.document.body).backgroundColor);
      const [r, g, b] = (bg.match(/\d+/g) ?? []).map(Number);
      expect(0.2126 * r! + 0.7152 * g! + 0.0722 * b!, `${path} background ${bg}`).toBeLessThan(40);
    }
    await dark.close();
  });

  it("shows where the keyboard is", async () => {
    await page.goto(`${url}/archive`);
    await page.keyboard.press("Tab");
    const focused = () =>
      page.evaluate(() => {
        const el = (window.document as unknown as { activeElement: unknown }).activeElement;
        const style = getComputedStyle(el) as unknown as { outlineStyle: string; outlineWidth: string };
        return { text: (el as { textContent: string }).textContent, outline: `${style.outlineStyle} ${style.outlineWidth}` };
      });
    expect(await focused()).toEqual({ text: "Skip to content", outline: "solid 3px" });
    for (let i = 0; i < 3; i++) await page.keyboard.press("Tab");
    expect((await focused()).outline).toBe("solid 3px");
  });

  it("brands bull-board as dvault's, with a way back and no web fonts", async () => {
    // The shared page starts empty: what a page an earlier test left still asks for (another test's server, closed
    // since) must not count as this page's requests.
    await page.goto("about:blank");
    // Fetched, not merely asked for: the policy stops Google's stylesheet before it leaves the browser.
    const hosts = new Set<string>();
    const failed: string[] = [];
    page.on("requestfinished", (r) => hosts.add(new URL(r.url()).host));
    page.on("requestfailed", (r) => failed.push(`${new URL(r.url()).host} ${r.failure()?.errorText}`));
    const res = await page.goto(`${url}/queues`);
    expect(res?.headers()["content-security-policy"]).toContain("font-src 'self'");
    expect(await page.title()).toBe("dvault queues");
    // The link back sits in the header's menu (bull-board's miscLinks): its last button opens it.
    const menu = page.locator("header ul li:last-child button").last();
    await expect.poll(() => menu.count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await menu.click();
    const back = page.locator("a", { hasText: "dvault dashboard" });
    await expect.poll(() => back.count()).toBe(1);
    expect(await back.getAttribute("href")).toBe("/");
    expect([...hosts], `failed: ${failed.join(", ")}`).toEqual([new URL(url).host]);
    // Offline or not, the web fonts are refused by the policy, not by a missing network.
    expect(
      failed.filter((x) => !x.startsWith(new URL(url).host)).every((x) => /csp/i.test(x)),
      failed.join(", "),
    ).toBe(true);
  });
});
