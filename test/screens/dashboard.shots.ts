// `npm run screenshots` (scripts/screenshots.ts runs this file with vitest.screenshots.config.ts; not part of
// CI): the dashboard over the browser tests' archive (test/helpers/dashboard-fixture.ts), photographed light,
// dark, at 360 px and with the lightbox open, into DVAULT_SCREENSHOTS_DIR (docs/img).
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { expect, it } from "vitest";
import { createDashboardFixture } from "../helpers/dashboard-fixture.ts";

const OUT = path.resolve(process.env.DVAULT_SCREENSHOTS_DIR ?? "docs/img");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

it("photographs the dashboard", async () => {
  const archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-shots-"));
  const f = await createDashboardFixture(archiveDir);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    await fs.mkdir(OUT, { recursive: true });
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
      await page.goto(`${f.dash.url}${route}`);
      await page.waitForLoadState("networkidle");
      if (options.lightbox) {
        await page.locator(".thumbs > .thumb").nth(1).click();
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
    await shoot("item", `/item/${f.item.deviationid}`, { full: true });
  } finally {
    await browser.close();
    await f.close();
    await fs.rm(archiveDir, { recursive: true, force: true });
  }
}, 180_000);
