// The overview, the archive browser and search, an item's page, its archived files, the static images and
// the stylesheet and script.
import path from "node:path";
import type express from "express";
import type { Request, Response } from "express";
import { type BrowseFilters, cursorOf } from "../../db/archive-browser.repository.ts";
import { SEARCH_KINDS, type SearchKind, searchPage as searchArchivePage } from "../../search/search.ts";
import { originalKeyOf } from "../../storage/links.ts";
import { openBlobStore } from "../../storage/store.ts";
import { collectStatus } from "../../status/collect.ts";
import { APP_CSS, APP_JS, LOGO_SVG } from "../assets.ts";
import { type DashboardContext, publicBase } from "../context.ts";
import { FILE_CSP, one, sendPage } from "../respond.ts";
import { urlBoxesFor } from "./track.ts";
import { decodeCursor, encodeCursor } from "../browse-cursor.ts";
import { sendBlob } from "../send-blob.ts";
import { singleFlight } from "../single-flight.ts";
import { commentsOf } from "./reading.ts";
import { archivePage } from "../pages/archive.ts";
import { itemPage } from "../pages/item.ts";
import { messagePage } from "../pages/jobs.ts";
import { overviewPage } from "../pages/overview.ts";
import { searchPage } from "../pages/search.ts";
import { PLACEHOLDER_SVG, TEXT_SVG } from "../pages/svg.ts";
import { type ArchiveFilter, filterQuery, ITEM_TYPES } from "../pages/archive.ts";
import { queryString } from "../pages/layout.ts";

const PAGE_SIZE = 48;
/** The grid counts a filter's works up to this many (boundedMonthCounts); past it the page says "more than". */
export const COUNT_BOUND = 10_000;
const SEARCH_PAGE_SIZE = 25;
/** The search page ranks the newest this many hits (src/db/search.repository.ts): a common word's are never all ranked. */
export const SEARCH_BOUND = 1000;

function pageNumber(value: string | undefined): number {
  return Math.max(1, Math.min(10_000, Number.parseInt(value ?? "1", 10) || 1));
}

/** The first instant (UTC) of a YYYY, YYYY-MM or YYYY-MM-DD, or of the period after it (`end`: the range's end is included). */
export function dateBound(value: string, end: boolean): Date | undefined {
  const m = /^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$/.exec(value);
  if (!m) return undefined;
  const [y, mo, d] = [Number(m[1]), m[2] ? Number(m[2]) : undefined, m[3] ? Number(m[3]) : undefined];
  if ((mo !== undefined && (mo < 1 || mo > 12)) || (d !== undefined && (d < 1 || d > 31))) return undefined;
  if (y < 1) return undefined;
  // setUTCFullYear, not Date.UTC: that reads years 0–99 as 1900–1999 (0050 would filter from 1950).
  const at = new Date(0);
  at.setUTCFullYear(y, (mo ?? 1) - 1, d ?? 1);
  if (d !== undefined && at.getUTCDate() !== d) return undefined;
  if (end) {
    if (d !== undefined) at.setUTCDate(at.getUTCDate() + 1);
    else if (mo !== undefined) at.setUTCMonth(at.getUTCMonth() + 1);
    else at.setUTCFullYear(at.getUTCFullYear() + 1);
  }
  return at;
}

