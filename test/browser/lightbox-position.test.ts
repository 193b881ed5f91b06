// The lightbox's "n of total" in a real browser (playwright-core driving Debian's /usr/bin/chromium) over a
// listing longer than a page (issue 26, item 6): opened on page 3, the 99th item of 497 says "99 of 497", not
// its place among the page's tiles; walking past the page's last tile appends the next page and goes on counting.
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { insertListing } from "../helpers/numbers-listing.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { CHROMIUM, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/lightbox-position.test.ts");

let h: SyncHarness;
let dash: RunningDashboard;
let browser: Browser;
let page: Page;
let ids: string[];

/** The caption's "n of total", spaces as a person reads them. */
const position = async () =>
  /(\S+) of (\S+)$/
    .exec(((await page.locator(".lightbox .lb-cap").textContent()) ?? "").replace(/\u00a0/g, ""))
    ?.slice(1)
    .join(" of ");

describe.skipIf(!hasChromium)("the lightbox's position", () => {
  beforeAll(async () => {
    h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
    ids = await insertListing(h.pool, 497);
    dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await h?.close();
  });

  it("says 99 of 497 on the 99th item, opened from page 3", async () => {
    await page.goto(`${dash.url}/archive?page=3`);
    const third = page.locator(".thumbs > .thumb").nth(2);
    expect(await third.getAttribute("href")).toBe(`/item/${ids[98]}`);
    await third.click();
    await expect.poll(() => page.locator(".lightbox").isVisible()).toBe(true);
    await expect.poll(position).toBe("99 of 497");
    await page.keyboard.press("ArrowLeft");
    await expect.poll(position).toBe("98 of 497");
  });

  it("goes on counting into the page it appends after the last tile", async () => {
    await page.goto(`${dash.url}/archive?page=3`);
    await page.locator(".thumbs > .thumb").last().click();
    await expect.poll(position).toBe("144 of 497");
    await page.keyboard.press("ArrowRight");
    await expect.poll(position).toBe("145 of 497");
    expect(await page.locator(".lightbox .lb-cap a").textContent()).toBe(`Item ${497 - 144}`);
  });
});
