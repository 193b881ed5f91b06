-- CreateEnum
CREATE TYPE "removed_reason" AS ENUM ('deleted', 'deactivated', 'access_lost', 'gone_from_listing');

-- CreateEnum
CREATE TYPE "deviation_type" AS ENUM ('image', 'journal', 'literature', 'video', 'other');

-- CreateEnum
CREATE TYPE "folder_kind" AS ENUM ('gallery', 'collection');

-- CreateEnum
CREATE TYPE "watch_kind" AS ENUM ('watcher', 'watching');

-- CreateEnum
CREATE TYPE "comment_subject_kind" AS ENUM ('deviation', 'profile', 'status');

-- CreateEnum
CREATE TYPE "profile_post_kind" AS ENUM ('journal', 'status');

-- CreateEnum
CREATE TYPE "message_box" AS ENUM ('feed', 'feedback', 'mentions');

-- CreateEnum
CREATE TYPE "message_subject_kind" AS ENUM ('deviation', 'profile', 'status', 'comment', 'collection', 'gallery');

-- CreateEnum
CREATE TYPE "sync_result" AS ENUM ('ok', 'degraded', 'failed', 'skipped');

-- CreateEnum
CREATE TYPE "track_token_kind" AS ENUM ('user', 'client');

-- CreateEnum
CREATE TYPE "download_kind" AS ENUM ('original', 'degraded', 'text');

-- CreateEnum
CREATE TYPE "download_status" AS ENUM ('wanted', 'queued', 'deferred_quota', 'done', 'degraded', 'not_downloadable', 'failed');

-- CreateEnum
CREATE TYPE "deviation_field" AS ENUM ('title', 'description', 'tags');

-- CreateEnum
CREATE TYPE "profile_field" AS ENUM ('username', 'real_name', 'tagline', 'website', 'country', 'bio', 'artist_level', 'artist_specialty');

-- CreateTable
CREATE TABLE "users" (
    "userid" TEXT NOT NULL,
    "username" TEXT NOT NULL,
    "usericon" TEXT,
    "type" TEXT,
    "is_deactivated" BOOLEAN NOT NULL DEFAULT false,
    "real_name" TEXT,
    "tagline" TEXT,
    "website" TEXT,
    "country" TEXT,
    "countryid" INTEGER,
    "bio" TEXT,
    "is_artist" BOOLEAN,
    "artist_level" TEXT,
    "artist_specialty" TEXT,
    "cover_photo" TEXT,
    "joined_at" TIMESTAMPTZ(3),
    "watchers" INTEGER,
    "friends" INTEGER,
    "deviations" INTEGER,
    "favourites" INTEGER,
    "comments" INTEGER,
    "pageviews" INTEGER,
    "profile_comments" INTEGER,
    "stats_sampled_at" TIMESTAMPTZ(3),
    "raw" JSONB,
    "profile_raw" JSONB,
    "profile_fetched_at" TIMESTAMPTZ(3),
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "users_pkey" PRIMARY KEY ("userid")
);

-- CreateTable
CREATE TABLE "user_history" (
    "id" BIGSERIAL NOT NULL,
    "userid" TEXT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "field" "profile_field" NOT NULL,
    "old_value" JSONB,
    "new_value" JSONB,

    CONSTRAINT "user_history_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "watch_relations" (
    "account_id" INTEGER NOT NULL,
    "userid" TEXT NOT NULL,
    "kind" "watch_kind" NOT NULL,
    "watch" JSONB,
    "watches_you" BOOLEAN,
    "last_visit_at" TIMESTAMPTZ(3),
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "watch_relations_pkey" PRIMARY KEY ("account_id","kind","userid")
);

-- CreateTable
CREATE TABLE "deviations" (
    "deviationid" TEXT NOT NULL,
    "url" TEXT,
    "title" TEXT,
    "author_userid" TEXT,
    "published_at" TIMESTAMPTZ(3),
    "type" "deviation_type",
    "is_mature" BOOLEAN,
    "is_downloadable" BOOLEAN,
    "download_filesize" BIGINT,
    "is_deleted" BOOLEAN NOT NULL DEFAULT false,
    "is_favourited" BOOLEAN,
    "stats_favourites" INTEGER,
    "stats_comments" INTEGER,
    "stats_sampled_at" TIMESTAMPTZ(3),
    "tier_access" TEXT,
    "premium" JSONB,
    "printid" TEXT,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "deviations_pkey" PRIMARY KEY ("deviationid")
);

