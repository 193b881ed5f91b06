// `dvault feeds list|create|revoke`: the feed readers' tokens (src/http/feeds/feed-token.ts). A token opens
// the Atom feeds under /feeds/<token>/ (all of them, or the one --feed names) and nothing else of the
// dashboard; revoking one stops that reader only.
import type { Command } from "commander";
import { ArchiveFeedRepository } from "../db/archive-feed.repository.ts";
import { FeedTokenRepository } from "../db/feed-token.repository.ts";
import { UserError } from "../errors.ts";
import { urlsWithoutKey } from "../http/feeds/feed-adverts.ts";
import { type FeedName, feedPath } from "../http/feeds/feed-documents.ts";
import { describeScope, type FeedScope, issueFeedToken, rowToken, scopeOf } from "../http/feeds/feed-token.ts";
import { existingSecretKey, keyCreatedMessage, keyPlaces, loadSecretKey } from "../secret-key.ts";
import type { Services } from "../services.ts";
import { colorsFor } from "./output/mode.ts";
import { printJson, printOut } from "./output/print.ts";
import { formatTable } from "./output/table.ts";
import { withServices } from "./with-services.ts";

/** Where the feeds are read: DVAULT_PUBLIC_URL, else the dashboard's own address (said so in the output). */
function feedBase(services: Services): { base: string; guessed: boolean } {
  const { publicUrl, httpHost, httpPort } = services.config;
  if (publicUrl) return { base: publicUrl, guessed: false };
  const host = httpHost.includes(":") ? `[${httpHost}]` : httpHost;
  return { base: `http://${host}:${httpPort}`, guessed: true };
}

/** The URLs of the feeds a token opens; an artist feed of a token for every feed shows USERNAME to fill in. */
function feedUrls(base: string, token: string, scope: FeedScope | undefined): Partial<Record<"arrivals" | "notifications" | "artist", string>> {
  const url = (feed: FeedName) => `${base}${feedPath(token, feed)}`;
  switch (scope?.kind) {
    case undefined:
      return {};
    case "all":
      return { arrivals: url({ kind: "arrivals" }), notifications: url({ kind: "notifications" }), artist: url({ kind: "artist", username: "USERNAME" }) };
    case "arrivals":
    case "notifications":
      return { [scope.kind]: url(scope) };
    case "artist":
      return { artist: url({ kind: "artist", username: scope.username ?? scope.userid }) };
    default:
      return scope satisfies never;
  }
}

/**
 * The key a new token is made under. One is made only on an install that holds nothing sealed under a key yet: beside
 * an account's tokens or a live feed token, a missing key is a lost one (a config folder not mounted, a restore without
 * secret.key), and a key made now would differ from the one the backup holds.
 */
async function keyToIssueWith(services: Services): Promise<Buffer> {
  const existing = existingSecretKey(services.config);
  if (existing) return existing.key;
  const sealedAccount = (await services.accounts.list()).some((a) => a.accessTokenEnc !== null || a.refreshTokenEnc !== null);
  const liveFeeds = (await new FeedTokenRepository(services.pool).liveFeedTokens()).length > 0;
  if (sealedAccount || liveFeeds) {
    throw new UserError(
      `no key was found in ${keyPlaces(services.config)}, but this install holds ${sealedAccount ? "tokens" : "feed tokens"} made under one: ` +
        "restore secret.key from your backup (or point DVAULT_CONFIG_DIR at its folder, or set DVAULT_SECRET_KEY) and run this again; " +
        "if it is lost for good, dvault auth login makes a new one (each account logs in again)",
    );
  }
  return loadSecretKey(services.config, (file) => services.log.warn({ path: file }, keyCreatedMessage(file))).key;
}

/** --feed arrivals | notifications | artist:<username> (an artist the archive knows), or every feed. */
async function parseFeedOption(services: Services, value: string | undefined): Promise<FeedScope> {
  if (value === undefined || value === "all") return { kind: "all" };
  if (value === "arrivals" || value === "notifications") return { kind: value };
  const name = /^artist:(.+)$/.exec(value)?.[1];
  if (!name) throw new UserError(`--feed ${value}: expected arrivals, notifications or artist:<username>`);
  const user = await new ArchiveFeedRepository(services.pool).userByName(name);
  if (!user) throw new UserError(`--feed ${value}: no user named "${name}" in the archive; check the spelling, or sync first if they are new`);
  return { kind: "artist", userid: user.userid, username: user.username };
}

