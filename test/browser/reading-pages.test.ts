// The reading pages in a real browser (playwright-core driving Debian's /usr/bin/chromium) over
// test/helpers/reading-fixture.ts: a note thread, a message stack, a threaded comment list, a journal's reading view,
// an artist and the watch feed, each at 1280 and 360 px in light and dark, showing the fixture's content with no
// horizontal scroll and no CSP violation; a search hit of each kind opening its page; the service's hostile HTML
// shown inert (nothing runs, nothing loads from elsewhere, a styled lure cannot cover the page) and hostile text escaped;
// a work removed upstream saying so.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HOSTILE_SCRIPT_TITLE } from "../../src/simulator/dataset/hostile.ts";
import { BEACON, PWNED } from "../helpers/hostile-text-pages.ts";
import { createReadingFixture, FRIEND, IDS, type ReadingFixture, WORDS } from "../helpers/reading-fixture.ts";
import { CHROMIUM, CHROMIUM_ARGS, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/reading-pages.test.ts");

type El = { textContent: string | null; getAttribute(n: string): string | null };
declare const document: {
  title: string;
  documentElement: { scrollWidth: number; clientWidth: number };
  body: unknown;
  querySelectorAll(s: string): ArrayLike<El>;
};
declare const getComputedStyle: (el: unknown) => { backgroundColor: string };

let f: ReadingFixture;
let browser: Browser;
let dir: string;

/** What a page did that it must not: CSP refusals, script errors, dialogs, requests off the dashboard. */
type Witness = { csp: string[]; errors: string[]; dialogs: string[]; offsite: string[] };
function watch(page: Page, origin: string): Witness {
  const w: Witness = { csp: [], errors: [], dialogs: [], offsite: [] };
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) w.csp.push(m.text());
  });
  page.on("pageerror", (e) => w.errors.push(String(e)));
  page.on("dialog", (d) => {
    w.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on("request", (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith("data:")) w.offsite.push(r.url());
  });
  return w;
}

const PAGES: Array<{ name: string; path: () => string; shows: () => string[]; selector: string }> = [
  {
    name: "a note thread",
    path: () => `/notes/${IDS.thread[0]}`,
    shows: () => [WORDS.thread, "3 notes, oldest first", WORDS.note, "Yes, cedar.", FRIEND.username],
    selector: ".thread > li",
  },
  {
    name: "a message stack",
    path: () => `/messages/stack/${IDS.stack}`,
    shows: () => [`${WORDS.stack} (1)`, `${WORDS.stack} (3)`, WORDS.art],
    selector: ".rlist > li",
  },
  {
    name: "a threaded comment list",
    path: () => `/item/${IDS.journal}`,
    shows: () => [WORDS.comment, WORDS.reply, WORDS.deep],
    selector: `#c-${IDS.comments.root} #c-${IDS.comments.deep}`,
  },
  {
    name: "a journal's reading view",
    path: () => `/read/${IDS.journal}`,
    shows: () => [WORDS.journal, "opens here", "picture not archived: not kept", WORDS.comment],
    selector: ".text-body img.embed",
  },
  {
    name: "an artist",
    path: () => `/artists/${encodeURIComponent(f.owner.username)}`,
    shows: () => [f.owner.username, WORDS.art, WORDS.status, "Gallery folders", "Not archived in full", "deleted on the service, 2026-10-01"],
    selector: ".rtile",
  },
  { name: "the watch feed", path: () => "/watch", shows: () => [WORDS.art, WORDS.status, f.owner.username], selector: ".feed .rtile img" },
];

