// The Atom feeds, for feed readers: /feeds/<token>/arrivals.atom, /feeds/<token>/notifications.atom,
// /feeds/<token>/artists/<username>.atom, and the stored files and thumbnails their entries link to under the
// same token. They are installed before the dashboard token's check (src/http/guards.ts), after the Host
// check: the feed token stands in for the dashboard's, and a wrong or revoked one gets the same 404 as a path
// that does not exist. The token is in the path, so every log line scrubs it (src/redact.ts).
import path from "node:path";
import type express from "express";
import type { Request, RequestHandler, Response } from "express";
import { ArchiveFeedRepository } from "../../db/archive-feed.repository.ts";
import { FeedTokenRepository } from "../../db/feed-token.repository.ts";
import { type DashboardContext, publicBase, sendPage } from "../context.ts";
import { renderAtom } from "../feeds/atom.ts";
import { arrivalsFeed, artistFeed, FEED_ENTRIES, type FeedBase, notificationsFeed } from "../feeds/feed-documents.ts";
import { FEED_TOKEN_RE, feedTokenHash } from "../feeds/feed-token.ts";
import { sendStoredFile } from "./archive.ts";
import { thumbSender } from "./thumbs.ts";
import { feedsPage } from "../pages/feeds.ts";

const ATOM = "application/atom+xml; charset=utf-8";

function notFound(res: Response): void {
  res.status(404).type("text").send("not found\n");
}

export function feedRoutes(app: express.Express, ctx: DashboardContext): void {
  const tokens = new FeedTokenRepository(ctx.deps.pool);
  const feeds = new ArchiveFeedRepository(ctx.deps.pool);
  const archiveRoot = path.resolve(ctx.config.archiveDir);
  const thumb = thumbSender(ctx);

  /** Runs `handler` when the path's token is live; a 404 otherwise, logged without the token (scrubbed). */
  const withToken =
    (handler: (req: Request, res: Response, at: FeedBase) => Promise<unknown>): RequestHandler =>
    async (req, res) => {
      const token = String(req.params.token);
      const live = FEED_TOKEN_RE.test(token) ? await tokens.useFeedToken(feedTokenHash(token), new Date(ctx.now())) : null;
      if (!live) {
        ctx.log.warn({ path: req.path }, "feed: unknown or revoked feed token refused");
        return notFound(res);
      }
      await handler(req, res, { base: publicBase(ctx, req), token });
    };
  const sendAtom = (res: Response, body: string) => res.status(200).type(ATOM).send(body);

  app.get(
    "/feeds/:token/arrivals.atom",
    withToken(async (_req, res, at) => sendAtom(res, renderAtom(arrivalsFeed(at, await feeds.newestArrivals({ limit: FEED_ENTRIES }), new Date(ctx.now()))))),
  );
  app.get(
    "/feeds/:token/notifications.atom",
    withToken(async (_req, res, at) =>
      sendAtom(res, renderAtom(notificationsFeed(at, await feeds.newestNotifications({ limit: FEED_ENTRIES }), new Date(ctx.now())))),
    ),
  );
  app.get(
    "/feeds/:token/artists/:file",
    withToken(async (req, res, at) => {
      const name = /^(.+)\.atom$/.exec(String(req.params.file))?.[1];
      const artist = name ? await feeds.userByName(name) : null;
      if (!artist) return notFound(res);
      const arrivals = await feeds.newestArrivals({ authorUserid: artist.userid, limit: FEED_ENTRIES });
      return sendAtom(res, renderAtom(artistFeed(at, artist, arrivals, new Date(ctx.now()))));
    }),
  );
  app.get(
    "/feeds/:token/files/:id",
    withToken((req, res) => sendStoredFile(res, { browser: ctx.browser, archiveRoot, downloadId: String(req.params.id) })),
  );
  app.get(
    "/feeds/:token/thumb/:variant/:file",
    withToken((req, res) => thumb(res, String(req.params.variant), String(req.params.file))),
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
