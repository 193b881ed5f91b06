// The reading pages (src/http/pages/reading.ts, artists.ts): notes, messages, comments, statuses, the watch feed,
// journals and literature, artists. Read-only GETs behind the same guards and route gate as the archive; lists page
// by keyset cursor (`after=`), and an unknown id is a 404 page, a cursor that does not read back a 400.
import type express from "express";
import type { Request, Response } from "express";
import { type CommentPlace, type ListCursor, ReadingRepository } from "../../db/reading.repository.ts";
import type { SafeHtml } from "../../text/html.ts";
import { type DashboardContext, publicBase } from "../context.ts";
import { one, sendPage } from "../respond.ts";
import { urlBoxesFor } from "./track.ts";
import { messagePage } from "../pages/jobs.ts";
import { artistPage, artistsPage, NOT_ARCHIVED_SHOWN, STATUSES_SHOWN } from "../pages/artists.ts";
import {
  commentThread,
  embeddedSrcs,
  MESSAGE_KINDS,
  MESSAGES_PAGE_SIZE,
  type MessageBox,
  messagePageOne,
  messagesPage,
  noteThreadPage,
  notesPage,
  readingPage,
  stackPage,
  statusPage,
  type Works,
  watchPage,
} from "../pages/reading.ts";
import { decodeListCursor, encodeListCursor, pageOf } from "../reading-cursor.ts";

const NOTES_PAGE_SIZE = 50;
const WATCH_PAGE_SIZE = 30;
const ARTISTS_PAGE_SIZE = 100;
const WORKS_PAGE_SIZE = 24;
/** Comments shown under one subject at once: a longer thread is read a page at a time (`comments_from=`). */
export const COMMENTS_PAGE_SIZE = 500;
/** The query parameter of a comments page: the cursor of its first comment (src/http/reading-cursor.ts). */
const COMMENTS_FROM = "comments_from";

const notFound = (res: Response, what: string) => sendPage(res, 404, messagePage(404, "Not in the archive", `No ${what} with this id has been archived.`));
const badCursor = (res: Response, path: string) =>
  sendPage(res, 400, messagePage(400, "Bad page address", `The after= of this address is not one dvault wrote: start again from ${path}.`));

/** The comments on a subject as threads (the item page shows them under a work: src/http/routes/archive.ts). */
/**
 * The comments on a subject as threads, a page of COMMENTS_PAGE_SIZE from the `comments_from=` of the page's address
 * (the first page without it), with their total and links to the first and the next page: a thread of 501 shows
 * that it has more, never 500 as if they were all. A cursor dvault did not write starts from the first, saying so.
 */
export async function commentsOf(
  ctx: Pick<DashboardContext, "deps">,
  req: Request,
  kind: CommentPlace["subjectKind"],
  ids: string[],
  heading?: string,
): Promise<SafeHtml> {
  const repo = new ReadingRepository(ctx.deps.pool);
  const decoded = decodeListCursor(one(req.query[COMMENTS_FROM]));
  const from = decoded === "bad" ? undefined : decoded;
  const [rows, counts] = await Promise.all([repo.comments(kind, ids, from, COMMENTS_PAGE_SIZE + 1), repo.commentCounts(kind, ids, from)]);
  const shown = rows.slice(0, COMMENTS_PAGE_SIZE);
  const extra = rows[COMMENTS_PAGE_SIZE];
  const at = (cursor: string | undefined) => {
    const url = new URL(req.originalUrl, "http://dashboard.invalid");
    if (cursor === undefined) url.searchParams.delete(COMMENTS_FROM);
    else url.searchParams.set(COMMENTS_FROM, cursor);
    return `${url.pathname}${url.search}#comments`;
  };
  return commentThread(shown, heading, {
    total: counts.total,
    firstShown: from ? counts.before + 1 : 1,
    first: from ? at(undefined) : undefined,
    next: extra ? at(encodeListCursor({ key: extra.key, id: extra.commentid })) : undefined,
    badCursor: decoded === "bad",
  });
}

/**
 * A subject's page at one of its comments (`ids` as that page reads them): the anchor alone when the comment is on
 * the first page of comments, else the comments page that starts at it.
 */
