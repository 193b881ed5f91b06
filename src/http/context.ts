// What every part of the dashboard shares: its dependencies (the worker's Services fit), the objects built
// once per app, and the small helpers each route module uses.
import type { Request, Response } from "express";
import type { Redis } from "ioredis";
import type { TransportStats } from "../api/http.ts";
import type { Pacer } from "../api/pacer.ts";
import type { TokenManager } from "../api/tokens.ts";
import type { Config } from "../config.ts";
import type { AccountRepository } from "../db/account.repository.ts";
import type { ArchiveBrowserRepository } from "../db/archive-browser.repository.ts";
import type { DashboardRepository } from "../db/dashboard.repository.ts";
import type { PgPool } from "../db/connect.ts";
import type { Logger } from "../log.ts";
import type { Services } from "../services.ts";
import type { DownloadRetry, QueueAdmin } from "../queue/queue-admin.ts";
import type { AnswerCounts } from "./answer-counts.ts";
import type { Csrf } from "./csrf.ts";
import type { FeedAdverts } from "./feeds/feed-adverts.ts";
import type { Provenance } from "./guards.ts";
import { themeOf, withTheme } from "./theme.ts";

/** What the dashboard reads; the worker's Services fit. */
export type DashboardDeps = {
  config: Config;
  log: Logger;
  pool: PgPool;
  redis: Redis;
  accounts: AccountRepository;
  pacer: Pacer;
  apiTotals: TransportStats;
  tokens?: (() => TokenManager) | undefined;
  /** A user account's API access (the Track and Add boxes ask the service); the worker's Services give it. */
  apiFor?: Services["apiFor"] | undefined;
  now?: () => number;
  /** Retries a failed download through the downloads table (src/downloads/retry-now.ts); the worker gives it. */
  retryDownload?: DownloadRetry | undefined;
  /** "Sync now" and "Download now": jobs queued through the Producer (the worker gives them); no buttons without. */
  actions?: DashboardActions | undefined;
};

/** What the dashboard's buttons start; each returns how many jobs it queued. */
export type DashboardActions = {
  /** A sync.source job for every source of every usable account, or of one (src/sync/sync-now.ts). */
  syncNow(accountId?: number): Promise<number>;
  /** A downloads.enqueue job: the due downloads handed to the downloads queue. */
  downloadNow(): Promise<number>;
  /** The tracked source's run of each of these users of the account (src/sync/sync-now.ts). */
  syncTracked?(accountId: number, usernames: readonly string[]): Promise<number>;
  /** The download.file jobs of these works' wanted files, claimed for the account (src/downloads/enqueue-due.ts). */
  downloadWorks?(accountId: number, deviationids: readonly string[]): Promise<number>;
};

/** Built once per app and handed to each route module. */
export type DashboardContext = {
  deps: DashboardDeps;
  config: Config;
  log: Logger;
  /** DVAULT_HTTP_TOKEN, when the dashboard requires one. */
  token: string | undefined;
  now: () => number;
  queues: QueueAdmin;
  browser: ArchiveBrowserRepository;
  dashboard: DashboardRepository;
  provenance: Provenance;
  csrf: Csrf;
  /** The live feed tokens' URLs, for the pages that advertise a feed and the feeds page. */
  feeds: FeedAdverts;
  /** What the dashboard answered, per route and outcome (/metrics). */
  answers: AnswerCounts;
};

// Scripts only from dvault itself (/assets/app.<hash>.js): no inline script, no eval; style attributes stay
// allowed for the progress bars' widths.
const PAGE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; img-src 'self'; style-src 'self' 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/**
 * Every other answer (JSON, Atom, text, a redirect, a refusal): nothing loads, runs or frames it. Set before
 * any route (src/http/guards.ts), so no path goes without a policy; pages and files replace it with theirs.
 */
export const ANSWER_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
/** For archived files and the static images: nothing runs, even in an SVG opened on its own. */
export const FILE_CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";

/**
 * Sends one of dvault's pages with the page policy, in the theme the browser chose (src/http/theme.ts);
 * `formTargets` are origins a form of the page may lead to besides the dashboard (browsers check the redirect a
 * form's POST answers with too: Connect's to the service).
 */
export function sendPage(res: Response, status: number, body: string, formTargets: readonly string[] = []): void {
  const csp = formTargets.length ? PAGE_CSP.replace("form-action 'self'", `form-action 'self' ${formTargets.join(" ")}`) : PAGE_CSP;
  res
    .status(status)
    .set("Content-Security-Policy", csp)
    .type("html")
    .send(withTheme(body, themeOf(res.req)));
}

/** One trimmed, non-empty value of a query or form field. */
export function one(value: unknown): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

/** The absolute base of links that leave the page (feeds): DVAULT_PUBLIC_URL, else the address asked, whose Host passed the host check. */
export function publicBase(ctx: Pick<DashboardContext, "config">, req: Request): string {
  return ctx.config.publicUrl ?? `${req.protocol}://${req.get("host")}`;
}
