-- folder_members.position meant two things (issue 26): counted from the folder's end (0 = last in the
-- service's order) when the walk knew the folder's size, from its top otherwise, so ORDER BY position read
-- some folders backwards and others forwards. It now means one thing: where the member stands counted from
-- the folder's end, negative, so ORDER BY position reads every folder in the service's order (its first
-- member -size, its last -1) and a work added at the top renumbers nobody (src/sync/sources/folder-plan.ts#memberPosition).
-- No schema change: the rows are carried forward.

-- ==== Hand-written ================================================================================
-- Folders whose size is known were written counted from the end: b = size - 1 - ordinal becomes
-- ordinal - size = -(b + 1).
UPDATE "folder_members" m SET "position" = -(m."position" + 1)
WHERE m."position" IS NOT NULL AND (
  (m."kind" = 'gallery' AND EXISTS (SELECT 1 FROM "gallery_folders" f WHERE f."folderid" = m."folderid" AND f."size" IS NOT NULL))
  OR (m."kind" = 'collection' AND EXISTS (SELECT 1 FROM "collection_folders" f WHERE f."folderid" = m."folderid" AND f."size" IS NOT NULL))
);

-- The others were written counted from the top (the ordinal): counted from the end of what was listed.
WITH "unsized" AS (
  SELECT m."kind", m."folderid", max(m."position") + 1 AS "listed"
  FROM "folder_members" m
  WHERE m."position" >= 0
  GROUP BY m."kind", m."folderid"
)
UPDATE "folder_members" m SET "position" = m."position" - u."listed"
FROM "unsized" u
WHERE m."kind" = u."kind" AND m."folderid" = u."folderid" AND m."position" >= 0;
