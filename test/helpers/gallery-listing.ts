// A gallery for the grid's checks (test/browser/gallery.test.ts, test/http/archive-grid.test.ts): `n` works by
// one artist, five days apart from 2023-01-01, their stored files in five shapes (portrait, landscape, square,
// tall, wide); every 7th not archived (a placeholder tile), every 11th a literature text, every 3rd tagged "sea".
import type { Queryable } from "../../src/db/with-transaction.ts";

export const SHAPES: ReadonlyArray<readonly [number, number]> = [
  [900, 1200],
  [1600, 900],
  [1000, 1000],
  [600, 1800],
  [2000, 800],
];

export type GalleryWork = { id: string; published: string; width: number | null; height: number | null; type: string; tags: string[] };

/** Inserts the works; returns them newest first (the grid's order). */
export async function insertGallery(db: Queryable, n: number, artist = "gal-artist"): Promise<GalleryWork[]> {
  await db.query("INSERT INTO users (userid, username) VALUES ($1, $1) ON CONFLICT DO NOTHING", [artist]);
  const works: GalleryWork[] = [];
  for (let i = 1; i <= n; i++) {
    const [w, h] = SHAPES[i % SHAPES.length]!;
    const stored = i % 7 !== 0 && i % 11 !== 0;
    works.push({
      id: `gal-${String(i).padStart(4, "0")}`,
      published: new Date(Date.UTC(2023, 0, 1) + i * 5 * 86_400_000).toISOString(),
      width: stored ? w : null,
      height: stored ? h : null,
      type: i % 11 === 0 ? "literature" : "image",
      tags: i % 3 === 0 ? ["sea", "blue"] : ["land"],
    });
  }
  await db.query(
    `INSERT INTO deviations (deviationid, title, author_userid, type, published_at, raw)
     SELECT w.id, 'Work ' || w.id, $2, w.type::deviation_type, w.published::timestamptz, '{}'
     FROM jsonb_to_recordset($1::jsonb) AS w(id text, published text, type text)`,
    [JSON.stringify(works), artist],
  );
  await db.query(
    `INSERT INTO deviation_metadata (deviationid, tags, raw)
     SELECT w.id, ARRAY(SELECT jsonb_array_elements_text(w.tags)), '{}' FROM jsonb_to_recordset($1::jsonb) AS w(id text, tags jsonb)`,
    [JSON.stringify(works)],
  );
  await db.query(
    `INSERT INTO downloads (deviationid, kind, status, path, size, sha256, mime, width, height, rendition)
     SELECT w.id, 'original', 'done', 'originals/' || w.id || '.png', 1000, md5(w.id) || md5(w.id || 'x'), 'image/png', w.width, w.height, 'original'
     FROM jsonb_to_recordset($1::jsonb) AS w(id text, width int, height int) WHERE w.width IS NOT NULL`,
    [JSON.stringify(works)],
  );
  return works.reverse();
}
