// The overview, the archive browser and search, an item's page, its archived files, the static images and
// the stylesheet and script.
import path from "node:path";
import type express from "express";
import type { Request, Response } from "express";
import { cursorOf } from "../../db/archive-browser.repository.ts";
import { SEARCH_KINDS, type SearchKind, searchPage as searchArchivePage } from "../../search/search.ts";
import { originalKeyOf } from "../../storage/links.ts";
import { openBlobStore } from "../../storage/store.ts";
import { collectStatus } from "../../status/collect.ts";
import { APP_CSS, APP_JS, LOGO_SVG } from "../assets.ts";
import { type DashboardContext, FILE_CSP, one, publicBase, sendPage } from "../context.ts";
import { decodeCursor, encodeCursor } from "../browse-cursor.ts";
import { sendBlob } from "../send-blob.ts";
import { singleFlight } from "../single-flight.ts";
import { commentsOf } from "./reading.ts";
import { archivePage, itemPage, messagePage, overviewPage, PLACEHOLDER_SVG, searchPage, TEXT_SVG } from "../pages.ts";

const PAGE_SIZE = 48;
const SEARCH_PAGE_SIZE = 25;

function pageNumber(value: string | undefined): number {
  return Math.max(1, Math.min(10_000, Number.parseInt(value ?? "1", 10) || 1));
}

/**
 * Answers with a stored file by its download id: the dashboard's /files and the feeds' file links. Through the
 * blob store (store.ts): the file may sit in a bucket this process never wrote to. Only keys under originals/
 * are ever read, so a row pointing elsewhere (or out of the archive) is a 404.
 */
export function storedFileSender(ctx: DashboardContext): (req: Request, res: Response, downloadId: string) => Promise<unknown> {
  const { config, browser } = ctx;
  const archiveRoot = path.resolve(config.archiveDir);
  const blobs = openBlobStore(config);
  return async (req, res, downloadId) => {
    const file = await browser.storedFile(downloadId);
    const key = file ? originalKeyOf(file.path, archiveRoot) : undefined;
    if (!file || !key) return res.status(404).type("text").send("not in the archive\n");
    const mime = file.mime ?? "";
    const inline = /^(image|video)\//.test(mime) || (!mime && /\.(jpe?g|png|gif|webp|avif|bmp|mp4|webm)$/i.test(key));
    return sendBlob(req, res, {
      store: blobs,
      presignTtlSeconds: config.storage.kind === "s3" ? config.storage.presignTtlSeconds : 0,
      key,
      contentType: mime || undefined,
      attachment: inline ? undefined : path.posix.basename(key),
      etag: file.sha256 ?? undefined,
      headers: { "Content-Security-Policy": FILE_CSP, "Cache-Control": "private, max-age=86400" },
    });
  };
}

export function archiveRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, config, queues, browser, now } = ctx;

  app.get("/", async (req, res) => {
    const report = await collectStatus({ ...deps, queues, now });
    const actions = deps.actions ? { csrf: ctx.csrf.tokenFor(req, res), notice: one(req.query.done) } : undefined;
    const feeds = await ctx.feeds.links(publicBase(ctx, req), [
      { title: "dvault: new in the archive", feed: { kind: "arrivals" } },
      { title: "dvault: notifications", feed: { kind: "notifications" } },
    ]);
    sendPage(res, 200, overviewPage(report, actions, feeds));
  });

  // What every request for the archive asks alike (the folders, the months and total of a filter): a burst
  // shares one read of each (single-flight.ts) while each reads its own page.
  const filterChoices = singleFlight(
    (_: undefined) => "",
    () => browser.filterChoices(),
  );
  const monthCounts = singleFlight(
    (f: Parameters<typeof browser.monthCounts>[0]) => JSON.stringify(f),
    (f) => browser.monthCounts(f),
  );

  app.get("/archive", async (req, res) => {
    const q = one(req.query.q);
    if (q) {
      const typeParam = one(req.query.type);
      const type = typeParam && (SEARCH_KINDS as readonly string[]).includes(typeParam) ? (typeParam as SearchKind) : undefined;
      const page = pageNumber(one(req.query.page));
      const found = await searchArchivePage(deps.pool, {
        text: q,
        type,
        user: one(req.query.artist),
        limit: SEARCH_PAGE_SIZE,
        offset: (page - 1) * SEARCH_PAGE_SIZE,
        archiveDir: config.archiveDir,
        countIgnored: true,
      });
      const files = await browser.bestFiles([...new Set(found.hits.map((h) => h.deviationid).filter((d): d is string => d !== null))]);
      return sendPage(res, 200, searchPage({ query: q, type, ...found, page, pageSize: SEARCH_PAGE_SIZE, files }));
    }
    const pageNo = pageNumber(one(req.query.page));
    const filter = {
      artist: one(req.query.artist),
      folder: one(req.query.folder),
      collection: one(req.query.collection),
      archived: one(req.query.archived) === "1",
    };
    const after = decodeCursor(one(req.query.after));
    const [choices, found, months] = await Promise.all([
      filterChoices(undefined),
      browser.recentItems({ ...filter, archivedOnly: filter.archived, limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE, after }),
      monthCounts({ ...filter, archivedOnly: filter.archived }),
    ]);
    const total = months.reduce((sum, m) => sum + m.items, 0);
    const last = found.hasMore ? found.items.at(-1) : undefined;
    const feeds = await ctx.feeds.links(publicBase(ctx, req), [
      filter.artist
        ? { title: `dvault: ${filter.artist}`, feed: { kind: "artist", username: filter.artist } }
        : { title: "dvault: new in the archive", feed: { kind: "arrivals" } },
    ]);
    return sendPage(
      res,
      200,
      archivePage({ filter, choices, months, items: found.items, page: pageNo, pageSize: PAGE_SIZE, total, feeds, next: last && encodeCursor(cursorOf(last)) }),
    );
  });

  app.get("/item/:id", async (req, res) => {
    const item = await browser.item(String(req.params.id));
    if (!item) return sendPage(res, 404, messagePage(404, "Not in the archive", "No deviation with this id has been archived."));
    return sendPage(res, 200, itemPage(item, await commentsOf(ctx, "deviation", [item.deviationid])));
  });

  const sendFile = storedFileSender(ctx);
  app.get("/files/:id", (req, res) => sendFile(req, res, String(req.params.id)));

  for (const [name, svg] of [
    ["placeholder.svg", PLACEHOLDER_SVG],
    ["text.svg", TEXT_SVG],
  ] as const) {
    app.get(`/static/${name}`, (_req, res) => {
      res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "public, max-age=86400" }).type("image/svg+xml").send(svg);
    });
  }
  // The stylesheet and the script, named by their content hash: cached for a year, never stale.
  for (const asset of [APP_CSS, APP_JS]) {
    app.get(asset.url, (_req, res) => {
      res.set({ "Cache-Control": "public, max-age=31536000, immutable" }).type(asset.type).send(asset.body);
    });
  }
  app.get("/assets/logo.svg", (_req, res) => {
    res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "public, max-age=86400" }).type("image/svg+xml").send(LOGO_SVG);
  });
}
