// The Atom feeds, for feed readers: /feeds/<token>/arrivals.atom, /feeds/<token>/notifications.atom,
// /feeds/<token>/artists/<username>.atom, and the stored files and thumbnails their entries have linked under the
// same token (recorded as they are served: feed_linked_files, docs/schema.md). They are installed before the dashboard token's check (src/http/guards.ts), after the Host
// check: the feed token stands in for the dashboard's, and a wrong or revoked one gets the same 404 as a path
// that does not exist. The token is in the path, so every log line scrubs it (src/redact.ts).
import type express from "express";
import type { Request, RequestHandler, Response } from "express";
import type { StoredFileRef } from "../../db/archive-browser.repository.ts";
import { ArchiveFeedRepository } from "../../db/archive-feed.repository.ts";
import { FeedTokenRepository } from "../../db/feed-token.repository.ts";
import { type DashboardContext, publicBase } from "../context.ts";
import { sendPage } from "../respond.ts";
import { type AtomFeed, renderAtom } from "../feeds/atom.ts";
import { arrivalsFeed, artistFeed, FEED_ENTRIES, type FeedBase, linkedFile, notificationsFeed } from "../feeds/feed-documents.ts";
import { FEED_TOKEN_RE, type FeedScope, feedTokenHash, opensFeed, scopeOf } from "../feeds/feed-token.ts";
import { storedFileSender } from "./archive.ts";
import { thumbSender } from "./thumbs.ts";
import { feedsPage } from "../pages/feeds.ts";

const ATOM = "application/atom+xml; charset=utf-8";

function notFound(res: Response): void {
  res.status(404).type("text").send("not found\n");
}

export function feedRoutes(app: express.Express, ctx: DashboardContext): void {
  const tokens = new FeedTokenRepository(ctx.deps.pool);
  const feeds = new ArchiveFeedRepository(ctx.deps.pool);
  const sendFile = storedFileSender(ctx);
  const thumb = thumbSender(ctx);
  const now = () => new Date(ctx.now());

  /**
   * Runs `handler` when the path's token is live, with the token's scope; a 404 otherwise, logged without the
   * token (src/redact.ts scrubs it from the path). A token whose scope does not open what is asked gets the
   * same 404 from the handler.
   */
  const withToken =
    (handler: (req: Request, res: Response, at: FeedBase & { tokenId: number; scope: FeedScope | undefined }) => Promise<unknown>): RequestHandler =>
    async (req, res) => {
      const token = String(req.params.token);
      const live = FEED_TOKEN_RE.test(token) ? await tokens.useFeedToken(feedTokenHash(token), now()) : null;
      if (!live) {
        ctx.log.warn({ path: req.path }, "feed: unknown or revoked feed token refused");
        return notFound(res);
      }
      await handler(req, res, { base: publicBase(ctx, req), token, tokenId: live.id, scope: scopeOf(live.scope) });
    };
  /**
   * Answers with a feed, after noting the files its entries link under this token: those, and their
   * thumbnails, are what the token opens, for as long as it lives (a reader's cached entries keep working).
   */
  const sendAtom = async (res: Response, tokenId: number, feed: AtomFeed, entries: ReadonlyArray<{ file: StoredFileRef | null }>) => {
    const linked = entries.map((e) => linkedFile(e.file)).filter((f) => f !== null);
    await tokens.recordLinkedFiles(tokenId, linked, now());
    res.status(200).type(ATOM).send(renderAtom(feed));
  };

  app.get(
    "/feeds/:token/arrivals.atom",
    withToken(async (_req, res, at) => {
      if (!opensFeed(at.scope, { kind: "arrivals" })) return notFound(res);
      const entries = await feeds.newestArrivals({ limit: FEED_ENTRIES });
      return sendAtom(res, at.tokenId, arrivalsFeed(at, entries, now()), entries);
    }),
  );
  app.get(
    "/feeds/:token/notifications.atom",
    withToken(async (_req, res, at) => {
      if (!opensFeed(at.scope, { kind: "notifications" })) return notFound(res);
      const entries = await feeds.newestNotifications({ limit: FEED_ENTRIES });
      return sendAtom(res, at.tokenId, notificationsFeed(at, entries, now()), entries);
    }),
  );
  app.get(
    "/feeds/:token/artists/:file",
    withToken(async (req, res, at) => {
      const name = /^(.+)\.atom$/.exec(String(req.params.file))?.[1];
      const artist = name ? await feeds.userByName(name) : null;
      if (!artist || !opensFeed(at.scope, { kind: "artist", userid: artist.userid, username: artist.username })) return notFound(res);
      const entries = await feeds.newestArrivals({ authorUserid: artist.userid, limit: FEED_ENTRIES });
      return sendAtom(res, at.tokenId, artistFeed(at, artist, entries, now()), entries);
    }),
  );
  // A file or a thumbnail opens when a feed served under this token linked it, whatever the token's scope.
  app.get(
    "/feeds/:token/files/:id",
    withToken(async (req, res, at) => {
      const downloadId = String(req.params.id);
      if (!(await tokens.linksFile(at.tokenId, { downloadId }))) return notFound(res);
      return sendFile(req, res, downloadId);
    }),
  );
  app.get(
    "/feeds/:token/thumb/:variant/:file",
    withToken(async (req, res, at) => {
      const file = String(req.params.file);
      if (!(await tokens.linksFile(at.tokenId, { sha256: file.replace(/\.webp$/, "") }))) return notFound(res);
      return thumb(res, String(req.params.variant), file);
    }),
  );
  // Anything else under a token is answered here, so it never reaches the dashboard token's 401 (which would
  // tell a guesser that the path exists) and a typo of a feed's name looks like a wrong token.
  app.all(/^\/feeds\/[^/]+\/.*/, (_req, res) => notFound(res));
}

/** The dashboard's /feeds page (behind the dashboard token): the live tokens' feed URLs. */
export function feedPageRoutes(app: express.Express, ctx: DashboardContext): void {
  const feeds = new ArchiveFeedRepository(ctx.deps.pool);
  app.get("/feeds", async (req, res) => {
    const base = publicBase(ctx, req);
    const [tokens, artists, links] = await Promise.all([
      ctx.feeds.live(),
      feeds.followedArtists(),
      ctx.feeds.links(base, [
        { title: "dvault: new in the archive", feed: { kind: "arrivals" } },
        { title: "dvault: notifications", feed: { kind: "notifications" } },
      ]),
    ]);
    sendPage(res, 200, feedsPage({ base, fromPublicUrl: ctx.config.publicUrl !== undefined, tokens, artists, now: ctx.now(), feeds: links }));
  });
}
