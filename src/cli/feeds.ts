// `dvault feeds list|create|revoke`: the feed readers' tokens (src/http/feeds/feed-token.ts). A token opens
// the Atom feeds under /feeds/<token>/ and nothing else of the dashboard; revoking one stops that reader only.
import type { Command } from "commander";
import { loadConfig } from "../config.ts";
import { FeedTokenRepository } from "../db/feed-token.repository.ts";
import { UserError } from "../errors.ts";
import { feedPath } from "../http/feeds/feed-documents.ts";
import { issueFeedToken, rowToken } from "../http/feeds/feed-token.ts";
import { keyCreatedMessage, loadSecretKey } from "../secret-key.ts";
import { createServices, type Services } from "../services.ts";
import { cliLogger, colorsFor } from "./output/mode.ts";
import { formatTable } from "./output/table.ts";

async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const services = await createServices({ config, log: cliLogger(config, { warnByDefault: true }) });
  try {
    return await fn(services);
  } finally {
    await services.close();
  }
}

/** Where the feeds are read: DVAULT_PUBLIC_URL, else the dashboard's own address (said so in the output). */
function feedBase(services: Services): { base: string; guessed: boolean } {
  const { publicUrl, httpHost, httpPort } = services.config;
  if (publicUrl) return { base: publicUrl, guessed: false };
  const host = httpHost.includes(":") ? `[${httpHost}]` : httpHost;
  return { base: `http://${host}:${httpPort}`, guessed: true };
}

function feedUrls(base: string, token: string) {
  return {
    arrivals: `${base}${feedPath(token, { kind: "arrivals" })}`,
    notifications: `${base}${feedPath(token, { kind: "notifications" })}`,
    artist: `${base}${feedPath(token, { kind: "artist", username: "USERNAME" })}`,
  };
}

/** A live row's URLs; null when it was made under another secret key (it still works, but its URL cannot be rebuilt). */
function urlsOf(base: string, key: Buffer, row: { nonce: Buffer; tokenSha256: Buffer }) {
  const token = rowToken(key, row);
  return token ? feedUrls(base, token) : null;
}

function secretKey(services: Services): Buffer {
  return loadSecretKey(services.config, (file) => services.log.warn({ path: file }, keyCreatedMessage(file))).key;
}

export function registerFeedsCommand(program: Command): void {
  const feeds = program.command("feeds").description("Atom feeds of the archive: the feed readers' tokens");
  feeds
    .command("create <name>")
    .description("make a token for one feed reader and print its feed URLs (the dashboard's Feeds page shows them too)")
    .option("--json", "print JSON")
    .action(async (name: string, opts: { json?: boolean }) =>
      withServices(async (services) => {
        const issued = await issueFeedToken({ repo: new FeedTokenRepository(services.pool), key: secretKey(services), name, at: new Date(services.now()) });
        const { base, guessed } = feedBase(services);
        const urls = feedUrls(base, issued.token);
        if (opts.json) return void console.log(JSON.stringify({ id: issued.id, name: issued.name, token: issued.token, urls }, null, 2));
        console.log(`feed token "${issued.name}" created; give these addresses to the reader (they carry the token, keep them private):`);
        console.log(`  new in the archive: ${urls.arrivals}`);
        console.log(`  notifications:      ${urls.notifications}`);
        console.log(`  one artist:         ${urls.artist}`);
        if (guessed) console.log(`links use the dashboard's default address ${base}; set DVAULT_PUBLIC_URL to the address your reader uses`);
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
        const key = rows.some((r) => !r.revokedAt) ? secretKey(services) : undefined;
        const out = rows.map((r) => ({
          id: r.id,
          name: r.name,
          createdAt: r.createdAt.toISOString(),
          lastUsedAt: r.lastUsedAt?.toISOString() ?? null,
          revokedAt: r.revokedAt?.toISOString() ?? null,
          urls: key && !r.revokedAt ? urlsOf(base, key, r) : null,
        }));
        if (opts.json) return void console.log(JSON.stringify(out, null, 2));
        if (out.length === 0) return void console.log("no feed tokens; make one with dvault feeds create <name>");
        const colors = colorsFor();
        const table = out.map((t) => [String(t.id), t.name, t.revokedAt ? `revoked ${t.revokedAt}` : "live", t.lastUsedAt ?? "never", t.urls?.arrivals ?? ""]);
        console.log(formatTable(["id", "name", "state", "last read", "arrivals feed"], table, { colors }));
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
        if (opts.json) return void console.log(JSON.stringify({ id: row.id, name: row.name, revokedAt: row.revokedAt?.toISOString() ?? null }, null, 2));
        console.log(`revoked feed token "${row.name}"; its feed URLs answer 404 from now on`);
      }),
    );
}