-- CreateTable
CREATE TABLE "deviation_metadata" (
    "deviationid" TEXT NOT NULL,
    "description" TEXT,
    "license" TEXT,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "mature_level" TEXT,
    "mature_classification" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "allows_comments" BOOLEAN,
    "submission" JSONB,
    "camera" JSONB,
    "stats" JSONB,
    "stats_sampled_at" TIMESTAMPTZ(3),
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "fetched_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deviation_metadata_pkey" PRIMARY KEY ("deviationid")
);

-- CreateTable
CREATE TABLE "deviation_texts" (
    "deviationid" TEXT NOT NULL,
    "html" TEXT,
    "css" TEXT,
    "css_fonts" JSONB,
    "excerpt" TEXT,
    "is_empty" BOOLEAN NOT NULL,
    "body_fetched_at" TIMESTAMPTZ(3),
    "last_empty_at" TIMESTAMPTZ(3),
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "fetched_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "deviation_texts_pkey" PRIMARY KEY ("deviationid")
);

-- CreateTable
CREATE TABLE "deviation_history" (
    "id" BIGSERIAL NOT NULL,
    "deviationid" TEXT NOT NULL,
    "changed_at" TIMESTAMPTZ(3) NOT NULL,
    "field" "deviation_field" NOT NULL,
    "old_value" JSONB,
    "new_value" JSONB,

    CONSTRAINT "deviation_history_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "gallery_folders" (
    "folderid" TEXT NOT NULL,
    "owner_userid" TEXT NOT NULL,
    "parent_folderid" TEXT,
    "name" TEXT,
    "description" TEXT,
    "position" INTEGER,
    "size" INTEGER,
    "raw" JSONB,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "gallery_folders_pkey" PRIMARY KEY ("folderid")
);

-- CreateTable
CREATE TABLE "collection_folders" (
    "folderid" TEXT NOT NULL,
    "owner_userid" TEXT NOT NULL,
    "name" TEXT,
    "description" TEXT,
    "position" INTEGER,
    "size" INTEGER,
    "raw" JSONB,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "collection_folders_pkey" PRIMARY KEY ("folderid")
);

-- CreateTable
CREATE TABLE "folder_members" (
    "kind" "folder_kind" NOT NULL,
    "folderid" TEXT NOT NULL,
    "deviationid" TEXT NOT NULL,
    "position" INTEGER,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "folder_members_pkey" PRIMARY KEY ("kind","folderid","deviationid")
);

-- CreateTable
CREATE TABLE "comments" (
    "commentid" TEXT NOT NULL,
    "parentid" TEXT,
    "subject_kind" "comment_subject_kind" NOT NULL,
    "subject_id" TEXT NOT NULL,
    "author_userid" TEXT,
    "posted_at" TIMESTAMPTZ(3),
    "body" TEXT,
    "replies" INTEGER,
    "hidden" TEXT,
    "likes" INTEGER,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "comments_pkey" PRIMARY KEY ("commentid")
);

-- CreateTable
CREATE TABLE "statuses" (
    "statusid" TEXT NOT NULL,
    "author_userid" TEXT,
    "body" TEXT,
    "posted_at" TIMESTAMPTZ(3),
    "url" TEXT,
    "comments_count" INTEGER,
    "is_share" BOOLEAN,
    "shared_deviationids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "is_deleted" BOOLEAN NOT NULL DEFAULT false,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "statuses_pkey" PRIMARY KEY ("statusid")
);

-- CreateTable
CREATE TABLE "profile_posts" (
    "owner_userid" TEXT NOT NULL,
    "kind" "profile_post_kind" NOT NULL,
    "item_id" TEXT NOT NULL,
    "position" INTEGER,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "profile_posts_pkey" PRIMARY KEY ("owner_userid","kind","item_id")
);

-- CreateTable
CREATE TABLE "feed_items" (
    "account_id" INTEGER NOT NULL,
    "itemid" TEXT NOT NULL,
    "ts" TIMESTAMPTZ(3),
    "type" TEXT,
    "by_userid" TEXT,
    "bucketid" TEXT,
    "bucket_total" INTEGER,
    "deviationids" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "statusid" TEXT,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "feed_items_pkey" PRIMARY KEY ("account_id","itemid")
);

