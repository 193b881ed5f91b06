// The archive grid in a real browser (playwright-core driving Debian's /usr/bin/chromium) over 130 works in five
// shapes (test/helpers/gallery-listing.ts): justified rows at each picture's aspect ratio at 1280 and 360 px, the
// first tile above the fold on a 360×640 phone, captions and badges apart, the lightbox's focus trap, info panel,
// zoom and "open original", the ? list of shortcuts, / and j/k, the skip link to the grid, the place kept in the
// URL through infinite scroll, reload and Back, the date scrubber filtering, the item page's previous/next under a
// filter, and placeholder tiles in the light and dark themes.
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import sharp from "sharp";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { placeholderSvg } from "../../src/storage/thumbnail-render.ts";
import { type GalleryWork, insertGallery } from "../helpers/gallery-listing.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";
import { CHROMIUM, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/gallery.test.ts");

/** The bits of the DOM the checks read (the project compiles without the DOM library). */
type Box = { top: number; left: number; right: number; bottom: number; width: number; height: number };
type Node = { getBoundingClientRect(): Box; closest(s: string): Node | null; getAttribute(n: string): string | null; textContent: string | null };
declare const document: { activeElement: Node | null; documentElement: { scrollWidth: number }; scrollingElement: { scrollHeight: number } };
declare const window: { scrollTo(x: number, y: number): void; scrollBy(x: number, y: number): void };
declare const getComputedStyle: (el: unknown) => { backgroundColor: string };

let h: SyncHarness;
let dash: RunningDashboard;
let browser: Browser;
let works: GalleryWork[];
/** One wide page and one phone page, reused by every check. */
let wide: Page;
let phone: Page;
const byId = new Map<string, GalleryWork>();

const luminance = (rgb: string) => {
  const [r, g, b] = (rgb.match(/\d+/g) ?? []).map(Number);
  return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
};

/** Each picture tile's rendered shape against its stored width/height: the worst relative error. */
async function worstAspectError(page: Page): Promise<{ checked: number; worst: number }> {
  const boxes = await page.locator(".thumbs > .thumb").evaluateAll((els) =>
    els.slice(0, 30).map((e) => {
      const img = (e as unknown as Node & { querySelector(s: string): Node }).querySelector(".img");
      const r = img.getBoundingClientRect();
      return { id: decodeURIComponent((e.getAttribute("href") ?? "").slice(6).split("?")[0]!), w: r.width, h: r.height };
    }),
  );
  let checked = 0;
  let worst = 0;
  for (const b of boxes) {
    const w = byId.get(b.id);
    if (!w?.width || !w.height) continue;
    checked++;
    worst = Math.max(worst, Math.abs(b.w / b.h / (w.width / w.height) - 1));
  }
  return { checked, worst };
}

describe.skipIf(!hasChromium)("the archive grid in a browser", () => {
  beforeAll(async () => {
    h = await createSyncHarness({ sim: { dataset: { deviations: 1 } } });
    // The simulator's one work is not part of the gallery: out of the way, published long before.
    await h.pool.query("UPDATE deviations SET published_at = '2001-01-01' WHERE deviationid NOT LIKE 'gal-%'");
    works = await insertGallery(h.pool, 130);
    for (const w of works) byId.set(w.id, w);
    dash = await startDashboard(h.services, { host: "127.0.0.1", port: 0 });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
    wide = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    phone = await (await browser.newContext({ viewport: { width: 360, height: 640 }, isMobile: true, hasTouch: true })).newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await h?.close();
  });

  it("keeps each picture's aspect ratio at 1280 and 360 px, in rows, with captions and badges apart", async () => {
    for (const [width, page] of [
      [1280, wide],
      [360, phone],
    ] as const) {
      await page.goto(`${dash.url}/archive`);
      const { checked, worst } = await worstAspectError(page);
      expect(checked, `${width} px: picture tiles measured`).toBeGreaterThan(15);
      expect(worst, `${width} px: worst aspect error`).toBeLessThan(0.02);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `${width} px wide page`).toBeLessThanOrEqual(width);
      // Several tiles share a row (justified rows, not one column of tiles) on the wide screen.
      if (width === 1280) {
        const tops = await page.locator(".thumbs > .thumb").evaluateAll((els) => els.slice(0, 12).map((e) => Math.round(e.getBoundingClientRect().top)));
        expect(new Set(tops).size).toBeLessThan(tops.length / 2);
      }
      const overlaps = await page.locator(".thumb:has(.badge)").evaluateAll(
        (els) =>
          els.filter((e) => {
            const q = (s: string) => (e as unknown as { querySelector(s: string): Node }).querySelector(s).getBoundingClientRect();
            const b = q(".badge");
            return [q(".t"), q(".a"), q(".img")].some((o) => b.left < o.right && o.left < b.right && b.top < o.bottom && o.top < b.bottom);
          }).length,
      );
      expect(await page.locator(".thumb .badge").count()).toBeGreaterThan(0);
      expect(overlaps, `${width} px: badges over a caption or picture`).toBe(0);
    }
  });

  it("puts the first tile above the fold on a 360×640 phone, filters behind a button there only", async () => {
    const page = phone;
    await page.goto(`${dash.url}/archive`);
    const top = await page
      .locator(".thumbs > .thumb")
      .first()
      .evaluate((e) => e.getBoundingClientRect().top);
    expect(top).toBeLessThan(640);
    expect(await page.locator(".side .filters").isVisible()).toBe(false);
    await page.locator(".side > summary").click();
    await expect.poll(() => page.locator(".side .filters").isVisible()).toBe(true);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    // On a wide screen the side shows whole, without the button.
    await wide.goto(`${dash.url}/archive`);
    expect(await wide.locator(".side .filters").isVisible()).toBe(true);
    expect(await wide.locator(".side > summary").isVisible()).toBe(false);
  });

  it("keeps Tab inside the open lightbox, shows the info panel, zooms, and Esc returns to the tile", async () => {
    const page = wide;
    await page.goto(`${dash.url}/archive`);
    const first = page.locator(".thumbs > .thumb").first();
    await first.click();
    const box = page.locator(".lightbox");
    await expect.poll(() => box.isVisible()).toBe(true);
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press("Tab");
      expect(await page.evaluate(() => Boolean(document.activeElement?.closest(".lightbox"))), `Tab ${i + 1}`).toBe(true);
    }
    await page.keyboard.press("Shift+Tab");
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest(".lightbox")))).toBe(true);
    await page.locator(".lb-info-toggle").click();
    const artist = box.locator(`.lb-info a[href="/artists/gal-artist"]`);
    await expect.poll(() => artist.count()).toBe(1);
    expect(await box.locator(".lb-info").textContent()).toContain(works[0]!.published.slice(0, 10));
    expect(await box.locator(".lb-info").textContent()).toMatch(/archived\s*original/);
    expect(await box.locator(".lb-info .tag").allTextContents()).toEqual(works[0]!.tags.map((t) => `#${t}`).sort());
    expect(await box.locator(".lb-original").getAttribute("href")).toMatch(/^\/files\/\d+$/);
    await box.locator(".lb-info-close").click();
    await expect.poll(() => box.locator(".lb-info").isVisible()).toBe(false);
    await page.keyboard.press("z");
    await expect.poll(() => box.getAttribute("class")).toContain("zoomed");
    await page.keyboard.press("Escape");
    await expect.poll(() => box.isVisible()).toBe(false);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("href"))).toBe(await first.getAttribute("href"));
  });

  it("reaches the first tile in 2 Tabs through the skip link; ? lists the shortcuts, / searches, j/k walk the tiles", async () => {
    const page = wide;
    await page.goto(`${dash.url}/archive`);
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.keyboard.press("Tab");
    const firstHref = await page.locator(".thumbs > .thumb").first().getAttribute("href");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("href"))).toBe(firstHref);
    await page.keyboard.press("j");
    await page.keyboard.press("j");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("href"))).toBe(await page.locator(".thumbs > .thumb").nth(2).getAttribute("href"));
    await page.keyboard.press("k");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("href"))).toBe(await page.locator(".thumbs > .thumb").nth(1).getAttribute("href"));
    await page.keyboard.press("?");
    const keys = page.locator(".keys[role=dialog]");
    await expect.poll(() => keys.isVisible()).toBe(true);
    const listed = await keys.locator("dt").allTextContents();
    expect(listed).toEqual(expect.arrayContaining(["?", "/", "j / k", "Enter", "Esc"]));
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => Boolean(document.activeElement?.closest(".keys")))).toBe(true);
    await page.keyboard.press("Escape");
    await expect.poll(() => keys.isVisible()).toBe(false);
    await page.keyboard.press("/");
    expect(await page.evaluate(() => document.activeElement?.getAttribute("name"))).toBe("q");
    // Enter on the tile j reached opens it in the viewer.
    await page.keyboard.press("Escape");
    await page.locator(".thumbs > .thumb").nth(1).focus();
    await page.keyboard.press("j");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".lightbox").isVisible()).toBe(true);
    expect(await page.locator(".lightbox .lb-cap a").textContent()).toBe(await page.locator(".thumbs > .thumb").nth(2).getAttribute("data-title"));
    await page.keyboard.press("Escape");
  });

  it("keeps the place in the URL through infinite scroll: a reload shows the same tiles, Back leaves the grid", async () => {
    const page = wide;
    await page.goto(`${dash.url}/feeds`);
    await page.goto(`${dash.url}/archive`);
    await page.evaluate(() => window.scrollTo(0, document.scrollingElement.scrollHeight));
    await expect.poll(() => page.locator(".thumbs > .thumb").count()).toBe(96);
    const page2First = page.locator(".thumbs > .thumb").nth(48);
    const id = await page2First.getAttribute("href");
    expect(id).toBe(`/item/${works[48]!.id}`);
    await page2First.evaluate((e) => (e as unknown as { scrollIntoView(o: unknown): void }).scrollIntoView({ block: "start" }));
    await page.evaluate(() => window.scrollBy(0, 1));
    await expect.poll(() => new URL(page.url()).searchParams.get("after")).toBeTruthy();
    await page.reload();
    expect(await page.locator(".thumbs > .thumb").first().getAttribute("href")).toBe(id);
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM deviations");
    // The page reloaded starts at the 49th item (the script may append the next one as it comes into view).
    expect(await page.locator(".thumbs > .thumb").first().getAttribute("data-pos")).toBe("49");
    expect((await page.textContent(".count"))?.replace(/\u00a0/g, " ")).toMatch(new RegExp(`^49–\\d+ of ${rows[0]!.n}$`));
    await page.goBack();
    await page.waitForURL(/\/feeds$/);
  });

  it("filters by a month from the date scrubber, and back to all dates", async () => {
    const page = wide;
    await page.goto(`${dash.url}/archive`);
    const month = works[60]!.published.slice(0, 7);
    await page.locator(`nav.dates a[href*="from=${month}&to=${month}"]`).click();
    await page.waitForURL(new RegExp(`from=${month}&to=${month}`));
    const dates = await page.locator(".thumbs > .thumb").evaluateAll((els) => els.map((e) => e.getAttribute("data-date") ?? ""));
    const expected = works.filter((w) => w.published.startsWith(month));
    expect(dates).toEqual(expected.map((w) => w.published.slice(0, 10)));
    expect((await page.textContent(".count"))?.replace(/\u00a0/g, " ")).toBe(`1–${expected.length} of ${expected.length}`);
    // Within one month the grid is headed by day.
    expect(await page.locator(".thumbs > h2.group").count()).toBe(expected.length);
    await page.locator("nav.dates a", { hasText: "all dates" }).click();
    await page.waitForURL(/\/archive$/);
    expect(await page.locator(".thumbs > .thumb").count()).toBe(48);
  });

  it("walks an item's previous and next in the grid's order, under the filter it was opened with", async () => {
    const page = wide;
    await page.goto(`${dash.url}/archive?tag=sea`);
    const sea = works.filter((w) => w.tags.includes("sea"));
    await page
      .locator(".thumbs > .thumb")
      .nth(1)
      .click({ modifiers: ["Control"] })
      .catch(() => undefined);
    await page.goto(`${dash.url}${await page.locator(".thumbs > .thumb").nth(1).getAttribute("href")}`);
    expect(new URL(page.url()).pathname).toBe(`/item/${sea[1]!.id}`);
    expect(await page.locator(".item-nav a[rel=prev]").getAttribute("href")).toBe(`/item/${sea[0]!.id}?tag=sea`);
    await page.locator(".item-nav a[rel=next]").click();
    await page.waitForURL(new RegExp(`/item/${sea[2]!.id}\\?tag=sea$`));
    await page.keyboard.press("ArrowRight");
    await page.waitForURL(new RegExp(`/item/${sea[3]!.id}\\?tag=sea$`));
    // Without a filter, the neighbours are the whole grid's.
    await page.goto(`${dash.url}/item/${works[1]!.id}`);
    expect(await page.locator(".item-nav a[rel=prev]").getAttribute("href")).toBe(`/item/${works[0]!.id}`);
    expect(await page.locator(".item-nav a[rel=next]").getAttribute("href")).toBe(`/item/${works[2]!.id}`);
  });

  it("themes placeholder and text tiles in light and dark", async () => {
    const page = wide;
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`${dash.url}/archive`);
      for (const sel of [".thumb .ph:not(.text)", ".thumb .ph.text"]) {
        const bg = await page
          .locator(sel)
          .first()
          .evaluate((e) => getComputedStyle(e).backgroundColor);
        if (scheme === "light") expect(luminance(bg), `${scheme} ${sel} ${bg}`).toBeGreaterThan(200);
        else expect(luminance(bg), `${scheme} ${sel} ${bg}`).toBeLessThan(70);
      }
    }
    await page.emulateMedia({ colorScheme: "light" });
  });

  it("draws the placeholder pictures dark on a dark page: the system's dark, or the theme switch's Dark on a light system", async () => {
    // An SVG shown as an <img> follows the color-scheme of the page that shows it; the pictures carry their own
    // dark colours (src/http/pages/svg.ts, and the stored tiles of src/storage/thumbnail-render.ts).
    const centre = async (page: Page, selector: string) => {
      const box = await page.locator(selector).boundingBox();
      const shot = await page.screenshot({ clip: { x: (box?.x ?? 0) + 4, y: (box?.y ?? 0) + 4, width: 2, height: 2 } });
      const { data } = await sharp(shot).raw().toBuffer({ resolveWithObject: true });
      return 0.2126 * data[0]! + 0.7152 * data[1]! + 0.0722 * data[2]!;
    };
    const show = async (page: Page, srcs: string[]) =>
      page.evaluate(
        `(${JSON.stringify(srcs)}).forEach((src, i) => { const img = new Image(); img.id = "probe" + i; img.width = img.height = 40; img.src = src; document.body.prepend(img); })`,
      );
    const stored = `data:image/svg+xml,${encodeURIComponent(placeholderSvg({ ext: "mp4", kind: "video" }))}`;
    for (const [scheme, cookie, dark] of [
      ["light", undefined, false],
      ["dark", undefined, true],
      ["light", "dark", true],
      ["dark", "light", false],
    ] as const) {
      const context = await browser.newContext({ viewport: { width: 800, height: 600 }, colorScheme: scheme });
      if (cookie) await context.addCookies([{ name: "dvault_theme", value: cookie, url: dash.url }]);
      const page = await context.newPage();
      await page.goto(`${dash.url}/jobs`);
      await show(page, ["/static/placeholder.svg", "/static/text.svg"]);
      await page.locator("#probe1").evaluate((e) => (e as unknown as { decode(): Promise<void> }).decode());
      // The stored tiles come from the thumbnails store; a page of its own with the same color-scheme shows one.
      const bare = await context.newPage();
      await bare.setContent(`<!doctype html><html style="color-scheme: ${dark ? "dark" : "light"}"><body></body></html>`);
      await show(bare, [stored]);
      await bare.locator("#probe0").evaluate((e) => (e as unknown as { decode(): Promise<void> }).decode());
      for (const [p, sel] of [
        [page, "#probe0"],
        [page, "#probe1"],
        [bare, "#probe0"],
      ] as const) {
        const lum = await centre(p, sel);
        if (dark) expect(lum, `${scheme}/${cookie} ${sel}`).toBeLessThan(70);
        else expect(lum, `${scheme}/${cookie} ${sel}`).toBeGreaterThan(200);
      }
      await context.close();
    }
  });
});
