// A big mirror for the dashboard's load cases (issue 27, row 4), made with SQL generate_series rather than
// through the simulator: artists, works published over years (some undated), a stored original for most of
// them, gallery folders and collections with members, and messages about some works. Used by the quick
// hostile case (test/medium/hostile-dashboard-load.test.ts, a few thousand works), the fault tier's 200 000
// (test/faults/dashboard-load.faults.test.ts) and bench/dashboard-load.ts.
import type { Queryable } from "../../src/db/with-transaction.ts";

export type LoadMirrorSize = { works: number; artists?: number; folders?: number; messages?: number };

/** Fills the mirror of account `accountId`; returns how many works, artists and stored files it made. */
export async function fillLoadMirror(
  db: Queryable,
  accountId: number,
  size: LoadMirrorSize,
): Promise<{ works: number; artists: number; stored: number; folders: number }> {
  const works = size.works;
  const artists = size.artists ?? Math.max(10, Math.round(works / 200));
  const folders = size.folders ?? Math.max(4, Math.round(works / 1000));
  const messages = size.messages ?? Math.max(1, Math.round(works / 20));
  await db.query(
    "INSERT INTO users (userid, username, raw) SELECT 'load-u' || i, 'load_artist' || i, '{}'::jsonb FROM generate_series(1, $1::int) i ON CONFLICT DO NOTHING",
    [artists],
  );
  // One work in 50 has no publication date: the grid puts those last (NULLS LAST).
  await db.query(
    `INSERT INTO deviations (deviationid, title, author_userid, type, published_at, raw, first_seen_at, last_seen_at)
     SELECT 'load-d' || i, 'Load work ' || i, 'load-u' || (i % $2::int + 1), 'image',
       CASE WHEN i % 50 = 0 THEN NULL ELSE timestamptz '2015-01-01' + i * interval '17 minutes' END, '{}'::jsonb,
       timestamptz '2025-01-01' + i * interval '1 second', timestamptz '2025-06-01'
     FROM generate_series(1, $1::int) i`,
    [works, artists],
  );
  const stored = await db.query(
    `INSERT INTO downloads (deviationid, kind, status, path, size, sha256, mime, width, height, done_at, updated_at)
     SELECT 'load-d' || i, 'original', 'done', 'originals/' || left(md5(i::text), 2) || '/' || md5(i::text) || '.png', 50000 + i,
       encode(sha256(i::text::bytea), 'hex'), 'image/png', 1200, 900, timestamptz '2025-06-01', timestamptz '2025-06-01'
     FROM generate_series(1, $1::int) i WHERE i % 5 <> 0`,
    [works],
  );
  await db.query(
    `INSERT INTO gallery_folders (folderid, owner_userid, name, raw) SELECT 'load-g' || i, 'load-u' || (i % $2::int + 1), 'Folder ' || i, '{}'::jsonb
     FROM generate_series(1, $1::int) i`,
    [folders, artists],
  );
  await db.query(
    `INSERT INTO collection_folders (folderid, owner_userid, name, raw) SELECT 'load-c' || i, 'load-u1', 'Collection ' || i, '{}'::jsonb
     FROM generate_series(1, greatest(1, $1::int / 4)) i`,
    [folders],
  );
  await db.query(
    `INSERT INTO folder_members (kind, folderid, deviationid, position)
     SELECT 'gallery'::folder_kind, 'load-g' || (i % $2::int + 1), 'load-d' || i, i FROM generate_series(1, $1::int) i
     UNION ALL
     SELECT 'collection'::folder_kind, 'load-c' || (i % greatest(1, $2::int / 4) + 1), 'load-d' || i, i FROM generate_series(1, $1::int, 7) i`,
    [works, folders],
  );
  await db.query(
    `INSERT INTO messages (account_id, messageid, box, type, originator_userid, subject_deviationid, html, raw, first_seen_at)
     SELECT $1, 'load-m' || i, 'feedback', 'fave', 'load-u' || (i % $3::int + 1), 'load-d' || (i * 13 % $2::int + 1), 'faved', '{}'::jsonb,
       timestamptz '2025-01-01' + i * interval '1 minute'
     FROM generate_series(1, $4::int) i`,
    [accountId, works, artists, messages],
  );
  // As autovacuum would leave it: statistics, and the visibility map that lets a page be read from an index alone.
  await db.query("VACUUM ANALYZE deviations, downloads, folder_members, users, messages");
  return { works, artists, stored: stored.rowCount ?? 0, folders };
}
