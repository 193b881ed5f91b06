-- A work gone upstream keeps what the service answered (issue 26, "a work gone upstream is marked gone"):
-- `unavailable` is a refusal of /deviation/{deviationid} that does not say "not found", and removed_answer
-- holds the answer itself (status, error, error_code, error_description, or the is_deleted stub), so a
-- reader can tell them apart without dvault's reading of it (docs/service-behaviour.md#deleted-deviation-lookup).

-- AlterEnum
ALTER TYPE "removed_reason" ADD VALUE 'unavailable';

-- AlterTable
ALTER TABLE "deviations" ADD COLUMN     "removed_answer" JSONB;


-- ==== Hand-written ================================================================================
-- An answer belongs to a removal: a row seen live again loses both.
ALTER TABLE "deviations" ADD CONSTRAINT "deviations_removed_answer_check" CHECK ("removed_answer" IS NULL OR "removed_at" IS NOT NULL);