/** The grid's filters from a query (the archive and an item's previous/next), with a line for each one ignored. */
export function readFilter(query: Record<string, unknown>): { filter: ArchiveFilter; browse: BrowseFilters; notices: string[] } {
  const notices: string[] = [];
  const typeParam = one(query.type);
  const type = typeParam && (ITEM_TYPES as readonly string[]).includes(typeParam) ? typeParam : undefined;
  if (typeParam && !type) notices.push(`Type “${typeParam}” is not one of ${ITEM_TYPES.join(", ")}; showing every type.`);
  const date = (name: "from" | "to") => {
    const value = one(query[name]);
    const at = value ? dateBound(value, name === "to") : undefined;
    if (value && !at) notices.push(`“${name}” ${value} is not a date like 2024, 2024-03 or 2024-03-15; ignored.`);
    return at ? { value, at } : undefined;
  };
  const from = date("from");
  const to = date("to");
  const filter: ArchiveFilter = {
    artist: one(query.artist),
    folder: one(query.folder),
    collection: one(query.collection),
    archived: one(query.archived) === "1",
    notFull: one(query.notfull) === "1",
    type,
    tag: one(query.tag)?.replace(/^#/, "") || undefined,
    from: from?.value,
    to: to?.value,
  };
  const browse: BrowseFilters = {
    artist: filter.artist,
    folder: filter.folder,
    collection: filter.collection,
    archivedOnly: filter.archived,
    notFull: filter.notFull,
    type: filter.type,
    tag: filter.tag,
    from: from?.at,
    until: to?.at,
  };
  return { filter, browse, notices };
}

/** Whether a month ('YYYY-MM', null: undated) is within the filter's whole-month (or year) range. */
function inRange(filter: ArchiveFilter, m: string | null): boolean {
  return m === null
    ? !filter.from
    : (!filter.from || m >= filter.from.slice(0, 7)) && (!filter.to || m <= `${filter.to.slice(0, 4)}-${filter.to.slice(5, 7) || "12"}`);
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
    }).catch((err: unknown) => {
      // The storage failed the read (a bucket down, a disk error): a 503 that says so, not the 500 of dvault failing.
      if (res.headersSent) return void res.destroy();
      ctx.log.warn({ err, downloadId }, "dashboard: the archive's storage failed a file's read");
      res.removeHeader("Content-Disposition");
      res.status(503).set({ "Cache-Control": "no-store", "Retry-After": "30" }).type("text");
      res.send(`the archive's storage did not answer for this file (${storageWhy(err)}); it is not lost: try again once the storage answers\n`);
    });
  };
}

/** A storage failure's code or first line, for a person (no path of the server's, no stack). */
function storageWhy(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof e?.code === "string" && /^[A-Z_]{3,20}$/.test(e.code)) return e.code;
  return typeof e?.name === "string" && e.name !== "Error" ? e.name.slice(0, 60) : "an error";
}

/** /archive?q=: a page of search hits, ranked among the newest SEARCH_BOUND. */
async function sendSearch(ctx: DashboardContext, req: Request, res: Response, q: string): Promise<void> {
  const typeParam = one(req.query.type);
  const type = typeParam && (SEARCH_KINDS as readonly string[]).includes(typeParam) ? (typeParam as SearchKind) : undefined;
  const page = pageNumber(one(req.query.page));
  const found = await searchArchivePage(ctx.deps.pool, {
    text: q,
    type,
    user: one(req.query.artist),
    limit: SEARCH_PAGE_SIZE,
    offset: (page - 1) * SEARCH_PAGE_SIZE,
    archiveDir: ctx.config.archiveDir,
    countIgnored: true,
    bound: SEARCH_BOUND,
  });
  const files = await ctx.browser.bestFiles([...new Set(found.hits.map((h) => h.deviationid).filter((d): d is string => d !== null))]);
  sendPage(res, 200, searchPage({ query: q, type, ...found, page, pageSize: SEARCH_PAGE_SIZE, files }));
}

/** The overview (/): the status report, which counts the downloads and the stored files (src/status/collect.ts). */
function overviewRoute(app: express.Express, ctx: DashboardContext): void {
  const { deps, queues, now } = ctx;
  // A burst of overviews shares one report (single-flight.ts).
  const statusReport = singleFlight(
    (_: undefined) => "",
    () => collectStatus({ ...deps, queues, now }),
  );
  app.get("/", async (req, res) => {
    const report = await statusReport(undefined);
    const actions = deps.actions ? { csrf: ctx.csrf.tokenFor(req, res), notice: ctx.csrf.noticeOf(req) } : undefined;
    const feeds = await ctx.feeds.links(publicBase(ctx, req), [
      { title: "dvault: new in the archive", feed: { kind: "arrivals" } },
      { title: "dvault: notifications", feed: { kind: "notifications" } },
    ]);
    sendPage(res, 200, overviewPage(report, actions, feeds, await urlBoxesFor(ctx, req, res)));
  });
}

