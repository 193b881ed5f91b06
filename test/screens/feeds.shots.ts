// `npm run screenshots` (with dashboard.shots.ts): the README's feed sample, docs/img/feed-sample.xml (the
// arrivals feed as a reader gets it, cut to three entries, the token replaced by a placeholder), and the
// dashboard's Feeds page, docs/img/feeds-page.png. Over the browser tests' archive, with DVAULT_PUBLIC_URL set.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { expect, it } from "vitest";
import { FeedTokenRepository } from "../../src/db/feed-token.repository.ts";
import { issueFeedToken } from "../../src/http/feeds/feed-token.ts";
import { startDashboard } from "../../src/http/server.ts";
import { createDashboardFixture } from "../helpers/dashboard-fixture.ts";

const OUT = path.resolve(process.env.DVAULT_SCREENSHOTS_DIR ?? "docs/img");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const PUBLIC_URL = "https://dvault.example.org";
const PLACEHOLDER = "dvf_YOUR-FEED-TOKEN";

/** The first `n` entries of a feed's XML, the rest of the document as it was. */
function firstEntries(xml: string, n: number): string {
  const start = xml.indexOf("<entry>");
  let end = start;
  for (let i = 0; i < n; i++) end = xml.indexOf("</entry>", end) + "</entry>".length;
  return `${xml.slice(0, end)}\n</feed>\n`;
}

it("writes the feed sample and photographs the Feeds page", async () => {
  const archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-shots-feeds-"));
  const f = await createDashboardFixture(archiveDir);
  const key = randomBytes(32);
  const deps = { ...f.h.services, config: { ...f.h.services.config, archiveDir, secretKey: key, publicUrl: PUBLIC_URL } };
  const dash = await startDashboard(deps, { port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const { token } = await issueFeedToken({ repo: new FeedTokenRepository(f.h.pool), key, name: "phone", at: new Date(f.h.services.now()) });
    const res = await fetch(`${dash.url}/feeds/${token}/arrivals.atom`);
    expect(res.status).toBe(200);
    const sample = firstEntries(await res.text(), 3)
      .split(token)
      .join(PLACEHOLDER);
    await fs.mkdir(OUT, { recursive: true });
    await fs.writeFile(path.join(OUT, "feed-sample.xml"), sample);

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    await page.goto(`${dash.url}/feeds`);
    await page.waitForLoadState("networkidle");
    const file = path.join(OUT, "feeds-page.png");
    await page.screenshot({ path: file, fullPage: true });
    await context.close();
    expect((await fs.stat(file)).size).toBeGreaterThan(1000);
  } finally {
    await browser.close();
    await dash.close();
    await f.close();
    await fs.rm(archiveDir, { recursive: true, force: true });
  }
}, 180_000);
