// Feed readers' tokens (`dvault feeds create|list|revoke`, the feed routes): only the nonce a token is derived
// from and the token's SHA-256 are stored (src/http/feeds/feed-token.ts), with the feed it is limited to, and
// the stored files its feeds have linked (feed_linked_files), which are all it opens besides the feeds.
import type { Queryable } from "./with-transaction.ts";

export type FeedTokenRow = {
  id: number;
  name: string;
  nonce: Buffer;
  tokenSha256: Buffer;
  /** null: every feed; "arrivals", "notifications" or "artist:<userid>". */
  scope: string | null;
  /** The artist's name of an "artist:<userid>" scope, when the mirror knows them. */
  scopeUsername: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

type Row = {
  id: number;
  name: string;
  nonce: Buffer;
  token_sha256: Buffer;
  scope: string | null;
  scope_username: string | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
};

// The scope's artist by name: feeds and the dashboard name artists, the scope keeps their userid (names change).
const SELECT = `SELECT t.id, t.name, t.nonce, t.token_sha256, t.scope, u.username AS scope_username, t.created_at, t.last_used_at, t.revoked_at
  FROM feed_tokens t LEFT JOIN users u ON t.scope LIKE 'artist:%' AND u.userid = substr(t.scope, 8)`;

function toToken(r: Row): FeedTokenRow {
  return {
    id: r.id,
    name: r.name,
    nonce: r.nonce,
    tokenSha256: r.token_sha256,
    scope: r.scope,
    scopeUsername: r.scope_username,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    revokedAt: r.revoked_at,
  };
}

export class FeedTokenRepository {
  constructor(private readonly db: Queryable) {}

  /** The new row's id, or null when the name is taken (by a live or a revoked token). */
  async createFeedToken(input: { name: string; nonce: Buffer; tokenSha256: Buffer; scope: string | null; at: Date }): Promise<number | null> {
    const { rows } = await this.db.query<{ id: number }>(
      `INSERT INTO feed_tokens (name, nonce, token_sha256, scope, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (name) DO NOTHING RETURNING id`,
      [input.name, input.nonce, input.tokenSha256, input.scope, input.at],
    );
    return rows[0]?.id ?? null;
  }

  /** Every token, revoked ones too, oldest first. */
  async listFeedTokens(): Promise<FeedTokenRow[]> {
    const { rows } = await this.db.query<Row>(`${SELECT} ORDER BY t.id`);
    return rows.map(toToken);
  }

  /** The tokens that still open feeds, newest first (the dashboard shows their URLs). */
  async liveFeedTokens(): Promise<FeedTokenRow[]> {
    const { rows } = await this.db.query<Row>(`${SELECT} WHERE t.revoked_at IS NULL ORDER BY t.id DESC`);
    return rows.map(toToken);
  }

  /**
   * Revokes the live token with this name, else the one with this id; its id and name, or null when none is
   * live under either. One token at most: a token named "5" and the token whose id is 5 are two readers.
   */
  async revokeFeedToken(idOrName: string, at: Date): Promise<{ id: number; name: string; revokedAt: Date } | null> {
    const id = /^\d{1,9}$/.test(idOrName) ? Number(idOrName) : null;
    const { rows } = await this.db.query<{ id: number; name: string; revoked_at: Date }>(
      `UPDATE feed_tokens SET revoked_at = $3
       WHERE id = (SELECT id FROM feed_tokens WHERE revoked_at IS NULL AND (id = $1 OR name = $2) ORDER BY name = $2 DESC LIMIT 1)
       RETURNING id, name, revoked_at`,
      [id, idOrName, at],
    );
    const r = rows[0];
    return r ? { id: r.id, name: r.name, revokedAt: r.revoked_at } : null;
  }

  /** The live token with this SHA-256, its use noted (at most once a minute); null for an unknown or revoked one. */
  async useFeedToken(tokenSha256: Buffer, at: Date): Promise<{ id: number; name: string; scope: string | null } | null> {
    const { rows } = await this.db.query<{ id: number; name: string; scope: string | null }>(
      `WITH hit AS (SELECT id, name, scope, last_used_at FROM feed_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL),
       noted AS (
         UPDATE feed_tokens t SET last_used_at = $2 FROM hit
         WHERE t.id = hit.id AND (hit.last_used_at IS NULL OR hit.last_used_at < $2::timestamptz - interval '1 minute')
       )
       SELECT id, name, scope FROM hit`,
      [tokenSha256, at],
    );
    return rows[0] ?? null;
  }

  /**
   * Notes the stored files a feed document links under a token (their first time only): what the token opens from
   * now on. A file linked by several entries (messages about one work) is one row.
   */
  async recordLinkedFiles(tokenId: number, files: ReadonlyArray<{ downloadId: string; sha256: string | null }>, at: Date): Promise<void> {
    if (files.length === 0) return;
    await this.db.query(
      `INSERT INTO feed_linked_files (token_id, download_id, sha256, first_linked_at)
       SELECT DISTINCT ON (f.download_id) $1::int, f.download_id, f.sha256, $4::timestamptz FROM unnest($2::bigint[], $3::text[]) AS f(download_id, sha256)
       ON CONFLICT (token_id, download_id) DO UPDATE SET sha256 = EXCLUDED.sha256
       WHERE feed_linked_files.sha256 IS DISTINCT FROM EXCLUDED.sha256`,
      [tokenId, files.map((f) => f.downloadId), files.map((f) => f.sha256), at],
    );
  }

  /**
   * Whether a feed served under this token linked the stored file (by download id) or a thumbnail of it (by
   * the content hash the link named).
   */
  async linksFile(tokenId: number, file: { downloadId: string } | { sha256: string }): Promise<boolean> {
    const downloadId = "downloadId" in file && /^\d{1,18}$/.test(file.downloadId) ? file.downloadId : null;
    const sha256 = "sha256" in file ? file.sha256 : null;
    if (downloadId === null && sha256 === null) return false;
    const { rows } = await this.db.query<{ hit: boolean }>(
      `SELECT EXISTS (
         SELECT 1 FROM feed_linked_files WHERE token_id = $1 AND (download_id = $2::bigint OR sha256 = $3::text)
       ) AS hit`,
      [tokenId, downloadId, sha256],
    );
    return rows[0]?.hit ?? false;
  }
}
