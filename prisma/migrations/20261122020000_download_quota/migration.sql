-- Downloads of originals (issue 6): a per-account weekly allowance, the weekly usage counted in
-- Postgres, the download worker's bookkeeping on each row, and the record of upgrades and repairs.
-- Hand-written. No semicolon may appear inside a statement or a comment here: Prisma's schema engine
-- splits the script on every one.

-- AlterTable: the allowance override for paid tiers (NULL = DVAULT_DOWNLOAD_QUOTA).
ALTER TABLE "accounts" ADD COLUMN "download_quota" INTEGER;
ALTER TABLE "accounts" ADD CONSTRAINT "accounts_download_quota_check" CHECK ("download_quota" IS NULL OR "download_quota" >= 0);

-- AlterTable: what the download worker knows about each file.
ALTER TABLE "downloads" ADD COLUMN "account_id" INTEGER,
ADD COLUMN "rendition" TEXT,
ADD COLUMN "source_filename" TEXT,
ADD COLUMN "source_size" BIGINT,
ADD COLUMN "degraded_reason" TEXT,
ADD COLUMN "is_partial" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "partial_reason" TEXT,
ADD COLUMN "next_attempt_at" TIMESTAMPTZ(3),
ADD COLUMN "last_attempt_at" TIMESTAMPTZ(3),
ADD COLUMN "queued_at" TIMESTAMPTZ(3),
ADD COLUMN "bytes_transferred" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN "upgraded_at" TIMESTAMPTZ(3),
ADD COLUMN "verified_at" TIMESTAMPTZ(3);

-- CreateTable: successful /deviation/download calls per account and service week (Monday 00:00 UTC).
CREATE TABLE "download_quota_usage" (
    "account_id" INTEGER NOT NULL,
    "week_start" DATE NOT NULL,
    "used" INTEGER NOT NULL DEFAULT 0,
    "exhausted_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "download_quota_usage_pkey" PRIMARY KEY ("account_id","week_start")
);

-- CreateTable: every replacement of a stored file (degraded to original, a re-fetch after verify).
CREATE TABLE "download_history" (
    "id" BIGSERIAL NOT NULL,
    "download_id" BIGINT NOT NULL,
    "deviationid" TEXT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "change" TEXT NOT NULL,
    "old_status" "download_status",
    "old_rendition" TEXT,
    "old_path" TEXT,
    "old_sha256" TEXT,
    "old_size" BIGINT,
    "new_status" "download_status",
    "new_rendition" TEXT,
    "new_path" TEXT,
    "new_sha256" TEXT,
    "new_size" BIGINT,
    "note" TEXT,

    CONSTRAINT "download_history_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "download_history_download_id_changed_at_idx" ON "download_history"("download_id", "changed_at");

-- CreateIndex
CREATE INDEX "download_history_deviationid_idx" ON "download_history"("deviationid");

-- CreateIndex
CREATE INDEX "downloads_account_id_idx" ON "downloads"("account_id");

-- CreateIndex
CREATE INDEX "downloads_sha256_idx" ON "downloads"("sha256");

-- AddForeignKey
ALTER TABLE "download_quota_usage" ADD CONSTRAINT "download_quota_usage_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "download_history" ADD CONSTRAINT "download_history_download_id_fkey" FOREIGN KEY ("download_id") REFERENCES "downloads"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey: the account whose allowance and token fetch the file. A removed account hands its
-- rows to whichever account claims them next.
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE SET NULL ON UPDATE CASCADE;


-- ==== Hand-written: what the Prisma datamodel does not express ======================================

ALTER TABLE "download_quota_usage" ADD CONSTRAINT "download_quota_usage_used_check" CHECK ("used" >= 0);
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_bytes_transferred_check" CHECK ("bytes_transferred" >= 0);
-- A stored file has a path and a checksum, and a degraded one says why it is degraded.
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_stored_check" CHECK ("status" NOT IN ('done', 'degraded') OR ("path" IS NOT NULL AND "sha256" IS NOT NULL));
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_degraded_reason_check" CHECK ("status" <> 'degraded' OR "degraded_reason" IS NOT NULL);
ALTER TABLE "download_history" ADD CONSTRAINT "download_history_change_check" CHECK ("change" IN ('stored', 'upgraded', 'replaced', 'missing', 'corrupt', 'requeued'));

-- What is due: wanted rows, and deferred or degraded rows whose next window has come.
CREATE INDEX "downloads_due_idx" ON "downloads"("next_attempt_at") WHERE "status" IN ('wanted', 'queued', 'deferred_quota', 'degraded');
