// The dashboard in a real browser (playwright-core driving Debian's /usr/bin/chromium, headless) over an
// archive synced from the simulator, with files written into the archive through the downloads table:
// the overview, the archive grid, a search, an item with its metadata, history and image, and a failed
// job retried from the failed-jobs page. With DVAULT_SCREENSHOTS=1 it refreshes the screenshots in docs/img/.
import { existsSync, mkdtempSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { JOBS, JOB_DEFINITIONS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import { startDashboard, type RunningDashboard } from "../../src/http/server.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { createRedis } from "../../src/queue/redis.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { serviceWeekStart } from "../../src/status/collect.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import type { SourceName } from "../../src/sync/source.ts";
import { archiveFile, artworkPng } from "../helpers/archive-fixtures.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
// The checked-in screenshots are refreshed only on request (DVAULT_SCREENSHOTS=1 npx vitest run test/browser),
// so an ordinary test run never rewrites tracked files.
const SCREENSHOTS = process.env.DVAULT_SCREENSHOTS === "1" ? path.resolve("docs/img") : mkdtempSync(path.join(os.tmpdir(), "dvault-screens-"));
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`test/browser/dashboard.test.ts skipped: ${CHROMIUM} is absent (install it with: apt-get install -y chromium)`);

/** The bits of an Img the checks read (the project compiles without the DOM library). */
type Img = {
  complete: boolean;
  naturalWidth: number;
  naturalHeight: number;
  addEventListener(type: "load", listener: (event: unknown) => void, options: { once: boolean }): void;
};

const NEW_TITLE = "Lantern Harbor at Dusk";
const FAILING_JOB = "sync-broken-source";

let h: SyncHarness;
let dash: RunningDashboard;
let context: BrowserContext;
let page: Page;
let admin: QueueAdmin;
let archiveDir: string;
let userDataDir: string;
let item: { deviationid: string; tags: string[] };

async function setUpArchive(): Promise<void> {
  h = await createSyncHarness({
    sim: {
      seed: 11,
      dataset: {
        deviations: 72,
        galleryFolders: 5,
        collectionFolders: 3,
        favourites: 24,
        notes: 24,
        messages: 30,
        trackedUsers: 2,
        trackedUserDeviations: 8,
        statuses: 4,
      },
    },
  });
  admin = new QueueAdmin(h.services.redis, h.services.config.redisPrefix);
  const sources: SourceName[] = ["profile", "gallery", "collections", "comments", "profile_posts", "notes", "messages"];
  for (const source of sources) await h.runSource(source);

  // The item of the story: the newest own image with tags and a description, edited upstream after the first sync.
  const { rows } = await h.pool.query<{ deviationid: string; tags: string[] }>(
    `SELECT d.deviationid, m.tags FROM deviations d JOIN deviation_metadata m ON m.deviationid = d.deviationid
     WHERE d.type = 'image' AND d.author_userid = $1 AND cardinality(m.tags) >= 2 AND m.description <> '' AND d.title !~ '[<"]'
     ORDER BY d.published_at DESC LIMIT 1`,
    [h.account.userId],
  );
  item = rows[0]!;
  h.sim.activity({ kind: "edit_title", deviationid: item.deviationid, title: NEW_TITLE });
  h.sim.activity({
    kind: "edit_description",
    deviationid: item.deviationid,
    description: "<b>Harbor lights</b> at dusk, painted on location.<br />Prints on request.",
  });
  h.sim.clock.advance(3600_000);
  await h.runSource("gallery", { full: true });

  // Files in the archive for the newest images, as the downloads worker would leave them.
  const images = await h.pool.query<{ deviationid: string }>(
    `SELECT deviationid FROM deviations WHERE type = 'image' AND removed_at IS NULL ORDER BY published_at DESC NULLS LAST LIMIT 30`,
  );
  for (const [i, r] of images.rows.entries()) await archiveFile(h.pool, archiveDir, r.deviationid, artworkPng(i * 7 + 3));
  await archiveFile(h.pool, archiveDir, item.deviationid, artworkPng(4242, 720, 540));

  // Downloads in other states, and the week's allowance partly used.
  await h.pool.query(
    `INSERT INTO downloads (deviationid, kind, status, reason)
     SELECT deviationid, 'original', 'wanted', 'favourite' FROM deviations d
     WHERE type = 'image' AND NOT EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid)
     ON CONFLICT DO NOTHING`,
  );
  await h.pool.query(`UPDATE downloads SET status = 'deferred_quota' WHERE id IN (SELECT id FROM downloads WHERE status = 'wanted' ORDER BY id LIMIT 4)`);
  await h.pool.query(
    `UPDATE downloads SET status = 'not_downloadable', reason = 'the artist disabled downloads' WHERE id IN (SELECT id FROM downloads WHERE status = 'wanted' ORDER BY id LIMIT 3)`,
  );
  const weekStart = serviceWeekStart(h.services.now()).toISOString().slice(0, 10);
  await h.pool
    .query(`INSERT INTO download_quota_usage (account_id, week_start, used) VALUES ($1, $2::date, 7) ON CONFLICT DO NOTHING`, [h.account.id, weekStart])
    .catch(() => undefined);

  // A live worker heartbeat, and a job that fails in the real worker host (a payload the catalogue rejects).
  const prefix = h.services.config.redisPrefix;
  await h.services.redis.set(
    `${prefix}:heartbeat:${os.hostname()}:${process.pid}`,
    JSON.stringify({ id: `${os.hostname()}:${process.pid}`, at: new Date().toISOString() }),
    "EX",
    600,
  );
  const producer = new Producer([...JOB_DEFINITIONS], h.services.redis, prefix);
  const host = new WorkerHost<WorkerContext>({
    entries: checkCatalogue<WorkerContext>(JOBS),
    connection: () => createRedis(h.redis.url, "worker"),
    prefix,
    log: h.services.log,
    queues: ["sync"],
    makeContext: (base) => ({ ...base, services: h.services, sources: new Map(SOURCES.map((s) => [s.name, s])), producer, everyMs: {} }),
  });
  host.start();
  await admin.queue("sync").add("sync.source", { accountId: h.account.id, source: "forums", key: "" }, { jobId: FAILING_JOB, attempts: 5 });
  const state = () => admin.queue("sync").getJobState(FAILING_JOB);
  await vi.waitFor(async () => expect(await state(), "the broken job's state").toBe("failed"), { timeout: 10_000, interval: 25 });
  // Stopped, so the retried job stays visible as waiting.
  await host.close();
  await producer.close();
}

describe.skipIf(!hasChromium)("dashboard in a browser", () => {
  beforeAll(async () => {
    archiveDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-browser-archive-"));
    userDataDir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-chromium-"));
    await fs.mkdir(SCREENSHOTS, { recursive: true });
    await setUpArchive();
    dash = await startDashboard({ ...h.services, config: { ...h.services.config, archiveDir } }, { port: 0 });
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  afterAll(async () => {
    await context?.close();
    await dash?.close();
    await admin?.close();
    await h?.close();
    for (const dir of [archiveDir, userDataDir]) if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("shows the overview", async () => {
    await page.goto(`${dash.url}/`);
    await expect(page.locator("h1").first().textContent()).resolves.toContain("Overview");
    const body = (await page.textContent("main")) ?? "";
    expect(body).toContain(h.account.name);
    expect(body).toContain("gallery");
    expect(body).toMatch(/deferred by the weekly quota/);
    await page.screenshot({ path: path.join(SCREENSHOTS, "dashboard-overview.png"), fullPage: true });
  });

  it("browses the archive grid with thumbnails from the local archive", async () => {
    await page.goto(`${dash.url}/archive`);
    const thumbs = page.locator(".thumb");
    expect(await thumbs.count()).toBe(48);
    const first = page.locator(".thumb img[src^='/files/']").first();
    await first.evaluate((img: Img) => (img.complete ? null : new Promise((r) => img.addEventListener("load", r, { once: true }))));
    expect(await first.getAttribute("src")).toMatch(/^\/files\/\d+$/);
    expect(await first.evaluate((img: Img) => img.naturalWidth)).toBeGreaterThan(0);
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: path.join(SCREENSHOTS, "archive-grid.png") });

    await page.selectOption("select[name=artist]", h.account.name);
    await page.click("form.filters button[type=submit]");
    expect(page.url()).toContain(`artist=${h.account.name}`);
    const artists = await page.locator(".thumb .a").allTextContents();
    expect(artists.every((a) => a.startsWith(h.account.name))).toBe(true);
  });

  it("searches, opens an item and sees its metadata, history and image", async () => {
    await page.goto(`${dash.url}/`);
    await page.fill("header input[name=q]", "lantern harbor");
    await page.press("header input[name=q]", "Enter");
    await page.waitForURL(/\/archive\?q=/);
    const hit = page.locator(".hit a", { hasText: NEW_TITLE }).first();
    await expect(hit.count()).resolves.toBe(1);
    await hit.click();
    await page.waitForURL(/\/item\//);
    expect(await page.textContent("h1")).toBe(NEW_TITLE);
    const main = (await page.textContent("main")) ?? "";
    expect(main).toContain(h.account.name);
    for (const tag of item.tags) expect(main).toContain(`#${tag}`);
    expect(main).toContain("Harbor lights at dusk, painted on location.");
    expect(main).not.toContain("<b>");
    const history = await page.locator("table tr", { hasText: "title" }).first().textContent();
    expect(history).toContain(NEW_TITLE);
    const img = page.locator(".original img");
    await img.evaluate((el: Img) => (el.complete ? null : new Promise((r) => el.addEventListener("load", r, { once: true }))));
    expect(await img.evaluate((el: Img) => [el.naturalWidth, el.naturalHeight])).toEqual([720, 540]);
    await page.screenshot({ path: path.join(SCREENSHOTS, "item.png"), fullPage: true });
  });

  it("finds a tag, a note and journal text from the search box", async () => {
    await page.goto(`${dash.url}/archive?q=${encodeURIComponent(item.tags[0]!)}&type=deviation`);
    expect(await page.locator(".hit").count()).toBeGreaterThan(0);
    await page.goto(`${dash.url}/archive?q=hello&type=note`);
    expect(await page.locator(".hit .pill", { hasText: "note" }).count()).toBeGreaterThan(0);
    expect(await page.locator(".hit mark").first().textContent()).toMatch(/hello/i);
  });

  it("retries a failed job from the failed-jobs page", async () => {
    await page.goto(`${dash.url}/jobs`);
    const row = page.locator("tr", { hasText: `sync/${FAILING_JOB}` });
    await expect(row.count()).resolves.toBe(1);
    expect(await row.textContent()).toMatch(/invalid payload for "sync\.source"/);
    await row.locator("button", { hasText: "Retry" }).click();
    await page.waitForURL(/\/jobs\?done=/);
    expect(await page.textContent(".notice")).toBe(`Retried sync/${FAILING_JOB}.`);
    expect(await page.locator("tr", { hasText: `sync/${FAILING_JOB}` }).count()).toBe(0);
    expect(await admin.queue("sync").getJobState(FAILING_JOB)).toBe("waiting");
  });
});
