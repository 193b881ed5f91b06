-- AlterTable
ALTER TABLE "sync_sources" ADD COLUMN     "throttled" INTEGER NOT NULL DEFAULT 0;

