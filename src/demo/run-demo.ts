// `dvault demo`: the whole pipeline on a fresh machine with no credentials. The built-in simulator plays
// the service; the real code runs against it: OAuth code flow with PKCE, a full sync, the downloads
// (quota deferral included), a digest preview. Its own database, Redis prefix and archive directory.
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import got from "got";
import { DEFAULT_SCOPES, interactiveLogin, OAuthClient } from "../api/oauth.ts";
import { whoami } from "../api/account-calls.ts";
import { loadConfig, type Config } from "../config.ts";
import { ArchiveCountsRepository } from "../db/archive-counts.repository.ts";
import { dropDatabase } from "../db/connect.ts";
import { migrate } from "../db/migrate.ts";
import { WatchRepository } from "../db/watch.repository.ts";
import { pgFields, withDatabase } from "../db/pg-fields.ts";
import type { Logger } from "../log.ts";
import { previewDigest } from "../digest/preview.ts";
import { downloadDepsFor } from "../downloads/deps.ts";
import { runDownloadsOnce, type DownloadSummary } from "../downloads/run-once.ts";
import type { QueueBackend } from "../queue/backend.ts";
import { QueueAdmin } from "../queue/queue-admin.ts";
import { deleteKeysByPrefix } from "../queue/redis.ts";
import { createServices, type Services } from "../services.ts";
import type { DatasetOptions } from "../simulator/dataset.ts";
import { startSimulator, type Simulator } from "../simulator/server.ts";
import { type BackfillResult, backfillThumbnails, Thumbnails } from "../storage/thumbnails.ts";
import { SOURCES } from "../sync/sources/index.ts";
import { freePort } from "../free-port.ts";
import { formatBytes } from "../text/bytes.ts";
import { plural } from "../text/plural.ts";
import { claimDemoDir, DEMO_MARK, type InstallFolders } from "./demo-dir.ts";
import { DEMO_SERVER_DIR } from "./servers.ts";
import { syncHere, type DemoSyncRow } from "./sync-here.ts";

export const DEMO_CLIENT_ID = "1001";
export const DEMO_CLIENT_SECRET = "sim-secret-1001";

export type DemoOptions = {
  /** Base configuration: the demo keeps its server addresses and engine and replaces the rest. */
  config: Config;
  /** The config's database is the demo's own, on its own embedded server (src/demo/servers.ts): used as it is. */
  ownDatabase?: boolean;
  log: Logger;
  /** Where the demo's archive, digests and key live. */
  dir: string;
  /**
   * The install's own folders as its settings name them, which the demo's folder must keep apart from
   * (src/demo/demo-dir.ts); `config`'s when not given (its data folder is the demo's own server's when it runs one).
   */
  install?: InstallFolders;
  /** Deviations in the simulated account. */
  deviations?: number;
  /** The rest of the simulated account's size, for a benchmark over the demo (bench/dashboard-pages.ts). */
  dataset?: Omit<DatasetOptions, "deviations">;
  /** Where its lines go: the CLI's printer (src/cli/output/print.ts), which escapes what the simulator made up. */
  out: (line: string) => void;
};

export type DemoReport = {
  databaseUrl: string;
  archiveDir: string;
  /** The demo's own Redis prefix: a command pointed at the demo needs it (DVAULT_REDIS_PREFIX). */
  redisPrefix: string;
  dir: string;
  digestPath: string | undefined;
  account: string;
  sync: DemoSyncRow[];
  counts: Record<string, number>;
  downloads: DownloadSummary;
  /** The grid's pictures, made from the stored files as the worker's thumbnails.backfill job makes them. */
  thumbnails: BackfillResult;
  seconds: number;
};

/**
 * Empties the demo's folder, once it is proven the demo's own (src/demo/demo-dir.ts), but for its mark and its own
 * embedded server's data (src/demo/servers.ts), which runs while the demo does, and makes its archive folder.
 */
function emptyDemoDir(dir: string, archiveDir: string, install: InstallFolders): void {
  claimDemoDir(dir, install);
  for (const name of readdirSync(dir)) if (name !== DEMO_SERVER_DIR && name !== DEMO_MARK) rmSync(path.join(dir, name), { recursive: true, force: true });
  mkdirSync(archiveDir, { recursive: true, mode: 0o700 });
}

/**
 * The simulated account's gallery as the sync will find it: its live works, and those the simulator made deleted
 * upstream (a deleted work is never listed), so the sync's count can be read against it.
 */
