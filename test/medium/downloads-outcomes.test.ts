// What the service will not give (told apart by code and by the deviation itself, never by wording):
// not downloadable, subscribers only (a blurred,
// tier-locked rendition, marked partial), originals the artist never offered, deleted deviations — all
// recorded and never retried; journals saved as HTML from the mirror with no download call; and the
// simulator's hostile titles and filenames all landing safely inside the archive.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadableOwnerDeviations, type DatasetOptions, type SimDeviation } from "../../src/simulator/dataset.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { syncRepos } from "../../src/sync/repos.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

const DATASET: DatasetOptions = { deviations: 80, galleryFolders: 3, collectionFolders: 2, favourites: 15, trackedUsers: 0, hostileNames: true };

let h: DownloadHarness;
let notOffered: string;
let refused: string;
let tierLocked: string;
let deleted: string;
// The summary of the first run, which every test inspects; later runs in the tests leave each row as it found it.
let first: Awaited<ReturnType<DownloadHarness["runOnce"]>>;

type Row = {
  deviationid: string;
  kind: string;
  status: string;
  rendition: string | null;
  path: string | null;
  is_partial: boolean;
  partial_reason: string | null;
  degraded_reason: string | null;
  sha256: string | null;
};

async function row(id: string, kind = "original"): Promise<Row> {
  const { rows } = await h.pool.query<Row>(
    "SELECT deviationid, kind, status, rendition, path, is_partial, partial_reason, degraded_reason, sha256 FROM downloads WHERE deviationid = $1 AND kind = $2",
    [id, kind],
  );
  return rows[0]!;
}

function downloadCalls(id: string, since = 0): number {
  return h.sim.log().filter((e) => e.seq > since && e.route.endsWith("/deviation/download/{deviationid}") && e.path.toLowerCase().includes(id.toLowerCase()))
    .length;
}

beforeAll(async () => {
  h = await createDownloadHarness({ sim: { dataset: DATASET, downloadQuota: 500 }, sources: [gallerySource, collectionsSource], quota: 500 });
  const mine = downloadableOwnerDeviations(h.sim.truth) as unknown as SimDeviation[];
  const mutable = (d: unknown) => d as { isDownloadable: boolean; tier: { statsAsArray: boolean; state: string } | null };
  notOffered = mine[0]!.deviationid;
  mutable(mine[0]).isDownloadable = false;
  // A favourite by someone else, behind a subscription tier the owner does not have.
  const fav = [...h.sim.truth.deviations.values()].find(
    (d) =>
      d.authorId !== h.sim.truth.ownerId &&
      d.isDownloadable &&
      d.image &&
      d.kind === "image" &&
      !d.isDeleted &&
      h.sim.truth.collectionFolders.some((f) => f.deviationIds.includes(d.deviationid)),
  );
  tierLocked = fav!.deviationid;
  mutable(fav).tier = { statsAsArray: false, state: "active" };
  await h.syncAll(["gallery", "collections"]);
  // After the sync, the mirror still believes these can be downloaded.
  refused = mine[1]!.deviationid;
  mutable(mine[1]).isDownloadable = false;
  deleted = mine[2]!.deviationid;
  h.sim.activity({ kind: "delete_deviation", deviationid: deleted });
  first = await h.runOnce();
}, 180_000);

afterAll(async () => {
  await h?.close();
});

