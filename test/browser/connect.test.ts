// A first run in a real browser (playwright-core driving Debian's /usr/bin/chromium, headless): from an empty
// database, the overview's link to the first-run page, "Connect DeviantArt", the simulator's authorize page
// (approve), back through the dashboard's callback to the overview, which shows the account, its scopes and its
// first sync waiting for a worker (test/helpers/connect-fixture.ts starts none). The refusals are quicker
// without a browser: test/http/connect.test.ts.
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ConnectFixture, createConnectFixture } from "../helpers/connect-fixture.ts";
import { CHROMIUM, CHROMIUM_ARGS, chromiumFor } from "../helpers/chromium.ts";

const hasChromium = chromiumFor("test/browser/connect.test.ts");

let f: ConnectFixture;
let browser: Browser;

describe.skipIf(!hasChromium)("connect an account in a browser", () => {
  beforeAll(async () => {
    // The simulator serves its approve page, as the service does, instead of redirecting at once.
    f = await createConnectFixture({ autoApprove: false });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await f?.close();
  });

  it("goes from the first-run page through the service's approval to the overview with the account and its first sync", async () => {
    const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${f.dash.url}/`);
    await page.getByRole("link", { name: "Connect DeviantArt" }).click();

    await expect.poll(() => page.url()).toBe(`${f.dash.url}/connect`);
    await expect(page.textContent("main")).resolves.toContain("No account is connected yet");
    expect(await page.textContent("#callback-url")).toBe(f.callbackUrl);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth), "no horizontal scroll at 360 px").toBe(
      true,
    );

    await page.getByRole("button", { name: "Connect DeviantArt" }).click();
    await expect.poll(() => new URL(page.url()).origin).toBe(f.sim.url);
    await expect(page.textContent("h1")).resolves.toBe("Authorize application");
    await page.click("#approve");

    await expect.poll(() => new URL(page.url()).pathname).toBe("/");
    const owner = f.sim.truth.users.get(f.sim.truth.ownerId)!.username;
    const notice = (await page.textContent(".notice")) ?? "";
    expect(notice).toContain(`Connected ${owner} as account "${owner}" with scopes basic browse`);
    expect(notice).toMatch(/First sync queued: \d+ source runs/);
    const main = (await page.textContent("main")) ?? "";
    expect(main).not.toContain("No account yet");
    expect(main).toMatch(/running: sync 0 active, \d+ waiting/);
    await context.close();
  });
});

/** The bits of the DOM the checks read (the project compiles without the DOM library). */
declare const document: { documentElement: { scrollWidth: number; clientWidth: number } };