export function archiveRoutes(app: express.Express, ctx: DashboardContext): void {
  const { browser } = ctx;

  overviewRoute(app, ctx);

  // What every request for the archive asks alike (the folders, the months and total of a filter): a burst
  // shares one read of each (single-flight.ts) while each reads its own page.
  const filterChoices = singleFlight(
    (_: undefined) => "",
    () => browser.filterChoices(),
  );
  const monthCounts = singleFlight(
    (f: Parameters<typeof browser.monthCounts>[0]) => JSON.stringify(f),
    (f) => browser.boundedMonthCounts(f, COUNT_BOUND),
  );

  app.get("/archive", async (req, res) => {
    const q = one(req.query.q);
    if (q) return sendSearch(ctx, req, res, q);
    const pageNo = pageNumber(one(req.query.page));
    const { filter, browse, notices } = readFilter(req.query);
    // One paging model: a cursor (after= the next page, before= the previous) carries the place and its
    // position; page= (older links) is read past an offset.
    const after = decodeCursor(one(req.query.after));
    const before = after ? undefined : decodeCursor(one(req.query.before));
    const dated = Boolean(browse.from || browse.until);
    // The scrubber lists every month of the filter without its dates; the total is theirs within the range when
    // the range is whole months (or years), else counted once more with the range. Past COUNT_BOUND works a
    // filter's months are not counted (boundedMonthCounts): the page says "more than", and the scrubber offers the
    // archive's months without counts; a whole-month range of such a filter is counted apart.
    const monthAligned = [filter.from, filter.to].every((d) => !d || d.length <= 7);
    const [choices, found, months, rangeMonths] = await Promise.all([
      filterChoices(undefined),
      browser.recentItems({ ...browse, limit: PAGE_SIZE, offset: (pageNo - 1) * PAGE_SIZE, after, before }),
      monthCounts({ ...browse, from: undefined, until: undefined }),
      dated && !monthAligned ? monthCounts(browse) : undefined,
    ]);
    const counted = !dated ? months : monthAligned ? (months?.filter((m) => inRange(filter, m.month)) ?? (await monthCounts(browse))) : rangeMonths;
    const total = counted?.reduce((sum, m) => sum + m.items, 0) ?? COUNT_BOUND;
    // Read back to the newest item, the page starts the listing, whatever the cursor's (older) position said.
    const first = after
      ? (after.pos || (pageNo - 1) * PAGE_SIZE) + 1
      : before
        ? found.hasMore
          ? Math.max(1, before.pos - found.items.length)
          : 1
        : (pageNo - 1) * PAGE_SIZE + 1;
    const hasNext = before ? found.items.length > 0 : found.hasMore;
    const hasPrev = before ? found.hasMore : first > 1;
    const last = found.items.at(-1);
    const head = found.items[0];
    const feeds = await ctx.feeds.links(publicBase(ctx, req), [
      filter.artist
        ? { title: `dvault: ${filter.artist}`, feed: { kind: "artist", username: filter.artist } }
        : { title: "dvault: new in the archive", feed: { kind: "arrivals" } },
    ]);
    return sendPage(
      res,
      200,
      archivePage({
        filter,
        choices,
        months: months ?? (await monthCounts({})) ?? [],
        monthsCounted: months !== undefined,
        items: found.items,
        first,
        page: pageNo,
        pageSize: PAGE_SIZE,
        total,
        more: counted === undefined,
        feeds,
        notices,
        next: hasNext && last ? encodeCursor(cursorOf(last), first + found.items.length - 1) : undefined,
        prev: hasPrev && head ? encodeCursor(cursorOf(head), first) : undefined,
      }),
    );
  });

  app.get("/item/:id", async (req, res) => {
    const item = await browser.item(String(req.params.id));
    if (!item) return sendPage(res, 404, messagePage(404, "Not in the archive", "No deviation with this id has been archived."));
    // Previous and next in the grid's order, under the filter the item was opened with: one keyset step each way.
    const { filter, browse } = readFilter(req.query);
    const at = cursorOf(item);
    const [newer, older] = await Promise.all([
      browser.recentItems({ ...browse, limit: 1, offset: 0, before: at }),
      browser.recentItems({ ...browse, limit: 1, offset: 0, after: at }),
    ]);
    const q = queryString(filterQuery(filter));
    const link = (it: { deviationid: string; title: string | null } | undefined) =>
      it && { href: `/item/${encodeURIComponent(it.deviationid)}${q}`, title: it.title };
    return sendPage(
      res,
      200,
      itemPage(
        item,
        { prev: link(newer.items[0]), next: link(older.items[0]), back: `/archive${q}` },
        await commentsOf(ctx, req, "deviation", [item.deviationid]),
        one(req.query.done),
      ),
    );
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