describe("downloadFile outcomes", () => {
  it("records what the service will not give, with the best free rendition where there is one", async () => {
    expect(first.failures).toEqual([]);
    expect(first.notDownloadable).toBeGreaterThanOrEqual(4);

    // Not offered (is_downloadable false in the mirror): no download call at all, the fullview kept.
    expect(downloadCalls(notOffered)).toBe(0);
    expect(await row(notOffered)).toMatchObject({ status: "not_downloadable", rendition: "content", is_partial: false });
    expect((await row(notOffered)).degraded_reason).toMatch(/does not offer the original/);

    expect(downloadCalls(refused)).toBe(1);
    // The refusal's code is shared with the quota (docs/service-behaviour.md#quota-weekly): the deviation,
    // asked for again (free), says it is no longer offered.
    expect(await row(refused)).toMatchObject({ status: "not_downloadable", rendition: "content" });
    expect((await row(refused)).degraded_reason).toBe(
      "the artist no longer offers the original for download (the service refused: HTTP 400 invalid_request error_code 2)",
    );

    const locked = await row(tierLocked);
    expect(locked).toMatchObject({ status: "not_downloadable", rendition: "content", is_partial: true });
    expect(locked.degraded_reason).toMatch(/for subscribers or watchers only \(the service refused: HTTP 403 invalid_request\)/);
    expect(locked.partial_reason).toMatch(/tier-locked/);
    expect(locked.path).not.toBeNull();

    expect(await row(deleted)).toMatchObject({ status: "not_downloadable", path: null });
  });

  it("saves journals and literature as HTML from the mirror, without a download call", async () => {
    const texts = [...h.sim.truth.deviations.values()].filter((d) => d.authorId === h.sim.truth.ownerId && d.text && !d.isDeleted);
    expect(texts.length).toBeGreaterThan(0);
    for (const d of texts) {
      const r = await row(d.deviationid, "text");
      expect(r).toMatchObject({ status: "done", rendition: "html" });
      const html = await fs.readFile(path.join(h.archiveDir, r.path!), "utf8");
      expect(html).toMatch(/^<!doctype html>/);
      expect(r.is_partial).toBe(d.text!.apiHtmlEmpty);
      expect(downloadCalls(d.deviationid)).toBe(0);
    }
  });

  it("replaces a text saved from its excerpt alone once the full body is fetched", async () => {
    // The race: the text's download ran before the sync fetched /deviation/content.
    const d = [...h.sim.truth.deviations.values()].find((x) => x.authorId === h.sim.truth.ownerId && x.text && !x.text.apiHtmlEmpty && !x.isDeleted)!;
    const { rows: saved } = await h.pool.query<{ html: string; css: string | null }>("SELECT html, css FROM deviation_texts WHERE deviationid = $1", [
      d.deviationid,
    ]);
    await h.pool.query("DELETE FROM deviation_texts WHERE deviationid = $1", [d.deviationid]);
    await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE deviationid = $1 AND kind = 'text'", [d.deviationid]);
    expect(await h.runOnce()).toMatchObject({ done: 1 });
    const excerptOnly = await row(d.deviationid, "text");
    expect(excerptOnly).toMatchObject({ status: "done", is_partial: true });
    expect(excerptOnly.partial_reason).toMatch(/excerpt only/);

    // The sync's text fetch lands: the download is wanted again, and the next run stores the whole body.
    const repos = syncRepos(h.pool);
    await repos.deviations.upsertTexts([{ deviationid: d.deviationid, content: { html: saved[0]!.html, css: saved[0]!.css } }], new Date(h.services.now()));
    expect((await row(d.deviationid, "text")).status).toBe("wanted");
    expect(await h.runOnce()).toMatchObject({ done: 1 });
    const whole = await row(d.deviationid, "text");
    expect(whole).toMatchObject({ status: "done", is_partial: false, partial_reason: null });
    expect(await fs.readFile(path.join(h.archiveDir, whole.path!), "utf8")).toContain(saved[0]!.html);
  });

  it("never retries what was refused", async () => {
    const seq = h.lastSeq();
    await h.pool.query("UPDATE downloads SET status = 'wanted' WHERE status = 'wanted'"); // no-op: nothing is wanted any more
    const summary = await h.runOnce();
    expect(summary).toMatchObject({ done: 0, notDownloadable: 0, failed: 0 });
    expect(h.apiCallsSince(seq)).toBe(0);
  });

  it("keeps hostile titles and filenames inside the archive", async () => {
    const { rows } = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM downloads WHERE status = 'done' AND kind = 'original'");
    expect(rows[0]!.n).toBeGreaterThan(20);
    const root = await fs.realpath(h.archiveDir);
    const names: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      for (const e of await fs.readdir(dir, { withFileTypes: true })) {
        const abs = path.join(dir, e.name);
        names.push(e.name);
        if (e.isDirectory()) await walk(abs);
        else if (e.isSymbolicLink()) {
          const target = await fs.realpath(abs);
          expect(target.startsWith(root + path.sep)).toBe(true);
          expect((await fs.stat(target)).isFile()).toBe(true);
        }
      }
    };
    await walk(root);
    for (const name of names) {
      expect(name).not.toMatch(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069/\\]/u);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255);
      expect(name).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i);
      expect(name === "." || name === "..").toBe(false);
    }
    // Every hostile-named original is linked, each under its own name (case and normalisation included).
    const hostile = downloadableOwnerDeviations(h.sim.truth)
      .slice(-20)
      .filter((d) => ![notOffered, refused, deleted].includes(d.deviationid));
    const linked = names.filter((n) => hostile.some((d) => n.includes(`[${d.deviationid}]`)));
    expect(new Set(linked).size).toBeGreaterThanOrEqual(hostile.length);
    // Nothing escaped: the traversal targets do not exist next to the archive.
    await expect(fs.stat(path.join(path.dirname(root), "etc", "passwd"))).rejects.toThrow();
  });
});
