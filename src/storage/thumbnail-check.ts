// `dvault verify`'s look at the thumbnails: every original has both WebP sizes that decode (or its
// placeholder tile); with `fix`, the missing, unreadable and not yet made ones are made. Thumbnails are made
// from the originals after they are stored (the worker's thumbnails.backfill, `dvault thumbnails --once`, the
// dashboard and the digest when they first show one), so a file without any is "not made", never "missing":
// missing means made and then (partly) gone. A thumbnail (or the folder of originals) reached through a link that
// leads out of the archive is reported as such and not followed; the check goes on with the next file. None
// of it changes verify's exit code: the originals are the archive.
import { ORIGINALS_DIR, OutsideArchiveError } from "./layout.ts";
import type { OriginalRef, Thumbnails } from "./thumbnails.ts";

export type ThumbnailCheck = {
  originals: number;
  ok: number;
  placeholders: number;
  /** Made, then a part went missing or empty (one WebP size of two). */
  missing: string[];
  unreadable: string[];
  /** Nothing stored yet: never made (files stored since the last backfill, imported, restored), or every piece removed. */
  notMade: string[];
  /** Made again (with fix). */
  rebuilt: number;
  /** Could not be made again (with fix): key and reason. */
  failed: string[];
  /** Thumbnails (or originals/ itself) behind a link out of the archive: the path refused, never followed. */
  outside: string[];
};

export async function checkThumbnails(thumbs: Thumbnails, opts: { fix: boolean }): Promise<ThumbnailCheck> {
  const r: ThumbnailCheck = { originals: 0, ok: 0, placeholders: 0, missing: [], unreadable: [], notMade: [], rebuilt: 0, failed: [], outside: [] };
  const rebuild = async (o: OriginalRef, force: boolean) => {
    try {
      await thumbs.ensure(o, { force });
      r.rebuilt += 1;
    } catch (err) {
      r.failed.push(`${o.key}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const checkOne = async (o: OriginalRef) => {
    const state = await thumbs.state(o);
    if (state === "placeholder") {
      r.placeholders += 1;
    } else if (state === "partial" || state === "none") {
      (state === "partial" ? r.missing : r.notMade).push(o.key);
      if (opts.fix) await rebuild(o, false);
    } else if (await thumbs.readable(o)) {
      r.ok += 1;
    } else {
      r.unreadable.push(o.key);
      if (opts.fix) await rebuild(o, true);
    }
  };
  const outside = (err: unknown, fallback: string) => {
    if (!(err instanceof OutsideArchiveError)) throw err;
    r.outside.push(err.relPath.startsWith("/") ? fallback : err.relPath);
  };
  try {
    for await (const o of thumbs.originals()) {
      r.originals += 1;
      await checkOne(o).catch((err: unknown) => outside(err, o.key));
    }
  } catch (err) {
    outside(err, `${ORIGINALS_DIR}/`);
  }
  return r;
}

export function formatThumbnailCheck(r: ThumbnailCheck, fix: boolean): string {
  const broken = r.missing.length + r.unreadable.length;
  const lines = [
    `thumbnails ${r.ok} ok, ${r.placeholders} placeholder(s), ${r.missing.length} missing, ${r.unreadable.length} unreadable, ${r.notMade.length} not made yet of ${r.originals} file(s)`,
    ...r.missing.slice(0, 20).map((k) => `  missing    thumbnails of ${k}`),
    ...r.unreadable.slice(0, 20).map((k) => `  unreadable thumbnails of ${k}`),
    ...(r.outside.length
      ? [
          `  ${r.outside.length} path(s) lead out of the archive through a link, not followed (remove the link; the check went on):`,
          ...r.outside.slice(0, 20).map((p) => `  outside    ${p}`),
        ]
      : []),
  ];
  if (fix && broken + r.notMade.length > 0)
    lines.push(`  made ${r.rebuilt}${r.failed.length ? `, ${r.failed.length} failed: ${r.failed.slice(0, 5).join("; ")}` : ""}`);
  else {
    if (broken > 0) lines.push(`  run dvault verify --fix (or dvault thumbnails --once) to make the ${broken} missing or unreadable thumbnail set(s) again`);
    if (r.notMade.length > 0)
      lines.push(
        `  the ${r.notMade.length} not made yet are made by a running worker, or when the dashboard or a digest first shows them; dvault thumbnails --once makes them now`,
      );
  }
  return lines.join("\n");
}
