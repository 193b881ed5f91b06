// Feed readers' tokens (`dvault feeds create|list|revoke`, the feed routes): only the nonce a token is derived
// from and the token's SHA-256 are stored (src/http/feeds/feed-token.ts), with the feed it is limited to, and
// the stored files its feeds have linked (feed_linked_files), which are all it opens besides the feeds.
import type { Kysely } from "kysely";
import { type CamelDB, kyselyCamel, sql } from "./kysely.ts";
import type { CamelRow, Row } from "./schema.ts";
import type { Queryable } from "./with-transaction.ts";

/** A token's row (camelCase names: the CLI and the dashboard read them so), with its scope's artist. */
export type FeedTokenRow = CamelRow<"feed_tokens"> & {
  /** The artist's name of an "artist:<userid>" scope, when the mirror knows them. */
  scopeUsername: string | null;
};

export class FeedTokenRepository {
  private readonly k: Kysely<CamelDB>;

  constructor(db: Queryable) {
    this.k = kyselyCamel(db);
  }

  /** The new row's id, or null when the name is taken (by a live or a revoked token). */
  async createFeedToken(input: { name: string; nonce: Buffer; tokenSha256: Buffer; scope: string | null; at: Date }): Promise<number | null> {
    const row = await this.k
      .insertInto("feed_tokens")
      .values({ name: input.name, nonce: input.nonce, tokenSha256: input.tokenSha256, scope: input.scope, createdAt: input.at })
      .onConflict((oc) => oc.column("name").doNothing())
      .returning("id")
      .executeTakeFirst();
    return row?.id ?? null;
  }

  /** Every token, revoked ones too, oldest first. */
  listFeedTokens(): Promise<FeedTokenRow[]> {
    return this.tokens().orderBy("t.id").execute();
  }

  /** The tokens that still open feeds, newest first (the dashboard shows their URLs). */
  liveFeedTokens(): Promise<FeedTokenRow[]> {
    return this.tokens().where("t.revokedAt", "is", null).orderBy("t.id", "desc").execute();
  }

  /** The scope's artist by name: feeds and the dashboard name artists, the scope keeps their userid (names change). */
  private tokens() {
    return this.k
      .selectFrom("feed_tokens as t")
      .leftJoin("users as u", (join) => join.on(sql<boolean>`t.scope LIKE 'artist:%' AND u.userid = substr(t.scope, 8)`))
      .selectAll("t")
      .select("u.username as scopeUsername");
  }

  /**
   * Revokes the live token with this name, else the one with this id; its id and name, or null when none is
   * live under either. One token at most: a token named "5" and the token whose id is 5 are two readers.
   */
  async revokeFeedToken(idOrName: string, at: Date): Promise<{ id: number; name: string; revokedAt: Date } | null> {
    const id = /^\d{1,9}$/.test(idOrName) ? Number(idOrName) : null;
    const { rows } = await sql<Pick<CamelRow<"feed_tokens">, "id" | "name"> & { revokedAt: Date }>`
      UPDATE feed_tokens SET revoked_at = ${at}
      WHERE id = (SELECT id FROM feed_tokens WHERE revoked_at IS NULL AND (id = ${id} OR name = ${idOrName}) ORDER BY name = ${idOrName} DESC LIMIT 1)
      RETURNING id, name, revoked_at`.execute(this.k);
    return rows[0] ?? null;
  }

  /** The live token with this SHA-256, its use noted (at most once a minute); null for an unknown or revoked one. */
  async useFeedToken(tokenSha256: Buffer, at: Date): Promise<{ id: number; name: string; scope: string | null } | null> {
    const { rows } = await sql<Pick<Row<"feed_tokens">, "id" | "name" | "scope">>`
      WITH hit AS (SELECT id, name, scope, last_used_at FROM feed_tokens WHERE token_sha256 = ${tokenSha256} AND revoked_at IS NULL),
      noted AS (
        UPDATE feed_tokens t SET last_used_at = ${at} FROM hit
        WHERE t.id = hit.id AND (hit.last_used_at IS NULL OR hit.last_used_at < ${at}::timestamptz - interval '1 minute')
      )
      SELECT id, name, scope FROM hit`.execute(this.k);
    return rows[0] ?? null;
  }

  /**
   * Notes the stored files a feed document links under a token (their first time only): what the token opens from
   * now on. A file linked by several entries (messages about one work) is one row.
   */
  async recordLinkedFiles(tokenId: number, files: ReadonlyArray<{ downloadId: string; sha256: string | null }>, at: Date): Promise<void> {
    if (files.length === 0) return;
    await sql`
      INSERT INTO feed_linked_files (token_id, download_id, sha256, first_linked_at)
      SELECT DISTINCT ON (f.download_id) ${tokenId}::int, f.download_id, f.sha256, ${at}::timestamptz
      FROM unnest(${files.map((f) => f.downloadId)}::bigint[], ${files.map((f) => f.sha256)}::text[]) AS f(download_id, sha256)
      ON CONFLICT (token_id, download_id) DO UPDATE SET sha256 = EXCLUDED.sha256
      WHERE feed_linked_files.sha256 IS DISTINCT FROM EXCLUDED.sha256`.execute(this.k);
  }

  /**
   * Whether a feed served under this token linked the stored file (by download id) or a thumbnail of it (by
   * the content hash the link named).
   */
  async linksFile(tokenId: number, file: { downloadId: string } | { sha256: string }): Promise<boolean> {
    const downloadId = "downloadId" in file && /^\d{1,18}$/.test(file.downloadId) ? file.downloadId : null;
    const sha256 = "sha256" in file ? file.sha256 : null;
    if (downloadId === null && sha256 === null) return false;
    const { rows } = await sql<{ hit: boolean }>`
      SELECT EXISTS (
        SELECT 1 FROM feed_linked_files WHERE token_id = ${tokenId} AND (download_id = ${downloadId}::bigint OR sha256 = ${sha256}::text)
      ) AS hit`.execute(this.k);
    return rows[0]?.hit ?? false;
  }
}
