-- dvault import gallery-dl (issue 18): originals a user already has on disk are adopted into the archive
-- without spending the weekly download allowance. downloads.source says where a stored file came from,
-- and imported_files records every adopted file with the user's file it came from (docs/schema.md).

-- AlterTable
ALTER TABLE "downloads" ADD COLUMN     "source" TEXT NOT NULL DEFAULT 'service';

-- CreateTable
CREATE TABLE "imported_files" (
    "id" BIGSERIAL NOT NULL,
    "deviationid" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "rendition" TEXT,
    "path" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "source_path" TEXT NOT NULL,
    "linked" BOOLEAN NOT NULL DEFAULT false,
    "download_id" BIGINT,
    "evidence" TEXT,
    "imported_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "imported_files_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "imported_files_path_idx" ON "imported_files"("path");

-- CreateIndex
CREATE INDEX "imported_files_download_id_idx" ON "imported_files"("download_id");

-- CreateIndex
CREATE UNIQUE INDEX "imported_files_deviationid_sha256_key" ON "imported_files"("deviationid", "sha256");

-- AddForeignKey
ALTER TABLE "imported_files" ADD CONSTRAINT "imported_files_deviationid_fkey" FOREIGN KEY ("deviationid") REFERENCES "deviations"("deviationid") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "imported_files" ADD CONSTRAINT "imported_files_download_id_fkey" FOREIGN KEY ("download_id") REFERENCES "downloads"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- ==== Hand-written ================================================================================
ALTER TABLE "downloads" ADD CONSTRAINT "downloads_source_check" CHECK ("source" IN ('service', 'imported'));
ALTER TABLE "imported_files" ADD CONSTRAINT "imported_files_role_check" CHECK ("role" IN ('original', 'rendition', 'extra_image'));
ALTER TABLE "imported_files" ADD CONSTRAINT "imported_files_size_check" CHECK ("size" >= 0);
