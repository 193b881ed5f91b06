// Feed readers' tokens (`dvault feeds create|list|revoke`, the feed routes): only the nonce a token is derived
// from and the token's SHA-256 are stored (src/http/feeds/feed-token.ts).
import type { Queryable } from "./with-transaction.ts";

export type FeedTokenRow = {
  id: number;
  name: string;
  nonce: Buffer;
  tokenSha256: Buffer;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
};

type Row = { id: number; name: string; nonce: Buffer; token_sha256: Buffer; created_at: Date; last_used_at: Date | null; revoked_at: Date | null };

const COLUMNS = "id, name, nonce, token_sha256, created_at, last_used_at, revoked_at";

function toToken(r: Row): FeedTokenRow {
  return { id: r.id, name: r.name, nonce: r.nonce, tokenSha256: r.token_sha256, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at };
}

export class FeedTokenRepository {
  constructor(private readonly db: Queryable) {}

  /** The new row, or null when the name is taken (by a live or a revoked token). */
  async createFeedToken(input: { name: string; nonce: Buffer; tokenSha256: Buffer; at: Date }): Promise<FeedTokenRow | null> {
    const { rows } = await this.db.query<Row>(
      `INSERT INTO feed_tokens (name, nonce, token_sha256, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
      [input.name, input.nonce, input.tokenSha256, input.at],
    );
    return rows[0] ? toToken(rows[0]) : null;
  }

  /** Every token, revoked ones too, oldest first. */
  async listFeedTokens(): Promise<FeedTokenRow[]> {
    const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM feed_tokens ORDER BY id`);
    return rows.map(toToken);
  }

  /** The tokens that still open the feeds, newest first (the dashboard shows their URLs). */
  async liveFeedTokens(): Promise<FeedTokenRow[]> {
    const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM feed_tokens WHERE revoked_at IS NULL ORDER BY id DESC`);
    return rows.map(toToken);
  }

  /** Revokes the live token with this id or name; the revoked row, or null when none is live under it. */
  async revokeFeedToken(idOrName: string, at: Date): Promise<FeedTokenRow | null> {
    const id = /^\d{1,9}$/.test(idOrName) ? Number(idOrName) : null;
    const { rows } = await this.db.query<Row>(
      `UPDATE feed_tokens SET revoked_at = $3 WHERE revoked_at IS NULL AND (id = $1 OR name = $2) RETURNING ${COLUMNS}`,
      [id, idOrName, at],
    );
    return rows[0] ? toToken(rows[0]) : null;
  }

  /** The live token with this SHA-256, its use noted (at most once a minute); null for an unknown or revoked one. */
  async useFeedToken(tokenSha256: Buffer, at: Date): Promise<{ id: number; name: string } | null> {
    const { rows } = await this.db.query<{ id: number; name: string }>(
      `WITH hit AS (SELECT id, name, last_used_at FROM feed_tokens WHERE token_sha256 = $1 AND revoked_at IS NULL),
       noted AS (
         UPDATE feed_tokens t SET last_used_at = $2 FROM hit
         WHERE t.id = hit.id AND (hit.last_used_at IS NULL OR hit.last_used_at < $2::timestamptz - interval '1 minute')
       )
       SELECT id, name FROM hit`,
      [tokenSha256, at],
    );
    return rows[0] ?? null;
  }
}
