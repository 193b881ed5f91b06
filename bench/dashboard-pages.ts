// Page weight and time to first paint of the dashboard's heaviest everyday pages (issue #28), over the real server
// in Debian's chromium: the archive grid's first page (48 tiles) and a page of 200 notifications, each loaded cold
// (a new browser context, so nothing cached) several times, beside the frame alone (a 404 page: the layout, its
// stylesheet and script, nothing else) measured in the same run, whose ratio is printed. The data is the demo's
// (src/demo/run-demo.ts, with more messages); the dashboard is `dvault worker` with only its http role, as the demo
// prints it. Layout shift is read from the browser's own layout-shift entries (0 when every tile's box is known
// before its picture arrives).
//
//   node --import tsx bench/dashboard-pages.ts [--runs 7] [--pages "/archive,/messages"] [--no-docs]
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { chromium, type Page } from "playwright-core";
import { loadConfig } from "../src/config.ts";
import { connectPg, quoteIdent } from "../src/db/connect.ts";
import { withDatabase } from "../src/db/pg-fields.ts";
import { runDemo } from "../src/demo/run-demo.ts";
import { createLogger } from "../src/log.ts";
import { deleteKeysByPrefix, createRedis } from "../src/queue/redis.ts";
import { startDashboardProcess } from "../test/helpers/dashboard-burst.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "../test/helpers/chromium.ts";
import { BENCH_PG_URL, BENCH_REDIS_URL, machine, median, percentile, table, writeDocSection } from "./bench-env.ts";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "7" },
    pages: { type: "string", default: "/archive,/messages" },
    "no-docs": { type: "boolean", default: false },
  },
});
const RUNS = Math.max(1, Number(values.runs));
const PAGES = ["/no-such-page", ...values.pages.split(",").filter(Boolean)];

type Load = {
  status: number;
  htmlBytes: number;
  transferred: number;
  requests: number;
  images: number;
  items: number;
  ttfb: number;
  fcp: number;
  load: number;
  cls: number;
};

