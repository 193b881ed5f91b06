// Renders a sample digest (fixture data through the real renderer) in headless Chromium to
// docs/img/digest.png. Thumbnails are generated SVG pictures: the simulator's CDN serves noise.
//   node --import tsx scripts/render-digest-screenshot.ts [--out docs/img/digest.png] [--html out.html]
// Needs Debian's chromium (apt-get install -y chromium) or CHROMIUM=/path/to/chrome.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { renderDigest } from "../src/digest/render.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "../test/helpers/chromium.ts";
import { SAMPLE_DIGEST as data, SAMPLE_TZ as TZ } from "./sample-digest.ts";

const { values } = parseArgs({ options: { out: { type: "string", default: "docs/img/digest.png" }, html: { type: "string" } } });

const rendered = renderDigest(data, { timezone: TZ, idempotencyKey: "dvault-digest-smtp-20261102T070000Z-20261103T070000Z" });
if (values.html) await writeFile(values.html, rendered.html);

const userDataDir = await mkdtemp(path.join(os.tmpdir(), "dvault-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: process.env.CHROMIUM ?? CHROMIUM,
  headless: true,
  args: ["--headless", ...CHROMIUM_ARGS],
  viewport: { width: 760, height: 900 },
  deviceScaleFactor: 2,
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  // Nothing leaves the machine: the digest's only images are data: URIs.
  await page.route(/^https?:/, (route) => route.abort());
  await page.setContent(rendered.html, { waitUntil: "load" });
  const out = path.resolve(values.out ?? "docs/img/digest.png");
  await page.screenshot({ path: out, fullPage: true });
  console.log(`${rendered.subject}\nwrote ${out}`);
} finally {
  await context.close();
  await rm(userDataDir, { recursive: true, force: true });
}
