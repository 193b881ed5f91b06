// A listing longer than a page, for the checks of the archive's positions and totals (issue 26, item 6): `n`
// deviations by one artist, published a day apart, inserted in one statement.
import type { Queryable } from "../../src/db/with-transaction.ts";

/** Inserts `n` deviations; returns their ids newest first (the archive's order), so `ids[98]` is the 99th item. */
export async function insertListing(db: Queryable, n: number, opts: { prefix?: string; artist?: string } = {}): Promise<string[]> {
  const prefix = opts.prefix ?? "listing";
  const artist = opts.artist ?? "listing-artist";
  await db.query("INSERT INTO users (userid, username) VALUES ($1, $1) ON CONFLICT DO NOTHING", [artist]);
  const { rows } = await db.query<{ deviationid: string }>(
    `INSERT INTO deviations (deviationid, title, author_userid, type, published_at, raw)
     SELECT $1 || '-' || lpad(i::text, 5, '0'), 'Item ' || i, $2, 'image', timestamptz '2020-01-01' + i * interval '1 day', '{}'
     FROM generate_series(1, $3::int) AS i
     RETURNING deviationid`,
    [prefix, artist, n],
  );
  return rows
    .map((r) => r.deviationid)
    .sort()
    .reverse();
}
