// Issue 27 row 5's pages: the service's journal HTML with everything row 5 found running, and a page stored as
// src/downloads/store-text.ts stored them before pages were made inert, put in place of a text row's file.
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "./download-harness.ts";

/** Where the payload would report to: nothing listens; a browser's request events are the witness. */
export const BEACON = "http://127.0.0.1:9/";
export const PWNED = "pwned";

/** A script, an onerror handler, an <iframe srcdoc>, a javascript: link (#lure, to click), an SVG handler and a remote image. */
export const HOSTILE_JOURNAL = [
  `<p>An innocent journal.</p>`,
  `<script>document.title=${JSON.stringify(PWNED)};fetch("${BEACON}script")</script>`,
  `<img src="missing.png" onerror="document.title='${PWNED}';fetch('${BEACON}onerror')">`,
  `<iframe srcdoc="<script>parent.document.title='${PWNED}';fetch('${BEACON}srcdoc')</script>"></iframe>`,
  `<a id="lure" href="javascript:void(document.title='${PWNED}')">read more</a>`,
  `<svg><image href="x" onerror="alert(1)"></image></svg>`,
  `<img src="${BEACON}pixel.png">`,
].join("\n");

/** The page as store-text.ts wrote it before issue 27: the service's HTML as it came. */
export function pageAsStoredBefore(title: string, body: string): string {
  return `<!doctype html>\n<html><head><meta charset="utf-8"><title>${title}</title>\n</head>\n<body>\n<h1>${title}</h1>\n${body}\n</body></html>\n`;
}

/** Stores such a page at its content address and points the text row `id` at it; returns the stored file. */
export async function replaceWithOldPage(h: Pick<DownloadHarness, "deps" | "pool">, id: string, title: string, body = HOSTILE_JOURNAL) {
  const old = await h.deps.archive.storeBytes({ bytes: Buffer.from(pageAsStoredBefore(title, body)), ext: "html" });
  await h.pool.query("UPDATE downloads SET path = $2, sha256 = $3, size = $4 WHERE id = $1::bigint", [id, old.relPath, old.sha256, old.size]);
  return old;
}

export type StoredTextRow = { id: string; deviationid: string; path: string; sha256: string; size: number; title: string };

/** The text rows with a stored page, oldest first. */
export async function storedTextRows(h: Pick<DownloadHarness, "pool">): Promise<StoredTextRow[]> {
  const { rows } = await h.pool.query<StoredTextRow>(
    `SELECT d.id::text, d.deviationid, d.path, d.sha256, d.size::int, v.title FROM downloads d JOIN deviations v USING (deviationid)
     WHERE d.kind = 'text' AND d.status = 'done' ORDER BY d.id`,
  );
  return rows;
}

/**
 * A small mirror (seed 5: three journal or literature texts of four works) whose service HTML is HOSTILE_JOURNAL for
 * every text, each stored as a page by a download run (nothing else downloaded).
 */
export async function createHostileJournalHarness(): Promise<DownloadHarness> {
  const h = await createDownloadHarness({
    sim: { seed: 5, dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
    quota: 100,
  });
  await h.syncAll(["gallery"]);
  await h.pool.query("UPDATE deviation_texts SET html = $1, is_empty = false", [HOSTILE_JOURNAL]);
  await h.pool.query("UPDATE downloads SET status = 'failed', next_attempt_at = NULL WHERE kind <> 'text'");
  await h.runOnce();
  return h;
}
