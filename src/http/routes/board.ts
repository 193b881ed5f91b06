// bull-board at /queues, with its writes locked to the dashboard's own pages or the bearer token.
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { ExpressAdapter } from "@bull-board/express";
import type express from "express";
import type { NextFunction, Request, Response } from "express";
import { QUEUE_NAMES } from "../../queue/queues.ts";
import type { DashboardContext } from "../context.ts";
import { bearerToken, SAFE_METHODS, sameSecret } from "../guards.ts";

export function boardRoutes(app: express.Express, ctx: DashboardContext): void {
  const { log, token, queues, provenance } = ctx;
  const board = new ExpressAdapter();
  board.setBasePath("/queues");
  createBullBoard({ queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queues.queue(name))), serverAdapter: board });
  // bull-board's API changes queues without a CSRF token of ours, so its writes need proof they come from the
  // dashboard's own pages (browsers send Origin / Sec-Fetch-Site on every PUT, POST and DELETE), or the
  // bearer token (curl; a cookie alone is ambient and proves nothing). A rebinding page is already refused by
  // the Host check; this is the second lock. Mounted with bull-board so every path that reaches it passes here.
  const boardWrites = (req: Request, res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method) || provenance(req) === "same") return next();
    const given = bearerToken(req);
    if (token && given && sameSecret(given, token)) return next();
    log.warn({ method: req.method, path: req.originalUrl.split("?")[0] }, "dashboard: bull-board change without a same-origin browser or the token refused");
    return res
      .status(403)
      .type("text")
      .send(`dvault: bull-board changes queues only from the dashboard's own pages${token ? " or with Authorization: Bearer <DVAULT_HTTP_TOKEN>" : ""}\n`);
  };
  app.use("/queues", boardWrites, board.getRouter());
}
