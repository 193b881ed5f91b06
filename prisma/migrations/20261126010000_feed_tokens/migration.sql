-- Atom feeds of the archive (issue 20): each feed reader gets its own token in the feed's URL, separate from
-- the dashboard token and revocable on its own, opening every feed or only one (scope). Only a SHA-256 of
-- the token is stored, with the random nonce the token is derived from under the secret key
-- (src/http/feeds/feed-token.ts), so a copy of the database alone does not hold a working feed URL
-- (docs/schema.md). The feeds list the newest arrivals
-- first, which the index on deviations' first-seen time serves without sorting the whole table.

-- CreateTable
CREATE TABLE "feed_tokens" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "nonce" BYTEA NOT NULL,
    "token_sha256" BYTEA NOT NULL,
    "scope" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "feed_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "feed_tokens_name_key" ON "feed_tokens"("name");

-- CreateIndex
CREATE UNIQUE INDEX "feed_tokens_token_sha256_key" ON "feed_tokens"("token_sha256");

-- CreateIndex
CREATE INDEX "deviations_first_seen_at_deviationid_idx" ON "deviations"("first_seen_at", "deviationid");