-- CreateTable
CREATE TABLE "messages" (
    "account_id" INTEGER NOT NULL,
    "messageid" TEXT NOT NULL,
    "box" "message_box" NOT NULL,
    "type" TEXT,
    "ts" TIMESTAMPTZ(3),
    "stackid" TEXT,
    "stack_count" INTEGER,
    "is_new" BOOLEAN,
    "orphaned" BOOLEAN,
    "originator_userid" TEXT,
    "subject_kind" "message_subject_kind",
    "subject_deviationid" TEXT,
    "subject_userid" TEXT,
    "subject_statusid" TEXT,
    "subject_commentid" TEXT,
    "subject_folderid" TEXT,
    "html" TEXT,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "messages_pkey" PRIMARY KEY ("account_id","messageid")
);

-- CreateTable
CREATE TABLE "notes" (
    "account_id" INTEGER NOT NULL,
    "noteid" TEXT NOT NULL,
    "folderid" TEXT,
    "ts" TIMESTAMPTZ(3),
    "unread" BOOLEAN,
    "starred" BOOLEAN,
    "sent" BOOLEAN,
    "subject" TEXT,
    "preview" TEXT,
    "body" TEXT,
    "sender_userid" TEXT,
    "recipients" JSONB,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "notes_pkey" PRIMARY KEY ("account_id","noteid")
);

-- CreateTable
CREATE TABLE "note_folders" (
    "account_id" INTEGER NOT NULL,
    "folderid" TEXT NOT NULL,
    "parentid" TEXT,
    "title" TEXT,
    "count" INTEGER,
    "raw" JSONB,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "note_folders_pkey" PRIMARY KEY ("account_id","folderid")
);

-- CreateTable
CREATE TABLE "stash_stacks" (
    "stackid" TEXT NOT NULL,
    "account_id" INTEGER NOT NULL,
    "parentid" TEXT,
    "title" TEXT,
    "path" TEXT,
    "description" TEXT,
    "size" INTEGER,
    "position" INTEGER,
    "thumb" JSONB,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "stash_stacks_pkey" PRIMARY KEY ("stackid")
);

-- CreateTable
CREATE TABLE "stash_items" (
    "itemid" TEXT NOT NULL,
    "account_id" INTEGER NOT NULL,
    "stackid" TEXT,
    "title" TEXT,
    "description" TEXT,
    "artist_comments" TEXT,
    "original_url" TEXT,
    "category" TEXT,
    "creation_time" TIMESTAMPTZ(3),
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "html" TEXT,
    "files" JSONB,
    "submission" JSONB,
    "stats" JSONB,
    "camera" JSONB,
    "position" INTEGER,
    "raw" JSONB NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),
    "removed_reason" "removed_reason",

    CONSTRAINT "stash_items_pkey" PRIMARY KEY ("itemid")
);

-- CreateTable
CREATE TABLE "countries" (
    "countryid" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "countries_pkey" PRIMARY KEY ("countryid")
);

-- CreateTable
CREATE TABLE "policy_texts" (
    "kind" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "first_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "fetched_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "policy_texts_pkey" PRIMARY KEY ("kind","sha256")
);

-- CreateTable
CREATE TABLE "sync_sources" (
    "account_id" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "key" TEXT NOT NULL DEFAULT '',
    "cursor" JSONB,
    "sweep_started_at" TIMESTAMPTZ(3),
    "last_run_at" TIMESTAMPTZ(3),
    "last_result" "sync_result",
    "last_error" TEXT,
    "unavailable_reason" TEXT,
    "last_complete_sweep_at" TIMESTAMPTZ(3),
    "next_run_at" TIMESTAMPTZ(3),
    "new_count" INTEGER NOT NULL DEFAULT 0,
    "changed_count" INTEGER NOT NULL DEFAULT 0,
    "removed_count" INTEGER NOT NULL DEFAULT 0,
    "api_calls" INTEGER NOT NULL DEFAULT 0,
    "throttle_waits" INTEGER NOT NULL DEFAULT 0,
    "duration_ms" INTEGER NOT NULL DEFAULT 0,
    "gaps" JSONB NOT NULL DEFAULT '{}',
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sync_sources_pkey" PRIMARY KEY ("account_id","source","key")
);

