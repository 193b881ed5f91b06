// bull-board at /queues, branded as dvault's (title, logo, a link back to the dashboard, dvault's colours and
// the system font stack), read-only: it shows the queues and their jobs, and offers no Retry, Promote, Clean,
// Remove, Add, Pause or Resume (its API answers those 405). Its Retry would run a failed download.file job again
// with fresh attempts, past the downloads table that decides when a file is tried (src/downloads/retry-now.ts);
// the dashboard's own /jobs page (src/http/routes/jobs.ts) and `dvault jobs` retry, pause and resume through
// QueueAdmin, which takes that path. Its page
// links Google's web fonts; a policy of its own (fonts and styles from this host only) keeps the browser from
// asking for them, so it works offline and tells no one what is open.
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
  const fonts = 'system-ui, -apple-system, "Segoe UI", Roboto, Ubuntu, sans-serif';
  createBullBoard({
    queues: QUEUE_NAMES.map((name) => new BullMQAdapter(queues.queue(name), { readOnlyMode: true })),
    serverAdapter: board,
    options: {
      uiConfig: {
        boardTitle: "dvault queues",
        boardLogo: { path: "/assets/logo.svg", width: 96, height: 24 },
        miscLinks: [{ text: "← dvault dashboard", url: "/" }],
        hideDocsLink: true,
        favIcon: { default: "/assets/logo.svg", alternative: "/assets/logo.svg" },
        theme: {
          light: { primary: "#0f766e", ring: "#2563eb", "font-sans": fonts, "font-mono": "ui-monospace, Menlo, Consolas, monospace" },
          dark: { primary: "#2dd4bf", ring: "#60a5fa", "font-sans": fonts, "font-mono": "ui-monospace, Menlo, Consolas, monospace" },
        },
      },
    },
  });
  const boardPolicy = (_req: Request, res: Response, next: NextFunction) => {
    res.set(
      "Content-Security-Policy",
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; font-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
    );
    next();
  };
  // A second lock behind read-only mode, for the writes bull-board still answers on a read-only board (its
  // pause-all and resume-all, which skip read-only queues) and any it adds later: its API takes no CSRF token of
  // ours, so a write needs proof it comes from the dashboard's own pages (browsers send Origin / Sec-Fetch-Site
  // on every PUT, POST and DELETE), or the bearer token (curl; a cookie alone is ambient and proves nothing). A
  // rebinding page is already refused by the Host check. Mounted with bull-board so every path that reaches it
  // passes here.
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
  app.use("/queues", boardPolicy, boardWrites, board.getRouter());
}
