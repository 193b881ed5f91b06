// Feed tokens: what a feed reader puts in the URL instead of the dashboard token. A token is derived from a
// random nonce under the secret key, so the dashboard can show a reader's URL again while the database holds
// only the nonce and the token's SHA-256 (a copy of the database alone opens no feed); revoking marks the row.
import { createHash, createHmac, randomBytes } from "node:crypto";
import { deriveKey } from "../../crypto/derive-key.ts";
import type { FeedTokenRepository } from "../../db/feed-token.repository.ts";
import { UserError } from "../../errors.ts";

/** Every feed token starts with this, so src/redact.ts can find one anywhere in a log line. */
export const FEED_TOKEN_PREFIX = "dvf_";
/** The shape of a token: the prefix and 43 base64url characters (32 bytes). */
export const FEED_TOKEN_RE = /^dvf_[A-Za-z0-9_-]{43}$/;

export function newFeedNonce(): Buffer {
  return randomBytes(16);
}

/** The token of a nonce under the secret key; the same key and nonce give the same token. */
export function feedToken(key: Buffer, nonce: Buffer): string {
  const mac = createHmac("sha256", deriveKey(key, "dvault feed token v1")).update(nonce).digest();
  return `${FEED_TOKEN_PREFIX}${mac.toString("base64url")}`;
}

/** What the database keeps of a token, and what a presented token is looked up by. */
export function feedTokenHash(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}

/**
 * Which feeds a token opens: all of them, or one (and only the files and thumbnails of its entries). An
 * artist is kept by userid, which a rename does not change; `username` is for showing and matching names.
 */
export type FeedScope = { kind: "all" } | { kind: "arrivals" } | { kind: "notifications" } | { kind: "artist"; userid: string; username: string | null };

/** The scope as the feed_tokens.scope column keeps it. */
export function scopeColumn(scope: FeedScope): string | null {
  return scope.kind === "all" ? null : scope.kind === "artist" ? `artist:${scope.userid}` : scope.kind;
}

/** The column read back; a value this dvault does not know opens nothing rather than everything. */
export function scopeOf(column: string | null, username: string | null = null): FeedScope | undefined {
  if (column === null) return { kind: "all" };
  if (column === "arrivals" || column === "notifications") return { kind: column };
  if (column.startsWith("artist:") && column.length > 7) return { kind: "artist", userid: column.slice(7), username };
  return undefined;
}

/** Whether `scope` opens `feed` (an artist's feed by userid when known, else by name, any case). */
export function opensFeed(
  scope: FeedScope | undefined,
  feed: { kind: "arrivals" | "notifications" } | { kind: "artist"; userid?: string; username: string },
): boolean {
  if (!scope) return false;
  if (scope.kind === "all") return true;
  if (scope.kind !== feed.kind) return false;
  if (scope.kind !== "artist" || feed.kind !== "artist") return true;
  return feed.userid !== undefined ? feed.userid === scope.userid : scope.username?.toLowerCase() === feed.username.toLowerCase();
}

/** "every feed", "new arrivals", "notifications", "SomeArtist's work": what `dvault feeds list` and the Feeds page say. */
export function describeScope(scope: FeedScope | undefined): string {
  if (!scope) return "nothing (unknown scope)";
  if (scope.kind === "all") return "every feed";
  if (scope.kind === "arrivals") return "new arrivals";
  if (scope.kind === "notifications") return "notifications";
  return `${scope.username ?? scope.userid}'s work`;
}

/** A live feed token as the dashboard and `dvault feeds` show it: its row, its scope and the token itself. */
export type IssuedFeedToken = { id: number; name: string; token: string; scope: FeedScope | undefined; createdAt: Date; lastUsedAt: Date | null };

/** Creates a token named `name` (a reader: "phone", "miniflux"); a name already used is a UserError. */
export async function issueFeedToken({
  repo,
  key,
  name,
  scope = { kind: "all" },
  at,
}: {
  repo: FeedTokenRepository;
  key: Buffer;
  name: string;
  scope?: FeedScope;
  at: Date;
}): Promise<IssuedFeedToken> {
  if (!/^[\w.@-]{1,64}$/.test(name)) throw new UserError(`"${name}" is not a usable feed token name: use 1 to 64 letters, digits, ".", "-", "_" or "@"`);
  const nonce = newFeedNonce();
  const token = feedToken(key, nonce);
  const id = await repo.createFeedToken({ name, nonce, tokenSha256: feedTokenHash(token), scope: scopeColumn(scope), at });
  if (id === null)
    throw new UserError(`a feed token named "${name}" exists already (revoked ones keep their name): choose another name, see dvault feeds list`);
  return { id, name, token, scope, createdAt: at, lastUsedAt: null };
}

/** The token of a row under `key`, or undefined when the row was made under another secret key (its URL cannot be shown again). */
export function rowToken(key: Buffer, row: { nonce: Buffer; tokenSha256: Buffer }): string | undefined {
  const token = feedToken(key, row.nonce);
  return feedTokenHash(token).equals(row.tokenSha256) ? token : undefined;
}

/** The live tokens, newest first, with the token each one opens its feeds with; those made under another key are left out. */
export async function liveFeedTokens(repo: FeedTokenRepository, key: Buffer): Promise<IssuedFeedToken[]> {
  const out: IssuedFeedToken[] = [];
  for (const r of await repo.liveFeedTokens()) {
    const token = rowToken(key, r);
    if (token) out.push({ id: r.id, name: r.name, token, scope: scopeOf(r.scope, r.scopeUsername), createdAt: r.createdAt, lastUsedAt: r.lastUsedAt });
  }
  return out;
}
