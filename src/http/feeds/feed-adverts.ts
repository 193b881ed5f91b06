// Which feed URLs the dashboard shows: those of the live feed tokens, rebuilt from their nonces under the
// secret key (src/http/feeds/feed-token.ts). The key is read only once a token exists, and never created here.
import { FeedTokenRepository } from "../../db/feed-token.repository.ts";
import { UserError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { existingSecretKey, keyPlaces } from "../../secret-key.ts";
import type { Config } from "../../config.ts";
import type { Queryable } from "../../db/with-transaction.ts";
import { type IssuedFeedToken, liveFeedTokens, opensFeed } from "./feed-token.ts";
import { type FeedName, feedPath } from "./feed-documents.ts";

/** A <link rel="alternate" type="application/atom+xml"> of a page. */
export type FeedLink = { title: string; href: string };

export type FeedAdverts = {
  /** The live tokens, newest first, each with its token. */
  live(): Promise<IssuedFeedToken[]>;
  /** The links a page advertises for these feeds, each with the newest live token that opens it; none without one. */
  links(base: string, feeds: ReadonlyArray<{ title: string; feed: FeedName }>): Promise<FeedLink[]>;
};

/** Why the feed tokens' URLs cannot be rebuilt with no key, and what still works: `feeds list` and the Feeds page say it. */
export function urlsWithoutKey(config: Config): string {
  return `no key was found in ${keyPlaces(config)}; their readers keep working, and restoring secret.key shows them again`;
}

export function createFeedAdverts({ pool, config, log }: { pool: Queryable; config: Config; log: Logger }): FeedAdverts {
  const repo = new FeedTokenRepository(pool);
  let key: Buffer | undefined;
  /** The reason last warned of: a lost key is said once, not on every page a browser loads. */
  let warned: string | undefined;
  const live = async () => {
    if ((await repo.liveFeedTokens()).length === 0) return [];
    // Live tokens were made under a key: one missing now is lost (a config folder not mounted), never replaced here.
    key ??= existingSecretKey(config)?.key;
    if (!key) {
      throw new UserError(`the feed tokens' URLs cannot be shown: ${urlsWithoutKey(config)}`);
    }
    return liveFeedTokens(repo, key);
  };
  return {
    live,
    async links(base, feeds) {
      // A page's feed links are an extra: a secret key that cannot be read (a UserError saying what to do) leaves
      // them out rather than failing the overview; the Feeds page shows the error itself.
      const tokens = await live().catch((err: unknown) => {
        if (!(err instanceof UserError)) throw err;
        if (warned !== err.message) log.warn({ err }, "dashboard: feed links left out of the pages");
        warned = err.message;
        return [];
      });
      return feeds.flatMap((f) => {
        const opener = tokens.find((t) => opensFeed(t.scope, f.feed));
        return opener ? [{ title: f.title, href: `${base}${feedPath(opener.token, f.feed)}` }] : [];
      });
    },
  };
}