async function atComment(repo: ReadingRepository, place: CommentPlace, ids: string[], page: string, commentid: string): Promise<string> {
  const anchor = `#c-${encodeURIComponent(commentid)}`;
  const cursor = await repo.commentCursor(commentid);
  if (!cursor || (await repo.commentCounts(place.subjectKind, ids, cursor)).before < COMMENTS_PAGE_SIZE) return `${page}${anchor}`;
  return `${page}?${COMMENTS_FROM}=${encodeListCursor(cursor)}${anchor}`;
}

/** The address of the page a comment was written on, at the comment (the artists' list for a profile's lost artist). */
async function commentPage(repo: ReadingRepository, id: string): Promise<string | undefined> {
  const place = await repo.commentPlace(id);
  if (!place) return undefined;
  const subject = encodeURIComponent(place.subjectId);
  if (place.subjectKind === "status") return atComment(repo, place, [place.subjectId], `/statuses/${subject}`, id);
  if (place.subjectKind === "profile") {
    const artist = place.username ? await repo.artist(place.username) : undefined;
    return artist ? atComment(repo, place, [artist.userid, artist.username], `/artists/${encodeURIComponent(artist.username)}`, id) : "/artists";
  }
  const reading = await repo.reading(place.subjectId);
  const kind = reading?.type === "journal" || reading?.type === "literature" ? "read" : "item";
  return atComment(repo, place, [place.subjectId], `/${kind}/${subject}`, id);
}