const URL_LABELS = { arrivals: "new in the archive", notifications: "notifications", artist: "artist" } as const;

export function registerFeedsCommand(program: Command): void {
  const feeds = program.command("feeds").description("Atom feeds of the archive: the feed readers' tokens");
  feeds
    .command("create <name>")
    .description("make a token for one feed reader and print its feed URLs (the dashboard's Feeds page shows them too)")
    .option("--feed <feed>", "only this feed: arrivals, notifications or artist:<username> (default: every feed)")
    .option("--json", "print JSON")
    .action(async (name: string, opts: { feed?: string; json?: boolean }) =>
      withServices(async (services) => {
        const scope = await parseFeedOption(services, opts.feed);
        const repo = new FeedTokenRepository(services.pool);
        const issued = await issueFeedToken({ repo, key: await keyToIssueWith(services), name, scope, at: new Date(services.now()) });
        const { base, guessed } = feedBase(services);
        const urls = feedUrls(base, issued.token, scope);
        if (opts.json) return printJson({ id: issued.id, name: issued.name, feed: describeScope(scope), token: issued.token, urls });
        printOut(
          `feed token "${issued.name}" created for ${describeScope(scope)}; give these addresses to the reader (they carry the token, keep them private):`,
        );
        for (const [key, url] of Object.entries(urls)) printOut(`  ${URL_LABELS[key as keyof typeof URL_LABELS]}: ${url}`);
        if (guessed) printOut(`links use the dashboard's default address ${base}; set DVAULT_PUBLIC_URL to the address your reader uses`);
      }),
    );
  feeds
    .command("list")
    .description("list the feed tokens, revoked ones too")
    .option("--json", "print JSON")
    .action(async (opts: { json?: boolean }) =>
      withServices(async (services) => {
        const rows = await new FeedTokenRepository(services.pool).listFeedTokens();
        const { base } = feedBase(services);
        // The URLs are rebuilt under the key there is; a list makes none (a lost key is said, not replaced).
        const key = rows.some((r) => !r.revokedAt) ? existingSecretKey(services.config)?.key : undefined;
        const out = rows.map((r) => {
          const scope = scopeOf(r.scope, r.scopeUsername);
          // A row made under another secret key still opens its feeds, but its URL cannot be rebuilt.
          const token = key && !r.revokedAt ? rowToken(key, r) : undefined;
          return {
            id: r.id,
            name: r.name,
            feed: describeScope(scope),
            createdAt: r.createdAt.toISOString(),
            lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
            revokedAt: r.revokedAt?.toISOString() ?? null,
            urls: token ? feedUrls(base, token, scope) : null,
          };
        });
        if (opts.json) return printJson(out);
        if (out.length === 0) return printOut("no feed tokens; make one with dvault feeds create <name>");
        const colors = colorsFor();
        const table = out.map((t) => [String(t.id), t.name, t.feed, t.revokedAt ? `revoked ${t.revokedAt}` : "live", t.lastUsedAt ?? "never"]);
        printOut(formatTable(["id", "name", "opens", "state", "last read"], table, { colors }));
        if (out.some((t) => t.urls)) printOut("their URLs: dvault feeds list --json, or the dashboard's Feeds page");
        else if (!key && out.some((t) => !t.revokedAt)) printOut(`their URLs cannot be shown: ${urlsWithoutKey(services.config)}`);
      }),
    );
  feeds
    .command("revoke <name-or-id>")
    .description("revoke a feed token: its reader gets 404 from then on (other tokens keep working)")
    .option("--json", "print JSON")
    .action(async (nameOrId: string, opts: { json?: boolean }) =>
      withServices(async (services) => {
        const row = await new FeedTokenRepository(services.pool).revokeFeedToken(nameOrId, new Date(services.now()));
        if (!row) throw new UserError(`no live feed token named "${nameOrId}": see dvault feeds list`);
        if (opts.json) return printJson({ id: row.id, name: row.name, revokedAt: row.revokedAt.toISOString() });
        printOut(`revoked feed token "${row.name}"; its feed URLs answer 404 from now on`);
      }),
    );
}
