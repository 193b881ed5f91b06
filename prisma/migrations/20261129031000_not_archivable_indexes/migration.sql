-- `dvault status` and the overview count the listed works the service does not offer in full
-- (src/db/not-archivable.repository.ts, CLASSIFIED): they walked every listed work, seconds at a million works
-- (bench/archive-scale.ts). They now start from the works that have a reason, which these partial indexes hold.
-- Their predicates are the repository's, character for character, so the planner can use them.
--
-- ==== Hand-written: partial indexes, which Prisma cannot express (prisma/schema/schema.prisma lists them) ====
CREATE INDEX "deviations_not_archivable_idx" ON "deviations" ("deviationid")
  WHERE "tier_access" = 'locked' OR "premium" -> 'premium_folder_data' ->> 'has_access' = 'false' OR "raw" ->> 'is_multi_media' = 'true';
CREATE INDEX "downloads_partial_idx" ON "downloads" ("deviationid") WHERE "is_partial" AND "status" IN ('done', 'degraded');