function seededWorks(sim: Simulator): string {
  const owned = [...sim.truth.deviations.values()].filter((d) => d.authorId === sim.truth.ownerId);
  const deleted = owned.filter((d) => d.isDeleted).length;
  return `${plural(owned.length - deleted, "deviation")}${deleted ? ` (and ${deleted} deleted upstream, which no listing shows)` : ""}`;
}

/** A demo database beside the configured one: same server and credentials, database "<name>_demo". */
export function demoDatabaseUrl(databaseUrl: string): string {
  const { database } = pgFields(databaseUrl);
  return withDatabase(databaseUrl, `${database}_demo`);
}

export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const started = Date.now();
  const { out } = options;
  const dir = path.resolve(options.dir);
  const archiveDir = path.join(dir, "archive");
  emptyDemoDir(dir, archiveDir, options.install ?? options.config);

  const databaseUrl = options.ownDatabase ? options.config.databaseUrl : demoDatabaseUrl(options.config.databaseUrl);
  const redisPrefix = `${options.config.redisPrefix}-demo`;
  out(`dvault demo: a simulated account, archived for real into database "${pgFields(databaseUrl).database}" and ${dir}`);

  const port = await freePort();
  const redirectUri = `http://127.0.0.1:${port}/callback`;
  const sim: Simulator = await startSimulator({
    seed: 2026,
    clockMode: "real",
    downloadQuota: 10,
    dataset: { ...options.dataset, deviations: options.deviations ?? 400 },
    clients: [{ clientId: DEMO_CLIENT_ID, clientSecret: DEMO_CLIENT_SECRET, redirectUris: [redirectUri] }],
  });
  out(`1/7 service simulator with a seeded account of ${seededWorks(sim)} at ${sim.url}`);
  let services: Services | undefined;
  try {
    // The demo's own database, made afresh on purpose: the one place besides `dvault migrate` that creates one.
    await dropDatabase(databaseUrl);
    await migrate(databaseUrl, { createDatabase: true });
    const config = loadConfig({
      DATABASE_URL: databaseUrl,
      REDIS_URL: options.config.redisUrl,
      DVAULT_REDIS_PREFIX: redisPrefix,
      DVAULT_ENGINE: options.config.engine, // the queues on the install's engine (on PostgreSQL, in the demo's database)
      DVAULT_API_BASE: sim.url,
      DVAULT_CLIENT_ID: DEMO_CLIENT_ID,
      DVAULT_CLIENT_SECRET: DEMO_CLIENT_SECRET,
      DVAULT_REDIRECT_URI: redirectUri,
      DVAULT_ARCHIVE_DIR: archiveDir,
      DVAULT_CONFIG_DIR: path.join(dir, "config"),
      DVAULT_DOWNLOAD_QUOTA: "10",
      DVAULT_MIN_FREE_BYTES: "64MiB",
      DVAULT_DIGEST_DIR: path.join(dir, "digests"),
      LOG_LEVEL: options.config.logLevel,
    });
    services = await createServices({ config, log: options.log, overrides: { secretKey: { key: randomBytes(32), source: "env", created: false } } });
    // An earlier demo's Redis keys (on PostgreSQL alone its queues live in the demo's own database).
    if (config.engine === "redis") await deleteKeysByPrefix(services.redis, redisPrefix);
    // 1. Log in through the real authorization-code flow with PKCE; a plain HTTP client plays the browser.
    const oauth = new OAuthClient({ serviceBase: sim.url, clientId: DEMO_CLIENT_ID, clientSecret: DEMO_CLIENT_SECRET, log: options.log });
    const login = await interactiveLogin({
      oauth,
      redirectUri,
      scopes: [...DEFAULT_SCOPES],
      mode: "code",
      onAuthorizeUrl: async (url) => {
        out(`2/7 login   authorization code flow with PKCE, redirect to ${redirectUri}`);
        await got(url, { followRedirect: true });
      },
      timeoutMs: 30_000,
    });
    const sim0 = sim.truth.users.get(sim.truth.ownerId);
    const row = await services.tokens().storeGrant({
      name: sim0?.username ?? "demo",
      kind: "user",
      grantType: login.grantType,
      grant: login.grant,
      clientAuth: "basic",
      requestedAt: login.requestedAt,
      requestedScopes: login.requestedScopes,
    });
    const api = await services.apiFor(row.id);
    const me = await whoami(api.transport);
    await services.accounts.saveIdentity(row.id, { userId: me.userid, username: me.username });
    out(`            logged in as ${me.username}; granted scopes: ${(login.grant.scopes ?? []).join(" ")}`);

    // 2. A full sync of every source, as sync.source jobs through the worker's handler and WorkerHost (sync-here.ts).
    out(`3/7 sync    every source, full sweep`);
    const sync = await syncHere(
      services,
      options.log,
      row.id,
      SOURCES.map((s) => s.name).filter((name) => name !== "tracked"),
      true,
    );
    for (const result of sync) {
      out(
        `            ${result.source.padEnd(14)} ${result.status.padEnd(9)} new ${String(result.new).padStart(5)}   api calls ${String(result.apiCalls).padStart(4)}` +
          (result.reason ? `   ${result.reason}` : ""),
      );
    }

    // 3. The downloads the sync asked for: 10 originals this week, the rest as free renditions that wait
    //    for the next quota window.
    out(`4/7 files   originals within the weekly quota (10), free renditions for the rest`);
    const downloads = await runDownloadsOnce({ services, log: options.log, progressEveryMs: 60_000 });
    // The download.file jobs the sync queued for a worker: the step above did their work here (it takes their rows
    // over), and the demo runs no worker, so they go rather than wait in the demo's queue and show as 500 waiting
    // on the dashboard the report points to.
    await dropQueuedDownloads(services.queues);
    out(
      `            ${downloads.done} files stored, ${downloads.degraded} as degraded renditions (their originals wait for ${downloads.nextWindow?.toISOString().slice(0, 10) ?? "next week"}), ` +
        `${downloads.notDownloadable} not downloadable, ${downloads.failed} failed, ${formatBytes(downloads.bytes)}`,
    );

    // 4. The grid's pictures, so the dashboard shows the simulator's art rather than grey tiles: the same work
    //    as the worker's thumbnails.backfill job (jobs/thumbnails/handler.ts), run to its end.
    const thumbnails = await backfillThumbnails(new Thumbnails(downloadDepsFor(services).archive.blobs), { parallel: 2 });
    out(
      `5/7 pictures ${thumbnails.generated} thumbnails made, ${thumbnails.placeholders} placeholder tile(s) for files that are not pictures, ${thumbnails.failed} failed`,
    );

    // 5. What a digest would say about the day after: the first full sync is the baseline, so play some
    //    activity on the simulated service, sync it incrementally, and preview the digest since then.
    const baselineEnd = new Date(services.now());
    const watchedIds = new Set(await new WatchRepository(services.pool).listWatchedUserIds());
    // Watched artists who have a gallery to post into (the simulated service knows).
    const posters = new Set(sim.truth.galleryFolders.filter((f) => watchedIds.has(f.ownerId)).map((f) => f.ownerId));
    const watched = [...posters]
      .slice(0, 2)
      .map((id) => sim.truth.users.get(id)?.username)
      .filter((u): u is string => !!u);
    for (let i = 0; i < 6; i++) sim.activity({ kind: "new_message" });
    sim.activity({ kind: "new_note", subject: "Print request", body: "Would you sell a print of your latest piece?" });
    sim.activity({ kind: "new_watcher" });
    for (const username of watched) sim.activity({ kind: "add_deviation", username });
    await syncHere(services, options.log, row.id, ["messages", "notes", "profile", "watch_feed"], false);
    const preview = await previewDigest(services, { since: baselineEnd, out: path.join(dir, "digest") });
    const c = preview.counts as Record<string, number>;
    out(`6/7 digest  a day's activity played on the simulator, synced again, and the digest of it: "${preview.subject}"`);
    out(
      `            ${
        Object.entries(c)
          .filter(([, n]) => typeof n === "number" && n > 0)
          .map(([k, n]) => plural(n, k.replace(/s$/, ""), k))
          .join(", ") || "nothing new"
      }`,
    );

    return {
      databaseUrl,
      archiveDir,
      redisPrefix,
      dir,
      digestPath: preview.files.html,
      account: me.username,
      sync,
      counts: await new ArchiveCountsRepository(services.pool).countArchive(),
      downloads,
      thumbnails,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    await services?.close();
    await sim.close();
  }
}

/** The download.file jobs waiting in the demo's queue (the run did their work), so none shows as waiting. */
async function dropQueuedDownloads(queues: QueueBackend): Promise<void> {
  const admin = new QueueAdmin(queues);
  try {
    await admin.drainWaiting("downloads");
  } finally {
    await admin.close();
  }
}
