import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import { changeLocalTree } from "../../src/downloads/readable-links.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { collection, diff, gallery, marks, member, q, useHarness, user, work, write, writeAndCompare } from "../helpers/readable-tree-compare.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 20, galleryFolders: 3, collectionFolders: 2, favourites: 5, trackedUsers: 0 }, downloadQuota: 500 },
    sources: [gallerySource, collectionsSource],
    quota: 500,
  });
  useHarness(h);
  await h.syncAll(["gallery", "collections"]);
  const summary = await h.runOnce({ concurrency: 4 });
  expect(summary.done).toBeGreaterThan(5);
});

afterAll(async () => {
  await h?.close();
});

describe("the marks against a full write", () => {
  beforeAll(async () => {
    await write();
    await write(); // the first after the sync compares every file; from here on, through the marks
    expect(await diff()).toEqual({ missingOrWrong: [], extra: [] });
  });

  it("a deviation deleted (its downloads and memberships first, as the foreign keys require)", async () => {
    const u = await user();
    const g = await gallery(u, null, "Del");
    const w = await work(u);
    await member("gallery", g, w);
    await writeAndCompare("setup");
    await q("DELETE FROM folder_members WHERE deviationid = $1", [w]);
    await q("DELETE FROM downloads WHERE deviationid = $1", [w]);
    await q("DELETE FROM deviations WHERE deviationid = $1", [w]);
    await writeAndCompare("deviation deleted");
  });

  it("a gallery folder row deleted: its children become roots, its members unfiled", async () => {
    const u = await user();
    const p = await gallery(u, null, "Parent");
    const c = await gallery(u, p, "Child");
    const gc = await gallery(u, c, "Grandchild");
    const [w1, w2, w3] = [await work(u), await work(u), await work(u)];
    await member("gallery", p, w1);
    await member("gallery", c, w2);
    await member("gallery", gc, w3);
    await writeAndCompare("setup");
    await q("DELETE FROM gallery_folders WHERE folderid = $1", [p]);
    await writeAndCompare("parent row deleted");
    await q("DELETE FROM gallery_folders WHERE folderid = $1", [c]);
    await writeAndCompare("child row deleted");
  });

  it("a subtree moved under another parent, then the old parent removed and back", async () => {
    const u = await user();
    const p1 = await gallery(u, null, "P1");
    const p2 = await gallery(u, null, "P2");
    const c = await gallery(u, p1, "C");
    const gc = await gallery(u, c, "GC");
    const w = await work(u);
    await member("gallery", gc, w);
    await writeAndCompare("setup");
    await q("UPDATE gallery_folders SET parent_folderid = $2 WHERE folderid = $1", [c, p2]);
    await writeAndCompare("moved");
    await q("UPDATE gallery_folders SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE folderid = $1", [p2]);
    await writeAndCompare("new parent removed");
    await q("UPDATE gallery_folders SET parent_folderid = NULL, removed_at = NULL, removed_reason = NULL WHERE folderid = $1", [p2]);
    await q("UPDATE gallery_folders SET parent_folderid = $2 WHERE folderid = $1", [p1, gc]); // a loop: p1 under gc under c under p2
    await writeAndCompare("a loop made below a root");
  });

  it("a parent inserted for a folder whose parent was unknown", async () => {
    const u = await user();
    const c = await gallery(u, "red-not-yet", "Orphan");
    const w = await work(u);
    await member("gallery", c, w);
    await writeAndCompare("setup");
    await q("INSERT INTO gallery_folders (folderid, owner_userid, name) VALUES ('red-not-yet', $1, 'Late parent')", [u]);
    await writeAndCompare("parent inserted");
  });

  it("memberships deleted, moved between kinds, folderids changed", async () => {
    const u = await user();
    const g = await gallery(u, null, "G");
    const col = await collection(u, "Col");
    const w = await work(u);
    await member("gallery", g, w);
    await member("collection", col, w);
    await writeAndCompare("setup");
    await q("DELETE FROM folder_members WHERE kind = 'gallery' AND deviationid = $1", [w]);
    await writeAndCompare("membership row deleted");
    await q("UPDATE folder_members SET kind = 'gallery', folderid = $2 WHERE deviationid = $1", [w, g]);
    await writeAndCompare("membership moved to the gallery kind");
    await q("UPDATE gallery_folders SET folderid = 'red-renamed-g' WHERE folderid = $1", [g]);
    await writeAndCompare("gallery folderid changed, members left on the old id");
    await q("UPDATE folder_members SET folderid = 'red-renamed-g' WHERE folderid = $1", [g]);
    await writeAndCompare("members follow");
    await q("UPDATE collection_folders SET folderid = 'red-renamed-c' WHERE folderid = $1", [col]);
    await q("INSERT INTO folder_members (kind, folderid, deviationid) VALUES ('collection', 'red-renamed-c', $1)", [w]);
    await writeAndCompare("collection folderid changed");
    await q("DELETE FROM collection_folders WHERE folderid = 'red-renamed-c'");
    await writeAndCompare("collection row deleted");
  });

  it("users: deleted, inserted for an author without a row, userid changed, renamed with works in others' collections", async () => {
    const a = await user("artist-a");
    const b = await user("collector-b");
    const g = await gallery(a, null, "A's gallery");
    const col = await collection(b, "B's favs");
    const w = await work(a);
    const j = await work(a, { type: "journal" });
    const unfiled = await work(a);
    await member("gallery", g, w);
    await member("collection", col, w);
    await member("collection", col, j);
    await writeAndCompare("setup");
    await q("UPDATE users SET username = 'artist-a-renamed' WHERE userid = $1", [a]);
    await writeAndCompare("artist renamed");
    await q("UPDATE users SET username = 'collector-b-renamed' WHERE userid = $1", [b]);
    await writeAndCompare("collector renamed");
    await q("DELETE FROM users WHERE userid = $1", [a]);
    await writeAndCompare("artist row deleted");
    await q("INSERT INTO users (userid, username) VALUES ($1, 'artist-a-back')", [a]);
    await writeAndCompare("artist row inserted again");
    await q("UPDATE users SET userid = 'red-new-userid' WHERE userid = $1", [b]);
    await writeAndCompare("collector's userid changed");
    expect(unfiled).toBeDefined();
  });

  it("two accounts' folders sharing a deviation; one folder's owner changes", async () => {
    const a = await user();
    const b = await user();
    const ga = await gallery(a, null, "Shared");
    const gb = await gallery(b, null, "Shared");
    const cb = await collection(b, "Shared");
    const w = await work(a);
    await member("gallery", ga, w);
    await member("gallery", gb, w);
    await member("collection", cb, w);
    await writeAndCompare("setup");
    await q("UPDATE gallery_folders SET owner_userid = $2 WHERE folderid = $1", [gb, a]);
    await writeAndCompare("b's folder now a's");
    await q("UPDATE collection_folders SET owner_userid = $2 WHERE folderid = $1", [cb, a]);
    await writeAndCompare("b's collection now a's");
  });

  it("downloads: a better file, a new row standing in, a row moved to another deviation, one no longer stored", async () => {
    const u = await user();
    const w = await work(u);
    const w2 = await work(u);
    await writeAndCompare("setup");
    await q("UPDATE downloads SET path = $2, sha256 = 'beef' WHERE deviationid = $1", [w, `originals/be/ef/${w}-better.png`]);
    await writeAndCompare("better file");
    await q("INSERT INTO downloads (deviationid, kind, status, path, sha256, done_at) VALUES ($1, 'text', 'done', $2, 'abcd', now() + interval '1 day')", [
      w,
      `originals/te/xt/${w}.html`,
    ]);
    await writeAndCompare("text row added beside");
    await q("UPDATE downloads SET status = 'failed' WHERE deviationid = $1 AND kind = 'original'", [w]);
    await writeAndCompare("original failed: the text stands in");
    await q("DELETE FROM downloads WHERE deviationid = $1 AND kind = 'original'", [w2]);
    await q("UPDATE downloads SET deviationid = $2 WHERE deviationid = $1 AND kind = 'text'", [w, w2]);
    await writeAndCompare("a row moved to another deviation");
    await q("UPDATE downloads SET status = 'not_downloadable' WHERE deviationid = $1", [w2]);
    await writeAndCompare("not downloadable, path kept");
    await q("UPDATE downloads SET path = '' WHERE deviationid = $1", [w2]);
    await writeAndCompare("path emptied");
  });

  it("a deviationid changed (ON UPDATE CASCADE to downloads and folder_members)", async () => {
    const u = await user();
    const g = await gallery(u, null, "Cascade");
    const w = await work(u);
    await member("gallery", g, w);
    await writeAndCompare("setup");
    await q("UPDATE deviations SET deviationid = $2 WHERE deviationid = $1", [w, `${w}-NEW`]);
    await writeAndCompare("deviationid changed");
  });

  it("a transaction rolled back, and one committed after the write took its marks", async () => {
    const u = await user();
    const w = await work(u);
    const w0 = await work(u);
    await writeAndCompare("setup");
    const c = await h.pool.connect();
    try {
      await c.query("BEGIN");
      await c.query("UPDATE deviations SET title = 'never' WHERE deviationid = $1", [w]);
      await c.query("ROLLBACK");
      await writeAndCompare("rolled back");
      await c.query("BEGIN");
      await c.query("UPDATE deviations SET title = 'committed mid-write' WHERE deviationid = $1", [w]);
      // Committed once the write has taken its marks and compared (during its first page's placements).
      const proto = ReadableTreeRepository.prototype;
      const original = proto.markedWorks;
      proto.markedWorks = async function (this: ReadableTreeRepository) {
        const r = await original.call(this);
        await c.query("COMMIT");
        return r;
      };
      try {
        await q("UPDATE deviations SET title = 'something else' WHERE deviationid = $1", [w0]);
        await write();
      } finally {
        proto.markedWorks = original;
      }
      expect(await marks()).toContain(`work:${w}`);
      await writeAndCompare("after the commit mid-write");
    } finally {
      c.release();
    }
  });

  it("a pool of one connection writes through the marks", async () => {
    const { createPgPool } = await import("../../src/db/connect.ts");
    const one = createPgPool(h.db.url, 1);
    try {
      const u = await user();
      await work(u);
      await changeLocalTree(one, h.deps.archive);
      expect(await diff()).toEqual({ missingOrWrong: [], extra: [] });
    } finally {
      await one.end();
    }
  });
});