/** One cold load of `url` in a fresh context: bytes over the wire, the browser's paint and navigation timings. */
async function coldLoad(page: Page, url: string): Promise<Load> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Network.enable");
  let transferred = 0;
  let requests = 0;
  cdp.on("Network.loadingFinished", (e: { encodedDataLength: number }) => {
    transferred += e.encodedDataLength;
    requests++;
  });
  const res = await page.goto(url, { waitUntil: "load" });
  const htmlBytes = (await res?.body())?.length ?? 0;
  await page.waitForLoadState("networkidle");
  // A script for the page (this file is compiled without the DOM's types): navigation and paint timings, and the
  // layout shifts the browser recorded since the navigation began.
  const t = (await page.evaluate(`(async () => {
    const nav = performance.getEntriesByType("navigation")[0];
    const fcp = performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? NaN;
    const cls = await new Promise((resolve) => {
      let sum = 0;
      new PerformanceObserver((list) => { for (const e of list.getEntries()) if (!e.hadRecentInput) sum += e.value; })
        .observe({ type: "layout-shift", buffered: true });
      setTimeout(() => resolve(sum), 50);
    });
    return { ttfb: nav.responseStart - nav.requestStart, load: nav.loadEventEnd, fcp, cls, images: document.images.length, items: document.querySelectorAll("[data-jk]").length };
  })()`)) as Pick<Load, "ttfb" | "load" | "fcp" | "cls" | "images" | "items">;
  return { status: res?.status() ?? 0, htmlBytes, transferred, requests, ...t };
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-bench-pages-"));
const database = `dvault_bench_pages_${randomBytes(4).toString("hex")}`;
const prefix = `dvault-bench-pages-${randomBytes(4).toString("hex")}`;
const config = loadConfig({ DATABASE_URL: withDatabase(BENCH_PG_URL, database), REDIS_URL: BENCH_REDIS_URL, DVAULT_REDIS_PREFIX: prefix, LOG_LEVEL: "warn" });
const report = await runDemo({ config, log: createLogger({ level: "warn" }), dir, deviations: 400, dataset: { messages: 600 }, out: () => undefined });
process.stdout.write(
  `the demo's archive: ${report.counts.deviations} deviations, ${report.counts.messages} messages, ${report.thumbnails.generated} thumbnails\n`,
);
const dash = await startDashboardProcess({
  DATABASE_URL: report.databaseUrl,
  REDIS_URL: BENCH_REDIS_URL,
  DVAULT_REDIS_PREFIX: report.redisPrefix,
  DVAULT_ARCHIVE_DIR: report.archiveDir,
  HOME: path.join(dir, "home"),
});
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? CHROMIUM,
  headless: true,
  args: CHROMIUM_ARGS,
});
try {
  const loads = new Map<string, Load[]>(PAGES.map((p) => [p, []]));
  // Interleaved: each round loads every page once, so the machine's other work falls on all of them alike.
  for (let round = 0; round < RUNS; round++) {
    for (const route of PAGES) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const load = await coldLoad(await context.newPage(), `${dash.url}${route}`);
      await context.close();
      if (load.status !== (route === "/no-such-page" ? 404 : 200)) throw new Error(`${route} answered ${load.status}`);
      loads.get(route)?.push(load);
    }
  }
  const frame = median((loads.get("/no-such-page") ?? []).map((l) => l.fcp));
  const kb = (n: number) => (n / 1024).toFixed(1);
  const rows = PAGES.map((route) => {
    const ls = loads.get(route) ?? [];
    const fcp = median(ls.map((l) => l.fcp));
    return [
      route === "/no-such-page" ? "the frame alone (a 404 page)" : route,
      median(ls.map((l) => l.items)),
      kb(median(ls.map((l) => l.htmlBytes))),
      kb(median(ls.map((l) => l.transferred))),
      median(ls.map((l) => l.requests)),
      median(ls.map((l) => l.images)),
      median(ls.map((l) => l.ttfb)).toFixed(0),
      fcp.toFixed(0),
      percentile(
        ls.map((l) => l.fcp),
        95,
      ).toFixed(0),
      median(ls.map((l) => l.load)).toFixed(0),
      Math.max(...ls.map((l) => l.cls)).toFixed(3),
      `${(fcp / frame).toFixed(2)}×`,
    ];
  });
  const body = `<a id="dashboard-pages"></a>
### Dashboard pages: weight and first paint

\`node --import tsx bench/dashboard-pages.ts --runs ${RUNS}\` on ${machine()}. The demo's archive (${report.counts.deviations} deviations,
${report.counts.messages} messages, real pictures), \`dvault worker\` with only its http role, Debian's chromium at 1280×800; every load cold
(a new context), the pages interleaved, ${RUNS} rounds. Transferred = bytes over the wire for the page and everything it loads (HTML,
stylesheet, script, thumbnails); times in ms from the navigation's start; CLS = the largest cumulative layout shift of any load
(0: every tile's box is known before its picture arrives). Items = the page's tiles or rows (its \`data-jk\` elements). The ratio is each
page's median first paint over the frame's.

${table(["page", "items", "HTML KB", "transferred KB", "requests", "images", "TTFB ms", "first paint ms", "p95 first paint", "load ms", "CLS", "first paint ÷ frame"], rows)}
`;
  process.stdout.write(`\n${body}\n`);
  if (!values["no-docs"]) await writeDocSection("dashboard-pages", body);
} finally {
  await browser.close();
  await dash.stop();
  const admin = await connectPg(BENCH_PG_URL);
  await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(`${database}_demo`)} WITH (FORCE)`);
  await admin.end();
  const redis = createRedis(BENCH_REDIS_URL);
  await redis.connect();
  await deleteKeysByPrefix(redis, report.redisPrefix);
  await redis.quit();
  await fs.rm(dir, { recursive: true, force: true });
}
