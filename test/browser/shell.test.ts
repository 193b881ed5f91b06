// The dashboard's frame in a real browser (playwright-core driving Debian's /usr/bin/chromium, headless), over a
// mirror synced from the simulator (issue 28): on a 360×640 phone no page scrolls sideways, the Menu button opens
// the navigation, the jobs page as cards keeps its failed counts and Pause buttons; the theme switch holds across
// a reload with and without script, the system's dark applies until "Light" is chosen; the metrics page shows
// the registry's own numbers, the ones of the raw Prometheus text it links to.
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { CHROMIUM, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/shell.test.ts");

/** The bits of the DOM the checks read (the project compiles without the DOM library). */
declare const document: { documentElement: { scrollWidth: number; dataset: Record<string, string> }; body: unknown };
declare const getComputedStyle: (el: unknown, pseudo?: string) => { backgroundColor: string; content: string };

const PHONE = { viewport: { width: 360, height: 640 }, isMobile: true, hasTouch: true } as const;
/** Series whose value moves between two reads by itself (the answers counted, this process, free disk, ages). */
const MOVING = /^dvault_(http_answers_total|process_|nodejs_|archive_free_bytes|queue_lag_seconds)/;

let h: SyncHarness;
let dash: RunningDashboard;
let browser: Browser;
let url: string;

/** The body's background as a luminance 0–255. */
async function luminance(p: Page): Promise<number> {
  const bg = await p.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const [r, g, b] = (bg.match(/\d+/g) ?? []).map(Number);
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
}

async function withContext<T>(options: Parameters<Browser["newContext"]>[0], run: (p: Page, c: BrowserContext) => Promise<T>): Promise<T> {
  const context = await browser.newContext(options);
  try {
    return await run(await context.newPage(), context);
  } finally {
    await context.close();
  }
}

describe.skipIf(!hasChromium)("the dashboard's frame", () => {
  beforeAll(async () => {
    h = await createSyncHarness({ sim: { seed: 5, dataset: { deviations: 4 } } });
    await h.runSource("gallery");
    dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
    url = dash.url;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  });

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await h?.close();
  });

  it("fits overview, jobs, feeds and metrics into 360 px without sideways scrolling", async () => {
    await withContext(PHONE, async (p) => {
      for (const path of ["/", "/jobs", "/feeds", "/metrics"]) {
        await p.goto(`${url}${path}`);
        const width = await p.evaluate(() => document.documentElement.scrollWidth);
        expect(width, `${path} is ${width} px wide`).toBeLessThanOrEqual(360);
        // No column hides in a table scrolled inside its card: every cell is on the screen.
        const offscreen = await p
          .locator("main td")
          .evaluateAll((cells) => cells.map((c) => c.getBoundingClientRect()).filter((r) => r.width > 0 && r.right > 360).length);
        expect(offscreen, `${path}: cells beyond 360 px`).toBe(0);
      }
      // With the menu open too.
      await p.locator("summary", { hasText: "Menu" }).click();
      expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    });
  });

  it("opens the navigation from the Menu button on a phone, and shows it in the header on a desk", async () => {
    await withContext(PHONE, async (p) => {
      await p.goto(`${url}/feeds`);
      const nav = p.getByRole("navigation", { name: "Dashboard" });
      expect(await nav.isVisible()).toBe(false);
      await p.locator("summary", { hasText: "Menu" }).click();
      const links = nav.getByRole("link");
      await expect.poll(() => nav.isVisible()).toBe(true);
      for (const link of await links.all()) {
        const box = await link.boundingBox();
        expect(box && box.x >= 0 && box.x + box.width <= 360, `${await link.textContent()} within the screen`).toBe(true);
      }
      await nav.getByRole("link", { name: "Failed jobs" }).click();
      await p.waitForURL(/\/jobs$/);
    });
    await withContext({ viewport: { width: 1280, height: 800 } }, async (p) => {
      await p.goto(`${url}/jobs`);
      expect(await p.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Metrics" }).isVisible()).toBe(true);
      expect(await p.locator("summary", { hasText: "Menu" }).isVisible()).toBe(false);
    });
  });

  it("keeps the failed counts and the Pause buttons on the jobs page's cards", async () => {
    await withContext(PHONE, async (p) => {
      await p.goto(`${url}/jobs`);
      const row = p.locator("table.cards tr", { has: p.locator('td[data-label="queue"]') }).first();
      const failed = row.locator('td[data-label="failed"]');
      expect(await failed.isVisible()).toBe(true);
      expect(await failed.evaluate((el) => getComputedStyle(el, "::before").content)).toBe('"failed"');
      const pause = row.getByRole("button", { name: /^(Pause|Resume)$/ });
      expect(await pause.isVisible()).toBe(true);
      const box = await pause.boundingBox();
      expect(box!.x + box!.width).toBeLessThanOrEqual(360);
    });
  });

  for (const javaScriptEnabled of [true, false]) {
    it(`keeps the chosen theme across a reload${javaScriptEnabled ? "" : " without script"}`, async () => {
      await withContext({ javaScriptEnabled, viewport: { width: 1280, height: 800 }, colorScheme: "light" }, async (p) => {
        await p.goto(`${url}/jobs`);
        expect(await luminance(p)).toBeGreaterThan(200);
        await p.getByRole("group", { name: "Colour theme" }).getByRole("link", { name: "Dark" }).click();
        await p.waitForURL(/\/jobs$/);
        expect(await p.locator("html").getAttribute("data-theme")).toBe("dark");
        expect(await luminance(p)).toBeLessThan(40);
        await p.reload();
        expect(await luminance(p)).toBeLessThan(40);
      });
    });
  }

  it("follows the system's dark until Light is chosen", async () => {
    await withContext({ colorScheme: "dark", viewport: { width: 1280, height: 800 } }, async (p) => {
      await p.goto(`${url}/feeds`);
      expect(await luminance(p)).toBeLessThan(40);
      await p.getByRole("group", { name: "Colour theme" }).getByRole("link", { name: "Light" }).click();
      await p.waitForURL(/\/feeds$/);
      expect(await luminance(p)).toBeGreaterThan(200);
      await p.reload();
      expect(await luminance(p)).toBeGreaterThan(200);
    });
  });

  it("shows the registry's own numbers on the metrics page, the raw text one link away", async () => {
    await withContext({ viewport: { width: 1280, height: 800 } }, async (p) => {
      await p.goto(`${url}/feeds`);
      await p.getByRole("navigation", { name: "Dashboard" }).getByRole("link", { name: "Metrics" }).click();
      expect(await p.locator("h1").textContent()).toContain("Metrics");
      const shown = await p.locator("data[data-metric]").evaluateAll((els) =>
        els.map((e) => ({
          metric: e.getAttribute("data-metric")!,
          series: e.getAttribute("data-series")!,
          value: e.getAttribute("value")!,
          text: e.textContent!,
        })),
      );
      await p.getByRole("link", { name: "raw Prometheus text" }).click();
      const raw = (await p.textContent("body")) ?? "";
      const lines = new Map(
        raw
          .split("\n")
          .filter((l) => l && !l.startsWith("#"))
          .map((l) => [l.slice(0, l.lastIndexOf(" ")), l.slice(l.lastIndexOf(" ") + 1)]),
      );
      const steady = shown.filter((s) => !MOVING.test(s.metric));
      const mismatched = steady.filter((s) => lines.get(`${s.metric}${s.series}`) !== s.value);
      expect(mismatched).toEqual([]);
      // The ones a person reads: what the sync asked the service, and the downloads it left behind.
      const calls = steady.filter((s) => s.metric === "dvault_api_calls_total");
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.every((s) => s.text.replace(/\u00a0/g, "") === s.value)).toBe(true);
      expect(steady.some((s) => s.metric === "dvault_downloads" && Number(s.value) > 0)).toBe(true);
      expect(steady.some((s) => s.metric === "dvault_queue_jobs")).toBe(true);
    });
  });
});
