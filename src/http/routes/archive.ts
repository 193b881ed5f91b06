// The overview, the archive browser and search, an item's page, its archived files and the static images.
import fs from "node:fs/promises";
import path from "node:path";
import type express from "express";
import { resolveArchivePath, SEARCH_KINDS, searchArchive, type SearchKind } from "../../search/search.ts";
import { isWithin } from "../../storage/layout.ts";
import { collectStatus } from "../../status/collect.ts";
import { type DashboardContext, FILE_CSP, one, sendPage } from "../context.ts";
import { archivePage, itemPage, messagePage, overviewPage, PLACEHOLDER_SVG, searchPage, TEXT_SVG } from "../pages.ts";

const PAGE_SIZE = 48;

/** The real path of `candidate` when it is a file inside the archive root (symlinks resolved), else undefined. */
export async function insideArchive(root: string, candidate: string): Promise<string | undefined> {
  try {
    const [realRoot, real] = await Promise.all([fs.realpath(root), fs.realpath(candidate)]);
    if (!isWithin(realRoot, real)) return undefined;
    const stat = await fs.stat(real);
    return stat.isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

export function archiveRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, config, queues, browser, now } = ctx;
  const archiveRoot = path.resolve(config.archiveDir);

  app.get("/", async (_req, res) => {
    const report = await collectStatus({ ...deps, queues, now });
    sendPage(res, 200, overviewPage(report));
  });

  app.get("/archive", async (req, res) => {
    const q = one(req.query.q);
    if (q) {
      const typeParam = one(req.query.type);
      const type = typeParam && (SEARCH_KINDS as readonly string[]).includes(typeParam) ? (typeParam as SearchKind) : undefined;
      const hits = await searchArchive(deps.pool, { text: q, type, user: one(req.query.artist), limit: 100, archiveDir: config.archiveDir });
      const files = await browser.bestFiles([...new Set(hits.map((h) => h.deviationid).filter((d): d is string => d !== null))]);
      return sendPage(res, 200, searchPage({ query: q, type, hits, files }));
    }
    const pageNo = Math.max(1, Math.min(10_000, Number.parseInt(one(req.query.page) ?? "1", 10) || 1));
    const filter = {
      artist: one(req.query.artist),
      folder: one(req.query.folder),
      collection: one(req.query.collection),
      archived: one(req.query.archived) === "1",
    };
    const [choices, found] = await Promise.all([
      browser.filterChoices(),
      browser.recentItems({ ...filter, archivedOnly: filter.archived, limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE }),
    ]);
    return sendPage(res, 200, archivePage({ filter, choices, items: found.items, page: pageNo, hasMore: found.hasMore }));
  });

  app.get("/item/:id", async (req, res) => {
    const item = await browser.item(String(req.params.id));
    if (!item) return sendPage(res, 404, messagePage(404, "Not in the archive", "No deviation with this id has been archived."));
    return sendPage(res, 200, itemPage(item));
  });

  app.get("/files/:id", async (req, res) => {
    const file = await browser.storedFile(String(req.params.id));
    const real = file ? await insideArchive(archiveRoot, resolveArchivePath(archiveRoot, file.path)) : undefined;
    if (!file || !real) return res.status(404).type("text").send("not in the archive\n");
    const mime = file.mime ?? "";
    const inline = /^(image|video)\//.test(mime) || (!mime && /\.(jpe?g|png|gif|webp|avif|bmp|mp4|webm)$/i.test(real));
    res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "private, max-age=86400" });
    if (!inline) res.attachment(path.basename(real));
    if (mime) res.type(mime);
    return res.sendFile(real, { dotfiles: "deny", lastModified: true });
  });

  for (const [name, svg] of [
    ["placeholder.svg", PLACEHOLDER_SVG],
    ["text.svg", TEXT_SVG],
  ] as const) {
    app.get(`/static/${name}`, (_req, res) => {
      res.set({ "Content-Security-Policy": FILE_CSP, "Cache-Control": "public, max-age=86400" }).type("image/svg+xml").send(svg);
    });
  }
}
