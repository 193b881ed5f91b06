-- What a source's listings could not show although the service counts it (issue 20, "say what could not
-- be archived and why"): a tracked artist synced with a public token is listed without mature works
-- (docs/service-behaviour.md#public-token-hides-mature), so the profile's count exceeds what the listings
-- showed. Locked, watchers-only and partial works need no new column: deviations.tier_access, .premium,
-- .raw and downloads.is_partial already say so.

-- CreateTable
CREATE TABLE "listing_shortfalls" (
    "account_id" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "key" TEXT NOT NULL DEFAULT '',
    "reason" TEXT NOT NULL,
    "artist_userid" TEXT NOT NULL,
    "expected" INTEGER NOT NULL,
    "listed" INTEGER NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "listing_shortfalls_pkey" PRIMARY KEY ("account_id","source","key","reason")
);

-- AddForeignKey
ALTER TABLE "listing_shortfalls" ADD CONSTRAINT "listing_shortfalls_account_id_source_key_fkey" FOREIGN KEY ("account_id", "source", "key") REFERENCES "sync_sources"("account_id", "source", "key") ON DELETE CASCADE ON UPDATE CASCADE;


-- ==== Hand-written ================================================================================
ALTER TABLE "listing_shortfalls" ADD CONSTRAINT "listing_shortfalls_reason_check" CHECK ("reason" IN ('hidden_mature'));
ALTER TABLE "listing_shortfalls" ADD CONSTRAINT "listing_shortfalls_counts_check" CHECK ("listed" >= 0 AND "expected" > "listed");
