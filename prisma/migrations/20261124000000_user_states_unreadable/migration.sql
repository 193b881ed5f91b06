-- What the completeness work needs in the schema (docs/service-behaviour.md#user-error-codes,
-- #tolerant-reading): the reasons an artist's works can be unavailable (suspended, deactivated, not
-- found) so they are never mistaken for deleted works, the sync result "incomplete" (the listings of a
-- source disagree or part of it could not be reached), and the table of answers dvault could not read.
-- The new enum values are only added here: PostgreSQL lets a transaction use an added value only after
-- it commits, so the rows that move to them do so in the next migration (20261124010000_artist_states).

-- AlterEnum
ALTER TYPE "removed_reason" ADD VALUE 'artist_suspended';
ALTER TYPE "removed_reason" ADD VALUE 'artist_deactivated';
ALTER TYPE "removed_reason" ADD VALUE 'artist_not_found';

-- AlterEnum
ALTER TYPE "sync_result" ADD VALUE 'incomplete';

-- AlterTable
ALTER TABLE "download_quota_usage" ADD COLUMN     "exhausted_reason" TEXT;

-- AlterTable
ALTER TABLE "users" ADD COLUMN     "unavailable_checked_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "unreadable_responses" (
    "id" BIGSERIAL NOT NULL,
    "request_key" TEXT NOT NULL,
    "subject" TEXT NOT NULL DEFAULT '',
    "operation" TEXT NOT NULL,
    "method" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "params" JSONB NOT NULL DEFAULT '{}',
    "account" TEXT,
    "error" TEXT NOT NULL,
    "raw" JSONB,
    "count" INTEGER NOT NULL DEFAULT 1,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "unreadable_responses_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "unreadable_responses_last_seen_at_idx" ON "unreadable_responses"("last_seen_at");

-- CreateIndex
CREATE UNIQUE INDEX "unreadable_responses_request_key_subject_key" ON "unreadable_responses"("request_key", "subject");

-- ==== Hand-written ================================================================================
ALTER TABLE "unreadable_responses" ADD CONSTRAINT "unreadable_responses_count_check" CHECK ("count" >= 1);
