-- Users the service answers as unavailable carry why (docs/service-behaviour.md#user-error-codes): the
-- older reason 'deactivated' was written for every "gone" answer and becomes 'artist_deactivated', the
-- closest of the three, on users, their works and any other row that carried it. A user flagged
-- is_deactivated now has one of the three artist_* reasons.

-- ==== Hand-written ================================================================================
ALTER TABLE "users" DROP CONSTRAINT "users_deactivated_check";
UPDATE "users" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
UPDATE "deviations" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
UPDATE "watch_relations" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
UPDATE "folder_members" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
UPDATE "comments" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
UPDATE "profile_posts" SET "removed_reason" = 'artist_deactivated' WHERE "removed_reason" = 'deactivated';
ALTER TABLE "users" ADD CONSTRAINT "users_deactivated_check"
  CHECK (NOT "is_deactivated" OR "removed_reason" IN ('artist_suspended', 'artist_deactivated', 'artist_not_found'));