export function readingRoutes(app: express.Express, ctx: DashboardContext): void {
  const repo = new ReadingRepository(ctx.deps.pool);

  /** The cards and best files of the works a page shows as tiles. */
  const works = async (ids: readonly string[]): Promise<Works> => {
    const unique = [...new Set(ids)];
    const [cards, files] = await Promise.all([repo.works(unique), ctx.browser.bestFiles(unique)]);
    return { cards: new Map(cards.map((c) => [c.deviationid, c])), files };
  };

  /** The cursor of the request, or undefined after answering 400. */
  const cursorOf = (req: express.Request, res: Response, path: string, timeKey = true): { cursor: ListCursor | undefined } | undefined => {
    const c = decodeListCursor(one(req.query.after), timeKey);
    if (c === "bad") {
      badCursor(res, path);
      return undefined;
    }
    return { cursor: c };
  };

  app.get("/notes", async (req, res) => {
    const at = cursorOf(req, res, "/notes");
    if (!at) return;
    const flagParam = one(req.query.flag);
    const flag = flagParam === "sent" || flagParam === "received" || flagParam === "unread" || flagParam === "starred" ? flagParam : undefined;
    const folder = one(req.query.folder);
    const [folders, rows] = await Promise.all([repo.noteFolders(), repo.notes({ folder, flag }, at.cursor, NOTES_PAGE_SIZE + 1)]);
    const { rows: notes, next } = pageOf(rows, NOTES_PAGE_SIZE, (n) => n.noteid);
    sendPage(res, 200, notesPage({ folders, folder, flag, notes, next, deep: Boolean(at.cursor) }));
  });

  app.get("/notes/:id", async (req, res) => {
    const id = String(req.params.id);
    const thread = await repo.noteThread(id);
    if (thread.length === 0) return notFound(res, "note");
    return sendPage(res, 200, noteThreadPage(thread, id));
  });

  app.get("/messages", async (req, res) => {
    const at = cursorOf(req, res, "/messages");
    if (!at) return;
    const kind = one(req.query.kind);
    const box = (Object.entries(MESSAGE_KINDS) as Array<[MessageBox, string]>).find(([k, label]) => kind === k || kind === label)?.[0];
    const rows = await repo.messages(box, at.cursor, MESSAGES_PAGE_SIZE + 1);
    const { rows: messages, next } = pageOf(rows, MESSAGES_PAGE_SIZE, (m) => m.messageid);
    sendPage(res, 200, messagesPage({ box, messages, next, deep: Boolean(at.cursor) }));
  });

  app.get("/messages/stack/:id", async (req, res) => {
    const id = String(req.params.id);
    const messages = await repo.stack(id, MESSAGES_PAGE_SIZE + 1);
    if (messages.length === 0) return notFound(res, "message stack");
    return sendPage(res, 200, stackPage(id, messages));
  });

  app.get("/messages/:id", async (req, res) => {
    const m = await repo.message(String(req.params.id));
    if (!m) return notFound(res, "message");
    return sendPage(res, 200, messagePageOne(m));
  });

  // A comment opens the page of what it was written on, at the comment.
  app.get("/comments/:id", async (req, res) => {
    const to = await commentPage(repo, String(req.params.id));
    return to ? res.redirect(303, to) : notFound(res, "comment");
  });

  app.get("/statuses/:id", async (req, res) => {
    const s = await repo.status(String(req.params.id));
    if (!s) return notFound(res, "status");
    const [shared, comments] = await Promise.all([works(s.sharedDeviationids), commentsOf(ctx, req, "status", [s.statusid])]);
    return sendPage(res, 200, statusPage(s, shared, comments));
  });

  app.get("/watch", async (req, res) => {
    const at = cursorOf(req, res, "/watch");
    if (!at) return;
    const rows = await repo.watchFeed(at.cursor, WATCH_PAGE_SIZE + 1);
    const { rows: items, next } = pageOf(rows, WATCH_PAGE_SIZE, (i) => i.itemid);
    const statusIds = [...new Set(items.map((i) => i.statusid).filter((s): s is string => Boolean(s)))];
    const statuses = new Map((await Promise.all(statusIds.map((id) => repo.status(id)))).filter((s) => s !== undefined).map((s) => [s.statusid, s]));
    const all = await works([...items.flatMap((i) => i.deviationids), ...[...statuses.values()].flatMap((s) => s.sharedDeviationids)]);
    sendPage(res, 200, watchPage({ items, works: all, statuses, next, deep: Boolean(at.cursor) }));
  });

  app.get("/read/:id", async (req, res) => {
    const d = await repo.reading(String(req.params.id));
    if (!d) return notFound(res, "journal or literature");
    if (d.type !== "journal" && d.type !== "literature") return res.redirect(303, `/item/${encodeURIComponent(d.deviationid)}`);
    // The embedded pictures the archive holds a file of show as its thumbnail; the others become links.
    const bySrc = d.authorUserid ? await repo.embeddedWorks(d.authorUserid, embeddedSrcs(d.html)) : new Map<string, string>();
    const files = await ctx.browser.bestFiles([...new Set(bySrc.values())]);
    const local = new Map<string, string>();
    for (const [src, id] of bySrc) {
      const sha = files.get(id)?.sha256;
      if (sha && /^[0-9a-f]{64}$/.test(sha)) local.set(src, sha);
    }
    return sendPage(res, 200, readingPage(d, local, await commentsOf(ctx, req, "deviation", [d.deviationid])));
  });

  app.get("/artists", async (req, res) => {
    const at = cursorOf(req, res, "/artists", false);
    if (!at) return;
    const rows = await repo.artists(at.cursor, ARTISTS_PAGE_SIZE + 1);
    const { rows: artists, next } = pageOf(rows, ARTISTS_PAGE_SIZE, (a) => a.userid);
    const boxes = await urlBoxesFor(ctx, req, res);
    sendPage(res, 200, artistsPage({ artists, next, deep: Boolean(at.cursor), boxes, notice: one(req.query.done) }));
  });

  app.get("/artists/:username", async (req, res) => {
    const username = String(req.params.username);
    const at = cursorOf(req, res, `/artists/${encodeURIComponent(username)}`);
    if (!at) return;
    const artist = await repo.artist(username);
    if (!artist) return notFound(res, "artist");
    const [workRows, folders, notArchived, shortfalls, statuses, comments, feeds] = await Promise.all([
      repo.worksBy(artist.userid, at.cursor, WORKS_PAGE_SIZE + 1),
      repo.artistFolders(artist.userid),
      repo.notArchived(artist.userid, NOT_ARCHIVED_SHOWN + 1),
      repo.shortfalls(artist.userid),
      repo.statusesBy(artist.userid, STATUSES_SHOWN + 1),
      commentsOf(ctx, req, "profile", [artist.userid, artist.username], "Comments on the profile"),
      ctx.feeds.links(publicBase(ctx, req), [{ title: `dvault: ${artist.username}`, feed: { kind: "artist", username: artist.username } }]),
    ]);
    const { rows: shown, next } = pageOf(workRows, WORKS_PAGE_SIZE, (w) => w.deviationid);
    const all = await works([...shown.map((w) => w.deviationid), ...statuses.flatMap((s) => s.sharedDeviationids)]);
    sendPage(
      res,
      200,
      artistPage({
        artist,
        works: { ids: shown.map((w) => w.deviationid), all, next, deep: Boolean(at.cursor) },
        folders,
        notArchived,
        shortfalls,
        statuses,
        comments,
        feeds,
        notice: one(req.query.done),
      }),
    );
  });
}