-- CreateTable
CREATE TABLE "tracked_users" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "username" TEXT NOT NULL,
    "userid" TEXT,
    "token_kind" "track_token_kind" NOT NULL,
    "limitation" TEXT,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_at" TIMESTAMPTZ(3),

    CONSTRAINT "tracked_users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "downloads" (
    "id" BIGSERIAL NOT NULL,
    "deviationid" TEXT NOT NULL,
    "kind" "download_kind" NOT NULL,
    "status" "download_status" NOT NULL DEFAULT 'wanted',
    "priority" INTEGER NOT NULL DEFAULT 0,
    "path" TEXT,
    "size" BIGINT,
    "sha256" TEXT,
    "mime" TEXT,
    "width" INTEGER,
    "height" INTEGER,
    "source_etag" TEXT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "done_at" TIMESTAMPTZ(3),

    CONSTRAINT "downloads_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_history_userid_changed_at_idx" ON "user_history"("userid", "changed_at");

-- CreateIndex
CREATE INDEX "watch_relations_userid_idx" ON "watch_relations"("userid");

-- CreateIndex
CREATE INDEX "deviations_author_userid_idx" ON "deviations"("author_userid");

-- CreateIndex
CREATE INDEX "deviations_published_at_idx" ON "deviations"("published_at");

-- CreateIndex
CREATE INDEX "deviation_metadata_tags_idx" ON "deviation_metadata" USING GIN ("tags");

-- CreateIndex
CREATE INDEX "deviation_history_deviationid_changed_at_idx" ON "deviation_history"("deviationid", "changed_at");

-- CreateIndex
CREATE INDEX "gallery_folders_owner_userid_idx" ON "gallery_folders"("owner_userid");

-- CreateIndex
CREATE INDEX "collection_folders_owner_userid_idx" ON "collection_folders"("owner_userid");

-- CreateIndex
CREATE INDEX "folder_members_deviationid_idx" ON "folder_members"("deviationid");

-- CreateIndex
CREATE INDEX "comments_subject_kind_subject_id_idx" ON "comments"("subject_kind", "subject_id");

-- CreateIndex
CREATE INDEX "comments_author_userid_idx" ON "comments"("author_userid");

-- CreateIndex
CREATE INDEX "statuses_author_userid_idx" ON "statuses"("author_userid");

-- CreateIndex
CREATE INDEX "feed_items_account_id_ts_idx" ON "feed_items"("account_id", "ts");

-- CreateIndex
CREATE INDEX "feed_items_deviationids_idx" ON "feed_items" USING GIN ("deviationids");

-- CreateIndex
CREATE INDEX "messages_account_id_box_ts_idx" ON "messages"("account_id", "box", "ts");

-- CreateIndex
CREATE INDEX "messages_stackid_idx" ON "messages"("stackid");

-- CreateIndex
CREATE INDEX "messages_subject_deviationid_idx" ON "messages"("subject_deviationid");

-- CreateIndex
CREATE INDEX "notes_account_id_folderid_idx" ON "notes"("account_id", "folderid");

-- CreateIndex
CREATE INDEX "notes_account_id_sender_userid_idx" ON "notes"("account_id", "sender_userid");

-- CreateIndex
CREATE INDEX "stash_stacks_account_id_idx" ON "stash_stacks"("account_id");

-- CreateIndex
CREATE INDEX "stash_items_account_id_idx" ON "stash_items"("account_id");

-- CreateIndex
CREATE INDEX "stash_items_stackid_idx" ON "stash_items"("stackid");

-- CreateIndex
CREATE INDEX "sync_sources_next_run_at_idx" ON "sync_sources"("next_run_at");

-- CreateIndex
CREATE INDEX "tracked_users_account_id_idx" ON "tracked_users"("account_id");

-- CreateIndex
CREATE UNIQUE INDEX "downloads_deviationid_kind_key" ON "downloads"("deviationid", "kind");

