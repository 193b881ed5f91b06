-- Digests and immediate alerts (issue 7): every digest and alert sent, through which channel, for which
-- window, with what result, and where each channel's next window starts. The datamodel diff of
-- prisma/digest.prisma.draft, then hand-written SQL at the end.
-- No semicolon may appear inside a statement or a comment here: Prisma's schema engine splits the
-- script on every one.
-- CreateEnum
CREATE TYPE "digest_channel" AS ENUM ('smtp', 'file', 'webhook');

-- CreateEnum
CREATE TYPE "digest_status" AS ENUM ('pending', 'sent', 'failed', 'empty');

-- CreateEnum
CREATE TYPE "alert_kind" AS ENUM ('needs_reauth', 'downloads_paused', 'source_failing', 'heartbeat_missing');

-- CreateTable
CREATE TABLE "digests" (
    "id" BIGSERIAL NOT NULL,
    "channel" "digest_channel" NOT NULL,
    "window_start" TIMESTAMPTZ(3) NOT NULL,
    "window_end" TIMESTAMPTZ(3) NOT NULL,
    "scheduled_at" TIMESTAMPTZ(3) NOT NULL,
    "trigger" TEXT NOT NULL,
    "idempotency_key" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "subject" TEXT,
    "counts" JSONB NOT NULL DEFAULT '{}',
    "status" "digest_status" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "delivery" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(3),

    CONSTRAINT "digests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "digest_state" (
    "channel" "digest_channel" NOT NULL,
    "last_window_end" TIMESTAMPTZ(3) NOT NULL,
    "last_digest_id" BIGINT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "digest_state_pkey" PRIMARY KEY ("channel")
);

-- CreateTable
CREATE TABLE "digest_baselines" (
    "account_id" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "baseline_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "digest_baselines_pkey" PRIMARY KEY ("account_id","source")
);

-- CreateTable
CREATE TABLE "alerts" (
    "id" BIGSERIAL NOT NULL,
    "kind" "alert_kind" NOT NULL,
    "subject" TEXT NOT NULL,
    "title" TEXT NOT NULL,
    "details" JSONB NOT NULL DEFAULT '{}',
    "opened_at" TIMESTAMPTZ(3) NOT NULL,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL,
    "last_notified_at" TIMESTAMPTZ(3),
    "notify_count" INTEGER NOT NULL DEFAULT 0,
    "resolved_at" TIMESTAMPTZ(3),
    "channel_results" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "alerts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "alert_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "alert_id" BIGINT NOT NULL,
    "notified_at" TIMESTAMPTZ(3) NOT NULL,
    "is_reminder" BOOLEAN NOT NULL DEFAULT false,
    "channel_results" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "alert_deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "digests_idempotency_key_key" ON "digests"("idempotency_key");

-- CreateIndex
CREATE INDEX "digests_status_updated_at_idx" ON "digests"("status", "updated_at");

-- CreateIndex
CREATE UNIQUE INDEX "digests_channel_window_start_window_end_key" ON "digests"("channel", "window_start", "window_end");

-- CreateIndex
CREATE INDEX "alerts_kind_subject_idx" ON "alerts"("kind", "subject");

-- CreateIndex
CREATE INDEX "alert_deliveries_alert_id_idx" ON "alert_deliveries"("alert_id");

-- AddForeignKey
ALTER TABLE "alert_deliveries" ADD CONSTRAINT "alert_deliveries_alert_id_fkey" FOREIGN KEY ("alert_id") REFERENCES "alerts"("id") ON DELETE CASCADE ON UPDATE CASCADE;



-- ==== Hand-written: what the Prisma datamodel does not express ======================================

-- A baseline belongs to its account and goes with it.
ALTER TABLE "digest_baselines" ADD CONSTRAINT "digest_baselines_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A window is never empty or backwards, and a sent digest says when it was sent.
ALTER TABLE "digests" ADD CONSTRAINT "digests_window_check" CHECK ("window_start" < "window_end");
ALTER TABLE "digests" ADD CONSTRAINT "digests_sent_check" CHECK ("status" <> 'sent' OR "sent_at" IS NOT NULL);
ALTER TABLE "digests" ADD CONSTRAINT "digests_attempts_check" CHECK ("attempts" >= 0);
ALTER TABLE "digests" ADD CONSTRAINT "digests_trigger_check" CHECK ("trigger" IN ('cron', 'catch_up', 'manual'));
ALTER TABLE "alerts" ADD CONSTRAINT "alerts_notify_count_check" CHECK ("notify_count" >= 0);

-- One open incident per kind and subject: the INSERT ... ON CONFLICT of the evaluator is what makes an
-- alert go out once however many processes evaluate at the same moment.
CREATE UNIQUE INDEX "alerts_open_key" ON "alerts"("kind", "subject") WHERE "resolved_at" IS NULL;
