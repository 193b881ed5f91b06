-- Downloads that failed on a transient fault are tried again later, with a delay that grows with each
-- failure in a row (src/downloads/retry.ts: minutes, then hours, capped at a day). A failed row with a
-- next_attempt_at is waiting for its retry, one without is failed for good (a permanent refusal).

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "failures" INTEGER NOT NULL DEFAULT 0;

-- ==== Hand-written ================================================================================
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_failures_check" CHECK ("failures" >= 0);

-- Rows that failed before this migration had no retry: give each one failure and a try now, since
-- until this change every failure, transient or not, ended as failed for good.
UPDATE "downloads" SET "failures" = 1, "next_attempt_at" = now() WHERE "status" = 'failed' AND "next_attempt_at" IS NULL;

-- The due index now covers failed rows waiting for their retry.
DROP INDEX "downloads_due_idx";
CREATE INDEX "downloads_due_idx" ON "downloads"("next_attempt_at") WHERE "status" IN ('wanted', 'queued', 'deferred_quota', 'degraded', 'failed');