-- AddForeignKey
ALTER TABLE "user_history" ADD CONSTRAINT "user_history_userid_fkey" FOREIGN KEY ("userid") REFERENCES "users"("userid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "watch_relations" ADD CONSTRAINT "watch_relations_userid_fkey" FOREIGN KEY ("userid") REFERENCES "users"("userid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deviation_metadata" ADD CONSTRAINT "deviation_metadata_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deviation_texts" ADD CONSTRAINT "deviation_texts_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deviation_history" ADD CONSTRAINT "deviation_history_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "folder_members" ADD CONSTRAINT "folder_members_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;


-- ==== Hand-written: what the Prisma datamodel does not express ======================================

-- account_id foreign keys (plain Int columns in the datamodel, see prisma/mirror.prisma.draft).
-- Archived rows keep their account: deleting an account with an archive is refused.
ALTER TABLE "watch_relations" ADD CONSTRAINT "watch_relations_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "feed_items" ADD CONSTRAINT "feed_items_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "messages" ADD CONSTRAINT "messages_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "notes" ADD CONSTRAINT "notes_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "note_folders" ADD CONSTRAINT "note_folders_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "stash_stacks" ADD CONSTRAINT "stash_stacks_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "stash_items" ADD CONSTRAINT "stash_items_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- Bookkeeping goes with its account.
ALTER TABLE "sync_sources" ADD CONSTRAINT "sync_sources_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "tracked_users" ADD CONSTRAINT "tracked_users_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- removed_at and removed_reason are set and cleared together.
ALTER TABLE "users" ADD CONSTRAINT "users_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "watch_relations" ADD CONSTRAINT "watch_relations_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "deviations" ADD CONSTRAINT "deviations_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "gallery_folders" ADD CONSTRAINT "gallery_folders_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "collection_folders" ADD CONSTRAINT "collection_folders_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "folder_members" ADD CONSTRAINT "folder_members_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "comments" ADD CONSTRAINT "comments_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "statuses" ADD CONSTRAINT "statuses_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "profile_posts" ADD CONSTRAINT "profile_posts_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "messages" ADD CONSTRAINT "messages_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "notes" ADD CONSTRAINT "notes_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "note_folders" ADD CONSTRAINT "note_folders_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "stash_stacks" ADD CONSTRAINT "stash_stacks_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));
ALTER TABLE "stash_items" ADD CONSTRAINT "stash_items_removed_check" CHECK (("removed_at" IS NULL) = ("removed_reason" IS NULL));

-- A deviation the service reports deleted is removed as deleted, a deactivated user as deactivated.
ALTER TABLE "deviations" ADD CONSTRAINT "deviations_deleted_check" CHECK (NOT "is_deleted" OR "removed_reason" = 'deleted');
ALTER TABLE "users" ADD CONSTRAINT "users_deactivated_check" CHECK (NOT "is_deactivated" OR "removed_reason" = 'deactivated');
-- is_empty means exactly "no body known": an empty answer is never stored as the text.
ALTER TABLE "deviation_texts" ADD CONSTRAINT "deviation_texts_is_empty_check" CHECK ("is_empty" = ("html" IS NULL));
ALTER TABLE "deviation_texts" ADD CONSTRAINT "deviation_texts_html_not_blank_check" CHECK ("html" IS NULL OR btrim("html") <> '');
ALTER TABLE "policy_texts" ADD CONSTRAINT "policy_texts_kind_check" CHECK ("kind" IN ('privacy', 'submission', 'tos'));
ALTER TABLE "sync_sources" ADD CONSTRAINT "sync_sources_gaps_check" CHECK (jsonb_typeof("gaps") = 'object');
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_attempts_check" CHECK ("attempts" >= 0);

-- Partial indexes for the questions asked most: what vanished, what is unread or new, what to download.
CREATE INDEX "deviations_removed_idx" ON "deviations"("removed_at") WHERE "removed_at" IS NOT NULL;
CREATE INDEX "folder_members_live_idx" ON "folder_members"("kind", "folderid", "position") WHERE "removed_at" IS NULL;
CREATE INDEX "notes_unread_idx" ON "notes"("account_id", "ts" DESC) WHERE "unread" AND "removed_at" IS NULL;
CREATE INDEX "messages_new_idx" ON "messages"("account_id", "ts" DESC) WHERE "is_new";
CREATE INDEX "downloads_todo_idx" ON "downloads"("priority" DESC, "created_at") WHERE "status" IN ('wanted', 'queued');

-- Usernames are case-insensitive on the service.
CREATE INDEX "users_username_lower_idx" ON "users"(lower("username"));
CREATE UNIQUE INDEX "tracked_users_account_username_key" ON "tracked_users"("account_id", lower("username"));

-- HTML with the volatile part of signed CDN URLs (token=...) blanked, so a re-signed URL inside a
-- description is not a change. Used by the change detection of src/db/deviation.repository.ts.
-- No semicolon may appear inside a statement or a comment here: the WASM schema engine splits on them.
CREATE FUNCTION "mirror_unsigned"(html text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT
  AS $$ SELECT regexp_replace(html, '(\?|&(amp.)?)token=[^&"''<>[:space:]]*', '\1token=', 'g') $$;
