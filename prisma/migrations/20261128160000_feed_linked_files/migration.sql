-- A feed token opens exactly what its feeds linked (issue 27, row 15): every stored file and thumbnail a feed
-- document served under the token is recorded here when the document is rendered (src/http/routes/feeds.ts),
-- and /feeds/<token>/files/<id> and /feeds/<token>/thumb/... open only what is recorded for that token. "Ever
-- served", not "in today's 50": a reader's cached entries keep working after they leave the feed. Before,
-- an arrivals or notifications token opened every stored file (docs/schema.md#feed_linked_files).

-- CreateTable
CREATE TABLE "feed_linked_files" (
    "token_id" INTEGER NOT NULL,
    "download_id" BIGINT NOT NULL,
    "sha256" TEXT,
    "first_linked_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feed_linked_files_pkey" PRIMARY KEY ("token_id","download_id")
);

-- CreateIndex
CREATE INDEX "feed_linked_files_token_id_sha256_idx" ON "feed_linked_files"("token_id", "sha256");

-- AddForeignKey
ALTER TABLE "feed_linked_files" ADD CONSTRAINT "feed_linked_files_token_id_fkey" FOREIGN KEY ("token_id") REFERENCES "feed_tokens"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ==== Hand-written: what the tokens issued before this migration may already have served ====
-- Nothing recorded what they served, so each live one is given what its feed's query returns without its
-- LIMIT (every entry it could have served): the best stored file of every deviation for a token of every
-- feed or of the arrivals, of the artist's deviations for an artist's token, of the deviations a message is
-- about for a notifications token (src/db/archive-feed.repository.ts, BEST_FILE in
-- src/db/archive-browser.repository.ts). Narrower than what they opened before (any stored file), and no
-- reader loses an entry it holds. Tokens issued from now on start empty and record exactly.
INSERT INTO "feed_linked_files" ("token_id", "download_id", "sha256")
SELECT t.id, f.id, f.sha256
FROM "feed_tokens" t
JOIN "deviations" d ON t.scope IS NULL OR t.scope = 'arrivals' OR t.scope = 'artist:' || d.author_userid
  OR (t.scope = 'notifications' AND EXISTS (SELECT 1 FROM "messages" m WHERE m.subject_deviationid = d.deviationid))
CROSS JOIN LATERAL (
  SELECT dl.id, dl.sha256 FROM "downloads" dl
  WHERE dl.deviationid = d.deviationid AND dl.path IS NOT NULL
    AND (dl.status IN ('done', 'degraded') OR (dl.status = 'not_downloadable' AND dl.sha256 IS NOT NULL))
  ORDER BY (dl.kind = 'original' AND dl.status = 'done') DESC, (dl.kind = 'original') DESC, dl.updated_at DESC
  LIMIT 1
) f
WHERE t.revoked_at IS NULL
ON CONFLICT DO NOTHING;
