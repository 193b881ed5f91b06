// Issue 27 row 5: a journal's HTML from the service opened from the archive's readable tree (by-user/…, a file://
// page, where no server sends a CSP) in a real browser (playwright-core driving Debian's /usr/bin/chromium). The page
// as dvault stored it before it made pages inert runs the payload (the control: the test can fail); the same page
// rewritten once (src/downloads/inert-texts.ts), and a page stored now (src/downloads/store-text.ts), run nothing:
// no script, handler, srcdoc frame or javascript: link changes the title, opens a dialog or makes a request. The
// page's own CSP holds even where the sanitizer is bypassed.
import fs from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeStoredTextsInert } from "../../src/downloads/inert-texts.ts";
import { regenerateReadableLinks } from "../../src/downloads/readable-links.ts";
import { neutralizeControls } from "../../src/text/controls.ts";
import { ARCHIVE_PAGE_HEAD } from "../../src/text/inert-html.ts";
import type { DownloadHarness } from "../helpers/download-harness.ts";
import { createHostileJournalHarness, HOSTILE_JOURNAL as PAYLOAD, PWNED, replaceWithOldPage, storedTextRows } from "../helpers/hostile-text-pages.ts";
import { CHROMIUM, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/readable-tree.test.ts");

declare const document: { title: string };

let h: DownloadHarness;
let browser: Browser;

/** What a page did: its title after everything ran, the requests the browser sent (not those its CSP refused), dialogs opened. */
type Visit = { title: string; requests: string[]; dialogs: number };

/** Opens `file` as a person double-clicking it in by-user/ would, clicks the lure link, and reports what the page did. */
async function visit(file: string): Promise<Visit> {
  const page: Page = await browser.newPage();
  const requests: string[] = [];
  let dialogs = 0;
  page.on("requestfinished", (r) => {
    if (!r.url().startsWith("file:")) requests.push(r.url());
  });
  page.on("requestfailed", (r) => {
    if (!r.url().startsWith("file:") && r.failure()?.errorText !== "csp") requests.push(r.url());
  });
  page.on("dialog", (d) => {
    dialogs++;
    void d.dismiss();
  });
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: "load" });
    if ((await page.locator("#lure").count()) > 0) await page.locator("#lure").click();
    await page.waitForLoadState("networkidle");
    return { title: await page.evaluate(() => document.title), requests, dialogs };
  } finally {
    await page.close();
  }
}

const textRows = () => storedTextRows(h);

/** The readable link (by-user/…) of a stored file, found by its target. */
async function readableLinkTo(relPath: string): Promise<string> {
  await regenerateReadableLinks(h.deps);
  const target = path.join(h.archiveDir, relPath);
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fs.readdir(dir, { withFileTypes: true })) {
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) await walk(abs);
      else if (e.isSymbolicLink() && path.resolve(dir, await fs.readlink(abs)) === target) found.push(abs);
    }
  };
  await walk(path.join(h.archiveDir, "by-user"));
  expect(found.length).toBeGreaterThan(0);
  return found[0]!;
}

describe.skipIf(!hasChromium)("the readable tree's text pages in a browser", () => {
  beforeAll(async () => {
    // The service's HTML for every journal and literature text of the mirror: the payload.
    h = await createHostileJournalHarness();
    expect((await textRows()).length).toBeGreaterThan(0);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--no-first-run"] });
  });

  afterAll(async () => {
    await browser?.close();
    await h?.close();
  });

  it("runs nothing from a page stored now, opened through its by-user/ link", async () => {
    const [row] = await textRows();
    expect(row).toBeDefined();
    const { rows } = await h.pool.query<{ html: string }>("SELECT html FROM deviation_texts WHERE deviationid = $1", [row!.deviationid]);
    expect(rows[0]!.html).toBe(PAYLOAD); // the database keeps the service's HTML as it came
    const visited = await visit(await readableLinkTo(row!.path));
    // The title as the page shows it: a direction override in it made visible (row 16).
    expect(visited).toEqual({ title: neutralizeControls(row!.title), requests: [], dialogs: 0 });
  });

  it("ran the payload from a page stored before, and runs nothing once it is rewritten; its row follows the new file", async () => {
    const rows = await textRows();
    const row = rows[rows.length - 1]!;
    // The page as it was stored before pages were inert, at its own content address, the row pointing at it.
    const old = await replaceWithOldPage(h, row.id, row.title);
    const before = await visit(await readableLinkTo(old.relPath));
    expect(before.title).toBe(PWNED);
    expect(before.requests.length).toBeGreaterThan(0);

    expect(await makeStoredTextsInert({ deps: h.deps })).toMatchObject({ rewritten: 1, skipped: [] });
    const [now] = await h.pool.query<{ path: string }>("SELECT path FROM downloads WHERE id = $1::bigint", [row.id]).then((r) => r.rows);
    expect(now!.path).not.toBe(old.relPath);
    await expect(fs.stat(path.join(h.archiveDir, old.relPath))).rejects.toThrow(/ENOENT/);
    const after = await visit(await readableLinkTo(now!.path));
    expect(after).toEqual({ title: neutralizeControls(row.title), requests: [], dialogs: 0 });
  });

  it("keeps the page's CSP in force where a sanitizer would have let a script through", async () => {
    const file = path.join(h.archiveDir, "csp-only.html");
    await fs.writeFile(file, `${ARCHIVE_PAGE_HEAD}<title>kept</title></head><body>${PAYLOAD}</body></html>`);
    const visited = await visit(file);
    expect(visited).toEqual({ title: "kept", requests: [], dialogs: 0 });
  });
});
