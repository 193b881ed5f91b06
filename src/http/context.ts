// What every part of the dashboard shares: its dependencies (the worker's Services fit), the objects built
// once per app, and the public base of links that leave a page. How routes answer is src/http/respond.ts.
import type { Request } from "express";
import type { Coordinator } from "../coord/coordinator.ts";
import type { QueueBackend } from "../queue/backend.ts";
import type { TransportStats } from "../api/http.ts";
import type { Pacer } from "../api/pacer.ts";
import type { TokenManager } from "../api/token-manager.ts";
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

/** What the dashboard reads; the worker's Services fit. */
export type DashboardDeps = {
  config: Config;
  log: Logger;
  pool: PgPool;
  coord: Coordinator;
  /** Where the queues live (src/queue/backend.ts). */
  queues: QueueBackend;
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

/** The absolute base of links that leave the page (feeds): DVAULT_PUBLIC_URL, else the address asked, whose Host passed the host check. */
export function publicBase(ctx: Pick<DashboardContext, "config">, req: Request): string {
  return ctx.config.publicUrl ?? `${req.protocol}://${req.get("host")}`;
}