describe.skipIf(!hasChromium)("reading pages in a browser", () => {
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-reading-browser-"));
    f = await createReadingFixture(dir);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await f?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  /** The body's mean channel: under 60 on the dark theme, over 200 on the light one. */
  const luminance = async (page: Page) => {
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const [r = 0, g = 0, b = 0] = (bg.match(/\d+/g) ?? []).map(Number);
    return (r + g + b) / 3;
  };

  for (const width of [1280, 360])
    it(`shows each page at ${width} px, light and dark: its content, no horizontal scroll, no CSP violation`, async () => {
      const context = await browser.newContext({ viewport: { width, height: 800 }, colorScheme: "light" });
      const page = await context.newPage();
      const w = watch(page, f.dash.url);
      for (const p of PAGES) {
        const res = await page.goto(`${f.dash.url}${p.path()}`);
        expect(res?.status(), p.name).toBe(200);
        const text = (await page.textContent("main")) ?? "";
        for (const s of p.shows()) expect(text, `${p.name} shows ${s}`).toContain(s);
        expect(await page.locator(p.selector).count(), `${p.name}: ${p.selector}`).toBeGreaterThan(0);
        expect(await page.locator("[data-jk-list] [data-jk]").count(), `${p.name}: rows for j/k`).toBeGreaterThan(0);
        expect(await page.locator("[data-jk] [data-jk]").count(), `${p.name}: a j/k row inside another`).toBe(0);
        for (const scheme of ["light", "dark"] as const) {
          await page.emulateMedia({ colorScheme: scheme });
          const { scrollWidth, clientWidth } = await page.evaluate(() => ({
            scrollWidth: document.documentElement.scrollWidth,
            clientWidth: document.documentElement.clientWidth,
          }));
          expect(scrollWidth, `${p.name} scrolls sideways at ${width} px, ${scheme}`).toBeLessThanOrEqual(clientWidth);
          if (scheme === "dark") expect(await luminance(page), `${p.name}, dark`).toBeLessThan(60);
          else expect(await luminance(page), `${p.name}, light`).toBeGreaterThan(200);
        }
        await page.emulateMedia({ colorScheme: "light" });
      }
      expect(w).toEqual({ csp: [], errors: [], dialogs: [], offsite: [] });
      await context.close();
    });

  it("links every status of the watch feed to a page that shows it, with its comments", async () => {
    const page = await browser.newPage();
    await page.goto(`${f.dash.url}/watch`);
    const hrefs = await page.locator('a[href^="/statuses/"]').evaluateAll((els) => els.map((e) => (e as unknown as El).getAttribute("href") ?? ""));
    expect(hrefs.length).toBeGreaterThan(1);
    for (const href of new Set(hrefs)) expect((await page.request.get(`${f.dash.url}${href}`)).status(), href).toBe(200);
    // The status's own page: its text, the work it shares and the comments on it.
    await page.goto(`${f.dash.url}/statuses/${IDS.status}`);
    const text = (await page.textContent("main")) ?? "";
    for (const s of [WORDS.status, WORDS.art, "Nice sundial."]) expect(text).toContain(s);
    await page.close();
  });

  it("shows the journal's archived picture as its thumbnail and the other as a link to where it was", async () => {
    const page = await browser.newPage();
    await page.goto(`${f.dash.url}/read/${IDS.journal}`);
    const src = await page.locator(".text-body img.embed").getAttribute("src");
    expect(src).toBe(`/thumb/m/${f.artSha}.webp`);
    expect((await page.request.get(`${f.dash.url}${src}`)).status()).toBe(200);
    expect(await page.locator(".text-body a.embed-missing").first().getAttribute("href")).toBe("https://images-wixmp.example/f/elsewhere.png");
    await page.close();
  });

  const SEARCHES: Array<{ kind: string; q: string; opens: RegExp; shows: string }> = [
    { kind: "deviation", q: "quince orchard", opens: new RegExp(`/item/${IDS.art}$`), shows: WORDS.art },
    { kind: "journal", q: "marigold", opens: new RegExp(`/read/${IDS.journal}$`), shows: "opens here" },
    { kind: "literature", q: "withered quill", opens: new RegExp(`/read/${IDS.gone}$`), shows: "removed upstream" },
    { kind: "comment", q: "pollinator", opens: new RegExp(`/read/${IDS.journal}#c-${IDS.comments.root}$`), shows: WORDS.comment },
    { kind: "note", q: "trellis", opens: new RegExp(`/notes/${IDS.thread[0]}$`), shows: "Yes, cedar." },
    { kind: "message", q: "favourited", opens: /\/messages\/rf-stacked-\d$/, shows: WORDS.stack },
  ];
  it("opens the page of a search hit of each kind", async () => {
    const page = await browser.newPage();
    for (const s of SEARCHES) {
      await page.goto(`${f.dash.url}/archive?q=${encodeURIComponent(s.q)}&type=${s.kind}`);
      const hit = page.locator(`.hit[data-kind="${s.kind}"] a`).first();
      await Promise.all([page.waitForURL(s.opens), hit.click()]);
      expect((await page.textContent("main")) ?? "", s.kind).toContain(s.shows);
    }
    await page.close();
  });

  it("shows the service's hostile HTML inert and hostile text escaped", async () => {
    const page = await browser.newPage();
    const w = watch(page, f.dash.url);
    for (const p of [`/read/${IDS.journal}`, `/notes/${IDS.thread[2]}`, `/statuses/${IDS.status}`, "/messages"]) {
      await page.goto(`${f.dash.url}${p}`);
      const state = await page.evaluate(() => ({
        title: document.title,
        scripts: document.querySelectorAll("main script, main iframe, main svg, [onerror]").length,
        jsLinks: document.querySelectorAll('a[href^="javascript"]').length,
      }));
      expect(state, p).toEqual({ title: expect.not.stringContaining(PWNED), scripts: 0, jsLinks: 0 });
    }
    await page.goto(`${f.dash.url}/messages/${IDS.message}`);
    expect(await page.textContent("h1")).toBe(HOSTILE_SCRIPT_TITLE);
    expect(w.offsite.filter((u) => u.startsWith(BEACON))).toEqual([]);
    expect(w).toEqual({ csp: [], errors: [], dialogs: [], offsite: [] });
    await page.close();
  });

  it("keeps the service's styled HTML inside its box: a fixed, full-screen link cannot cover the dashboard", async () => {
    // Style attributes pass the sanitizer (journals are styled); position: fixed would lift a lure over the page.
    const lure = `<a href="https://evil.example/login" style="position:fixed;top:0;left:0;width:100vw;height:100vh;z-index:2147483647;display:block;background:red">Session expired, sign in again</a>`;
    await f.h.pool.query("UPDATE comments SET body = body || $1 WHERE commentid = $2", [lure, IDS.comments.onStatus]);
    await f.h.pool.query("UPDATE deviation_texts SET html = html || $1 WHERE deviationid = $2", [lure, IDS.gone]);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    for (const [p, box] of [
      [`/statuses/${IDS.status}`, ".body"],
      [`/read/${IDS.gone}`, ".text-body"],
    ] as const) {
      await page.goto(`${f.dash.url}${p}`);
      const at = await page.evaluate(() => {
        const hit = (document as unknown as { elementFromPoint(x: number, y: number): { closest(s: string): unknown } | null }).elementFromPoint(5, 5);
        return hit?.closest('a[href^="https://evil.example"]') ? "lure" : "page";
      });
      expect(at, p).toBe("page");
      const [lureBox, boxBox] = await Promise.all([
        page.locator(`${box} a[href^="https://evil.example"]`).boundingBox(),
        page.locator(box).last().boundingBox(),
      ]);
      expect(lureBox!.y, p).toBeGreaterThanOrEqual(boxBox!.y);
    }
    await page.close();
  });

  it("says a work removed upstream was, when and why, with the service's answer", async () => {
    const page = await browser.newPage();
    await page.goto(`${f.dash.url}/read/${IDS.gone}`);
    const notice = (await page.textContent(".gone")) ?? "";
    expect(notice).toContain("removed upstream");
    expect(notice).toContain("deleted on the service");
    expect(notice).toContain("Deviation not found.");
    expect(await page.locator(".gone time").getAttribute("datetime")).toBe("2026-10-01T12:50:00.000Z");
    expect((await page.textContent(".text-body")) ?? "").toContain("A poem, kept.");
    await page.close();
  });
});
