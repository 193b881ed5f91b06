// The readable tree (by-user/...) is changed where the database changed, not rewritten whole (issue 32,
// docs/PERFORMANCE.md#readable-tree): its record (src/db/readable-tree.repository.ts) says which links each stored
// file has on disk and what they were made from, so a write makes again only the links of files whose title, folders
// or collections changed, removes those of files no longer stored, and rebuilds the whole tree, sweeping stray links,
// once when the record is new or by-user/ is gone.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import { createPgPool } from "../../src/db/connect.ts";
import { changeLocalTree, regenerateReadableLinks } from "../../src/downloads/readable-links.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { downloadVerdict, formatDownloadSummary } from "../../src/cli/download.ts";
import { LinkBlockedError } from "../../src/storage/readable-tree.ts";
import { linksUnder } from "../helpers/readable-tree-compare.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 40, galleryFolders: 3, collectionFolders: 2, favourites: 10, trackedUsers: 0 }, downloadQuota: 500 },
    sources: [gallerySource, collectionsSource],
    quota: 500,
  });
  await h.syncAll(["gallery", "collections"]);
  const summary = await h.runOnce({ concurrency: 4 });
  expect(summary.done).toBeGreaterThan(10);
});

afterAll(async () => {
  await h?.close();
});

/** Every link under by-user/, relative to the archive, with its target relative to the archive. */
const tree = () => linksUnder(h.archiveDir);

/** The links a full write from the database makes: what the tree must equal after any write. */
async function expected(): Promise<Map<string, string>> {
  const { buildReadableLinks, MAX_FOLDER_DEPTH } = await import("../../src/storage/links.ts");
  const links = buildReadableLinks(await new ReadableTreeRepository(h.pool).listPlacements(MAX_FOLDER_DEPTH), h.archiveDir);
  return new Map(links.map((l) => [l.linkPath, l.target]));
}

async function write(): Promise<{ links: number; written: number; removed: number }> {
  const r = await regenerateReadableLinks(h.deps);
  if ("busy" in r) throw new Error("the links' lock was held");
  return r;
}

/** A stored original's deviation with its links, the first by id. */
async function storedWork(): Promise<{ deviationid: string; links: string[] }> {
  const all = await tree();
  const { rows } = await h.pool.query<{ deviationid: string }>(
    "SELECT deviationid FROM downloads WHERE kind = 'original' AND status = 'done' ORDER BY deviationid",
  );
  for (const { deviationid } of rows) {
    const links = [...all.keys()].filter((l) => l.includes(`[${deviationid}]`));
    if (links.length > 0) return { deviationid, links };
  }
  throw new Error("no stored original has a link");
}

describe("the readable tree's record", () => {
  it("leaves the tree alone when nothing changed, and makes again only the links of a work whose title changed", async () => {
    await write();
    expect(await tree()).toEqual(await expected());
    expect(await write()).toMatchObject({ written: 0, removed: 0 });

    // A link a person removed by hand is not looked at when its work did not change: the write visits changed works only.
    const { deviationid, links } = await storedWork();
    const others = [...(await tree()).keys()].filter((l) => !l.includes(`[${deviationid}]`));
    const untouched = others[0]!;
    await fs.unlink(path.join(h.archiveDir, untouched));
    await h.pool.query("UPDATE deviations SET title = 'Renamed upstream' WHERE deviationid = $1", [deviationid]);
    const r = await write();
    expect(r).toMatchObject({ written: links.length, removed: links.length });
    const after = await tree();
    for (const old of links) expect(after.has(old)).toBe(false);
    expect([...after.keys()].filter((l) => l.includes(`Renamed upstream [${deviationid}]`))).toHaveLength(links.length);
    expect(after.has(untouched)).toBe(false);
    expect(r.links).toBe(after.size + 1);

    // Removing by-user/ makes the next run rebuild every link (the README's word), one that stores nothing included.
    await h.runOnce(); // whatever another test left due is stored first: the run below stores nothing
    await fs.rm(path.join(h.archiveDir, "by-user"), { recursive: true });
    const rebuilt = await h.runOnce();
    expect(rebuilt.done).toBe(0);
    expect(await tree()).toEqual(await expected());
    expect(rebuilt.links).toMatchObject({ written: (await expected()).size, removed: 0 });
  });

  it("removes the links of a work that left a collection or is no longer stored, and the folders they leave empty", async () => {
    await write();
    const { rows } = await h.pool.query<{ folderid: string; deviationid: string }>(
      `SELECT m.folderid, m.deviationid FROM folder_members m JOIN downloads d ON d.deviationid = m.deviationid AND d.status = 'done'
       WHERE m.kind = 'collection' AND m.removed_at IS NULL ORDER BY m.folderid, m.deviationid`,
    );
    const folder = rows[0]!.folderid;
    const members = rows.filter((r) => r.folderid === folder).map((r) => r.deviationid);
    const before = await tree();
    const collectionLinks = [...before.keys()].filter((l) => l.includes("/collections/") && members.some((id) => l.includes(`[${id}]`)));
    const folderDirs = new Set(collectionLinks.map((l) => path.dirname(l)));
    expect(collectionLinks.length).toBeGreaterThan(0);
    await h.pool.query("UPDATE folder_members SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE folderid = $1", [folder]);
    const r = await write();
    expect(await tree()).toEqual(await expected());
    expect(r.removed).toBeGreaterThanOrEqual(collectionLinks.length);
    for (const dir of folderDirs) {
      const left = [...(await tree()).keys()].filter((l) => path.dirname(l) === dir);
      if (left.length === 0) await expect(fs.stat(path.join(h.archiveDir, dir))).rejects.toThrow(/ENOENT/);
    }

    const gone = await storedWork();
    await h.pool.query("UPDATE downloads SET status = 'wanted', path = NULL WHERE deviationid = $1", [gone.deviationid]);
    const r2 = await write();
    expect(r2).toMatchObject({ written: 0, removed: gone.links.length });
    expect(await tree()).toEqual(await expected());
    const record = new ReadableTreeRepository(h.pool);
    expect(await record.linksOf([gone.deviationid])).toEqual([]);

    // A process whose pool has one connection (DVAULT_DB_POOL_SIZE=1) writes the tree on that one connection.
    const one = createPgPool(h.db.url, 1);
    try {
      const work = await storedWork();
      await h.pool.query("UPDATE deviations SET title = 'Pool of one' WHERE deviationid = $1", [work.deviationid]);
      expect(await changeLocalTree(one, h.deps.archive)).toMatchObject({ written: work.links.length, removed: work.links.length });
      expect(await tree()).toEqual(await expected());
    } finally {
      await one.end();
    }
  });

  it("removes links a write cut short left on disk, and sweeps stray links when the record is new, keeping a person's own files", async () => {
    await write();
    const record = new ReadableTreeRepository(h.pool);
    // A write cut short after placing some of a work's new links: a folder is in the way of its last one.
    const all = await tree();
    const { rows } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM downloads WHERE status = 'done' ORDER BY deviationid");
    const deviationid = rows.map((r) => r.deviationid).find((id) => [...all.keys()].filter((l) => l.includes(`[${id}]`)).length >= 2)!;
    expect(deviationid).toBeDefined();
    await h.pool.query("UPDATE deviations SET title = 'Half written' WHERE deviationid = $1", [deviationid]);
    const { buildReadableLinks, MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT } = await import("../../src/storage/links.ts");
    const half = buildReadableLinks(await record.placementsOf(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT, [deviationid]), h.archiveDir);
    const obstacle = path.join(h.archiveDir, half.at(-1)!.linkPath);
    await fs.mkdir(path.join(obstacle, "in the way"), { recursive: true });
    await expect(write()).rejects.toThrow(/a folder or file is in the way/);
    expect([...(await tree()).keys()].filter((l) => l.includes(`Half written [${deviationid}]`)).length).toBeGreaterThan(0);
    await fs.rm(obstacle, { recursive: true });
    // Then the title changes again before the next write.
    await h.pool.query("UPDATE deviations SET title = 'Final title' WHERE deviationid = $1", [deviationid]);
    await write();
    const now = await tree();
    expect([...now.keys()].filter((l) => l.includes(`Half written [${deviationid}]`))).toEqual([]);
    expect(now).toEqual(await expected());

    // An archive written before the record: stray links of old names and a person's file under by-user/.
    const someLink = [...now.keys()][0]!;
    const stray = path.join(path.dirname(someLink), "Old name [x-stray].png");
    await fs.symlink(path.relative(path.dirname(path.join(h.archiveDir, stray)), path.join(h.archiveDir, now.get(someLink)!)), path.join(h.archiveDir, stray));
    await fs.mkdir(path.join(h.archiveDir, "by-user", "gone-artist", "old folder"), { recursive: true });
    await fs.symlink("../../../nowhere.png", path.join(h.archiveDir, "by-user", "gone-artist", "old folder", "x [y].png"));
    await fs.writeFile(path.join(h.archiveDir, "by-user", "notes.txt"), "mine");
    expect(await write()).toMatchObject({ written: 0, removed: 0 });
    expect((await tree()).has(stray)).toBe(true);
    // As after an upgrade or a restore (no sweep recorded): the next run rebuilds, one that stores nothing included.
    await h.runOnce(); // whatever another test left due is stored first: the run below stores nothing
    await write();
    await h.pool.query("DELETE FROM readable_tree_sweeps");
    const run = await h.runOnce();
    expect(run.done).toBe(0);
    expect(run.links).toMatchObject({ written: 0, removed: 2 });
    expect(await tree()).toEqual(await expected());
    await expect(fs.stat(path.join(h.archiveDir, "by-user", "gone-artist"))).rejects.toThrow(/ENOENT/);
    expect(await fs.readFile(path.join(h.archiveDir, "by-user", "notes.txt"), "utf8")).toBe("mine");
    expect(await record.rebuildDue()).toBe(false);
  });
});

describe("the readable tree's record through sequences of changes", () => {
  /** Writes, then checks the tree is a full write's and that a second write finds nothing to do. */
  async function writeAndCompare(step: string): Promise<void> {
    await write();
    expect(await tree(), step).toEqual(await expected());
    expect(await write(), `${step}: a second write`).toMatchObject({ written: 0, removed: 0 });
  }

  it("equals a full write after folder renames and moves, username and collection renames, moves, better files, hostile titles, journals, deep folders", async () => {
    await writeAndCompare("start");
    const q = (text: string, values: unknown[] = []) => h.pool.query(text, values);
    const { rows: folders } = await q(
      `SELECT g.folderid, g.owner_userid FROM gallery_folders g WHERE g.removed_at IS NULL
       AND EXISTS (SELECT 1 FROM folder_members m JOIN downloads d ON d.deviationid = m.deviationid AND d.status = 'done'
                   WHERE m.folderid = g.folderid AND m.kind = 'gallery' AND m.removed_at IS NULL) ORDER BY g.folderid`,
    );
    expect(folders.length).toBeGreaterThanOrEqual(2);
    const [a, b] = folders as { folderid: string; owner_userid: string }[];
    await q("UPDATE gallery_folders SET name = 'Renamed folder' WHERE folderid = $1", [a!.folderid]);
    await writeAndCompare("gallery folder renamed");
    await q("UPDATE gallery_folders SET parent_folderid = $2 WHERE folderid = $1", [a!.folderid, b!.folderid]);
    await writeAndCompare("gallery folder moved under another");
    await q("UPDATE gallery_folders SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE folderid = $1", [b!.folderid]);
    await writeAndCompare("parent folder removed");
    await q("UPDATE gallery_folders SET removed_at = NULL, removed_reason = NULL WHERE folderid = $1", [b!.folderid]);
    await writeAndCompare("parent folder back");
    // Two sibling folders of one name: rows that tie in PLACE_ORDER.
    await q("UPDATE gallery_folders SET name = 'Same', parent_folderid = NULL WHERE folderid = ANY($1)", [[a!.folderid, b!.folderid]]);
    await writeAndCompare("two folders of one name");

    await q("UPDATE users SET username = 'renamed-owner' WHERE userid = $1", [a!.owner_userid]);
    await writeAndCompare("username changed");
    await q(
      "UPDATE collection_folders SET name = 'Renamed collection' WHERE folderid = (SELECT min(folderid) FROM collection_folders WHERE removed_at IS NULL)",
    );
    await writeAndCompare("collection renamed");

    const work = await storedWork();
    await q("UPDATE folder_members SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE deviationid = $1 AND kind = 'gallery'", [
      work.deviationid,
    ]);
    await q(
      `INSERT INTO folder_members (kind, folderid, deviationid) VALUES ('gallery', $2, $1)
       ON CONFLICT (kind, folderid, deviationid) DO UPDATE SET removed_at = NULL, removed_reason = NULL`,
      [work.deviationid, b!.folderid],
    );
    await writeAndCompare("work moved between folders");
    await q("UPDATE folder_members SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE deviationid = $1", [work.deviationid]);
    await writeAndCompare("work in no folder (unfiled)");
    await q("UPDATE deviations SET type = 'journal' WHERE deviationid = $1", [work.deviationid]);
    await writeAndCompare("work is a journal");

    // A degraded rendition stands in while the original failed, then the original is done again: another path.
    await q(
      `INSERT INTO downloads (deviationid, kind, status, path, sha256, degraded_reason, done_at)
       VALUES ($1, 'degraded', 'degraded', 'originals/aa/bb/degraded-stand-in.jpg', 'aabb', 'no original', now())`,
      [work.deviationid],
    );
    await q("UPDATE downloads SET status = 'failed' WHERE deviationid = $1 AND kind = 'original'", [work.deviationid]);
    await writeAndCompare("degraded stand-in");
    await q("UPDATE downloads SET status = 'done' WHERE deviationid = $1 AND kind = 'original'", [work.deviationid]);
    await writeAndCompare("original done again");

    const other = (
      await q("SELECT deviationid FROM downloads WHERE status = 'done' AND deviationid <> $1 ORDER BY deviationid DESC LIMIT 2", [work.deviationid])
    ).rows as { deviationid: string }[];
    await q("UPDATE deviations SET title = $2 WHERE deviationid = $1", [other[0]!.deviationid, `../../../etc/${"x".repeat(400)}\u0000/..`]);
    await q("UPDATE deviations SET title = $2 WHERE deviationid = $1", [other[1]!.deviationid, "a/b"]);
    await q("UPDATE users SET username = '..' WHERE userid = (SELECT author_userid FROM deviations WHERE deviationid = $1)", [other[1]!.deviationid]);
    await writeAndCompare("hostile titles and username");

    // Folders nested deeper than MAX_FOLDER_DEPTH, a stored work in the deepest.
    let parent = a!.folderid;
    for (let i = 0; i < 20; i++) {
      await q("INSERT INTO gallery_folders (folderid, owner_userid, parent_folderid, name) VALUES ($1, $2, $3, $4)", [
        `deep-${i}`,
        a!.owner_userid,
        parent,
        `level ${i}`,
      ]);
      parent = `deep-${i}`;
    }
    await q("INSERT INTO folder_members (kind, folderid, deviationid) VALUES ('gallery', 'deep-19', $1), ('gallery', 'deep-10', $1)", [other[0]!.deviationid]);
    await writeAndCompare("deep folders");
    // Flattened into the ancestor at MAX_FOLDER_DEPTH (src/storage/links.ts): the root, then level 0 to level 14.
    const flattened = [...(await tree()).keys()].filter((l) => l.includes(`[${other[0]!.deviationid}]`) && l.includes("/level 14/"));
    expect(flattened).toHaveLength(1);
    expect(flattened[0]!.split("/").slice(2, -1)).toHaveLength(16);
    await q("UPDATE gallery_folders SET name = 'top renamed' WHERE folderid = $1", [a!.folderid]);
    await writeAndCompare("the deep chain's top renamed");
  });
});

describe("a write cut short, then the database changes back", () => {
  /** Makes the write of `deviationid`'s links fail at its last link, as a folder in the way does; undoes it. */
  async function obstruct(deviationid: string): Promise<() => Promise<void>> {
    const { buildReadableLinks, MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT } = await import("../../src/storage/links.ts");
    const record = new ReadableTreeRepository(h.pool);
    const links = buildReadableLinks(await record.placementsOf(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT, [deviationid]), h.archiveDir);
    const obstacle = path.join(h.archiveDir, links.at(-1)!.linkPath);
    await fs.mkdir(path.join(obstacle, "in the way"), { recursive: true });
    return () => fs.rm(obstacle, { recursive: true });
  }

  it("download --once with a person's folder where a link goes: the run ends, says what is in the way, and exits 1; theirs is kept", async () => {
    await write();
    const { deviationid } = await storedWork();
    await h.pool.query("UPDATE deviations SET title = 'Renamed while a folder sits there' WHERE deviationid = $1", [deviationid]);
    const clear = await obstruct(deviationid);
    try {
      // The first write meets the folder and leaves the change due; the run's own write meets it again.
      await expect(write()).rejects.toThrow(LinkBlockedError);
      const summary = await h.runOnce({ concurrency: 2 });
      expect(summary.linksBlocked).toMatch(/^cannot place the link by-user\/.*\(a folder or file is in the way\)$/);
      const text = formatDownloadSummary(summary);
      expect(text).toContain(`readable links    not all written: ${summary.linksBlocked}; move it away, then run again (the files are stored)`);
      const verdict = downloadVerdict(summary, "dvault download --once");
      expect(verdict?.exitCode).toBe(1);
      expect(verdict?.message).toBe(`the readable links were not all written (${summary.linksBlocked}): move it away and run dvault download --once again`);
    } finally {
      await clear();
    }
    // Theirs gone, the next run writes what was due.
    const after = await h.runOnce({ concurrency: 2 });
    expect(after.linksBlocked).toBeUndefined();
    expect(await tree()).toEqual(await expected());
  });

  it("removes the links the cut-short write placed when the title goes back to the one recorded", async () => {
    await write();
    const all = await tree();
    const { rows } = await h.pool.query<{ deviationid: string; title: string }>(
      "SELECT d.deviationid, v.title FROM downloads d JOIN deviations v USING (deviationid) WHERE d.status = 'done' ORDER BY d.deviationid",
    );
    const work = rows.find((r) => [...all.keys()].filter((l) => l.includes(`[${r.deviationid}]`)).length >= 2)!;
    await h.pool.query("UPDATE deviations SET title = 'Briefly renamed' WHERE deviationid = $1", [work.deviationid]);
    const clear = await obstruct(work.deviationid);
    await expect(write()).rejects.toThrow(/a folder or file is in the way/);
    await clear();
    await h.pool.query("UPDATE deviations SET title = $2 WHERE deviationid = $1", [work.deviationid, work.title]);
    await write();
    expect(await tree()).toEqual(await expected());
  });

  it("removes the links the cut-short first write of a file placed when the file is no longer stored", async () => {
    await write();
    const work = await storedWork();
    const { rows } = await h.pool.query<{ id: string; status: string; path: string }>(
      "SELECT id, status, path FROM downloads WHERE deviationid = $1 AND path IS NOT NULL",
      [work.deviationid],
    );
    const unstore = () => h.pool.query("UPDATE downloads SET status = 'wanted', path = NULL WHERE deviationid = $1", [work.deviationid]);
    await unstore();
    await write();
    for (const r of rows) await h.pool.query("UPDATE downloads SET status = $2, path = $3 WHERE id = $1", [r.id, r.status, r.path]);
    const clear = await obstruct(work.deviationid);
    await expect(write()).rejects.toThrow(/a folder or file is in the way/);
    await clear();
    await unstore();
    await write();
    expect(await tree()).toEqual(await expected());
  });
});

describe("the noted changes", () => {
  it("are read a page at a time through a key, not by sorting all of them for every page", async () => {
    const { MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT } = await import("../../src/storage/links.ts");
    const session = await h.pool.connect();
    try {
      const record = new ReadableTreeRepository(session);
      await record.noteChanges(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT);
      await session.query("SET enable_seqscan = off");
      const plan = await session.query(
        "EXPLAIN SELECT deviationid, fingerprint FROM readable_tree_changes WHERE deviationid > '' ORDER BY deviationid LIMIT 1000",
      );
      expect(plan.rows.map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"]).join("\n")).toMatch(/Index Scan/);
      await record.dropChanges();
    } finally {
      await session.query("RESET enable_seqscan");
      session.release();
    }
  });
});

describe("links planted by someone else", () => {
  it("replaces or removes a link pointing outside the archive at a link's place, never touching what it points to", async () => {
    await write();
    const outside = await fs.mkdtemp(path.join(h.archiveDir, "..", "dvault-outside-"));
    const precious = path.join(outside, "precious.txt");
    await fs.writeFile(precious, "keep me");
    try {
      const work = await storedWork();
      // At a link the next write removes (its work renamed) and at one it places (the new name).
      const [dropped, ...rest] = work.links;
      await fs.rm(path.join(h.archiveDir, dropped!));
      await fs.symlink(precious, path.join(h.archiveDir, dropped!));
      await h.pool.query("UPDATE deviations SET title = 'Planted' WHERE deviationid = $1", [work.deviationid]);
      const placed = rest.length > 0 ? rest[0]! : dropped!;
      const newName = (await expected()).keys();
      const target = [...newName].find((l) => l.includes(`Planted [${work.deviationid}]`) && path.dirname(l) === path.dirname(placed))!;
      await fs.mkdir(path.dirname(path.join(h.archiveDir, target)), { recursive: true });
      await fs.symlink(outside, path.join(h.archiveDir, target));
      await write();
      expect(await tree()).toEqual(await expected());
      expect(await fs.readFile(precious, "utf8")).toBe("keep me");

      // A folder of the tree that is a link to a folder outside: refused, nothing written or removed there.
      const folder = path.dirname(path.join(h.archiveDir, target));
      const moved = path.join(outside, "moved");
      await fs.rename(folder, moved);
      await fs.symlink(moved, folder);
      const before = (await fs.readdir(moved)).sort();
      await h.pool.query("UPDATE deviations SET title = 'Planted again' WHERE deviationid = $1", [work.deviationid]);
      await expect(write()).rejects.toThrow(/outside the archive/);
      expect((await fs.readdir(moved)).sort()).toEqual(before);
      await fs.rm(folder);
      await fs.rename(moved, folder);
      await write();
      expect(await tree()).toEqual(await expected());
    } finally {
      await fs.rm(outside, { recursive: true });
    }
  });
});

describe("a write that fails", () => {
  it("leaves the tree due, so the next run that stores nothing or the worker's next round writes it", async () => {
    await write();
    const work = await storedWork();
    await h.pool.query("UPDATE deviations SET title = 'Failed once' WHERE deviationid = $1", [work.deviationid]);
    const { buildReadableLinks, MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT } = await import("../../src/storage/links.ts");
    const links = buildReadableLinks(
      await new ReadableTreeRepository(h.pool).placementsOf(MAX_FOLDER_DEPTH, READABLE_LINKS_FORMAT, [work.deviationid]),
      h.archiveDir,
    );
    const obstacle = path.join(h.archiveDir, links.at(-1)!.linkPath);
    await fs.mkdir(path.join(obstacle, "in the way"), { recursive: true });
    await expect(write()).rejects.toThrow(/a folder or file is in the way/);
    await fs.rm(obstacle, { recursive: true });
    const { regenerateLinksIfDirty } = await import("../../src/downloads/readable-links.ts");
    expect(await regenerateLinksIfDirty(h.deps)).toMatchObject({ written: expect.any(Number) });
    expect(await tree()).toEqual(await expected());
  });
});

describe("a name that changed only in case", () => {
  it("keeps the link when the new name is the old entry, as on a filesystem that ignores case", async () => {
    await write();
    const all = await tree();
    const [old, target] = [...all].find(([l]) => {
      const folder = path.basename(path.dirname(l));
      return folder.toLowerCase() !== folder;
    })!;
    // This filesystem tells case apart: a link of the folder's lower-case name to the folder stands for one that does not.
    const folder = path.dirname(path.join(h.archiveDir, old));
    const alias = path.join(path.dirname(folder), path.basename(folder).toLowerCase());
    await fs.symlink(path.basename(folder), alias);
    try {
      const renamed = path.join(path.dirname(path.dirname(old)), path.basename(folder).toLowerCase(), path.basename(old));
      await h.deps.archive.changeLinks([{ linkPath: renamed, target }], [old]);
      expect((await fs.lstat(path.join(h.archiveDir, old))).isSymbolicLink()).toBe(true);
    } finally {
      await fs.unlink(alias);
    }
  });
});

describe("a folder whose links were deleted by hand", () => {
  it("goes when its folder is renamed, as a full write leaves no empty folder", async () => {
    await write();
    const { rows } = await h.pool.query<{ folderid: string; name: string }>(
      `SELECT c.folderid, c.name FROM collection_folders c WHERE c.removed_at IS NULL AND EXISTS (
         SELECT 1 FROM folder_members m JOIN downloads d ON d.deviationid = m.deviationid AND d.path IS NOT NULL
         WHERE m.folderid = c.folderid AND m.kind = 'collection' AND m.removed_at IS NULL) ORDER BY c.folderid`,
    );
    const folder = rows[0]!;
    const dirs = new Set(
      [...(await tree()).keys()].filter((l) => path.basename(path.dirname(l)) === folder.name && l.includes("/collections/")).map((l) => path.dirname(l)),
    );
    expect(dirs.size).toBeGreaterThan(0);
    for (const dir of dirs) for (const name of await fs.readdir(path.join(h.archiveDir, dir))) await fs.unlink(path.join(h.archiveDir, dir, name));
    await h.pool.query("UPDATE collection_folders SET name = $2 WHERE folderid = $1", [folder.folderid, `${folder.name} renamed`]);
    await write();
    for (const dir of dirs) await expect(fs.stat(path.join(h.archiveDir, dir))).rejects.toThrow(/ENOENT/);
    await h.pool.query("UPDATE collection_folders SET name = $2 WHERE folderid = $1", [folder.folderid, folder.name]);
    await write();
  });
});

describe("a person's file in a link's place", () => {
  it("is kept by a rebuild, which places every link", async () => {
    await write();
    const [link] = [...(await tree()).keys()];
    const abs = path.join(h.archiveDir, link!);
    await fs.unlink(abs);
    await fs.writeFile(abs, "my own copy");
    await h.pool.query("DELETE FROM readable_tree_sweeps");
    await write();
    expect(await fs.readFile(abs, "utf8")).toBe("my own copy");
    await fs.unlink(abs);
    await h.pool.query("DELETE FROM readable_tree_sweeps");
    await write();
    expect(await tree()).toEqual(await expected());
  });
});

describe("the marks the mirror's triggers leave (migration 20261130090322_readable_tree_marks)", () => {
  /** The marks not yet read by a write, as kind:key. */
  async function marks(): Promise<string[]> {
    const { rows } = await h.pool.query<{ mark: string }>("SELECT kind || ':' || key AS mark FROM readable_tree_marks ORDER BY id");
    return rows.map((r) => r.mark);
  }

  it("are what a write compares: a change they missed stays unseen until a write compares every file, as after an upgrade", async () => {
    await write();
    expect(await marks()).toEqual([]);
    const work = await storedWork();
    // A change no trigger saw (a restore loads the tables with their triggers off): the marks are all a write reads.
    const client = await h.pool.connect();
    try {
      await client.query("SET session_replication_role = replica");
      await client.query("UPDATE deviations SET title = 'Unseen by the triggers' WHERE deviationid = $1", [work.deviationid]);
    } finally {
      await client.query("RESET session_replication_role");
      client.release();
    }
    expect(await marks()).toEqual([]);
    expect(await write()).toMatchObject({ written: 0, removed: 0 });
    expect(await tree()).not.toEqual(await expected());
    // No format noted (an archive from before the marks): the next write compares every stored file, once.
    await h.pool.query("UPDATE readable_tree_sweeps SET marked_format = NULL");
    expect(await write()).toMatchObject({ written: work.links.length, removed: work.links.length });
    expect(await tree()).toEqual(await expected());
    expect(await new ReadableTreeRepository(h.pool).comparedFormat()).toMatch(/^links-\d+:depth-\d+$/);
    // So does a new link format (or folder depth) in a later version.
    await h.pool.query("UPDATE readable_tree_sweeps SET marked_format = 'links-0:depth-16'");
    expect(await write()).toMatchObject({ written: 0, removed: 0 });
    expect(await new ReadableTreeRepository(h.pool).comparedFormat()).not.toBe("links-0:depth-16");
  });

  it("are removed once read and written, keeping those of writers that came after the write took its own", async () => {
    await write();
    const ids = (await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM downloads WHERE status = 'done' ORDER BY deviationid LIMIT 2")).rows;
    const [a, b] = ids.map((r) => r.deviationid) as [string, string];
    // Changes that leave the links as they are (a position, a no-op update) leave no mark.
    await h.pool.query("UPDATE folder_members SET position = coalesce(position, 0) + 1 WHERE deviationid = $1", [a]);
    await h.pool.query("UPDATE deviations SET title = title WHERE deviationid = $1", [a]);
    expect(await marks()).toEqual([]);
    await h.pool.query("UPDATE deviations SET title = 'Marked before the take' WHERE deviationid = $1", [a]);
    const session = await h.pool.connect();
    try {
      const record = new ReadableTreeRepository(session);
      expect((await record.takeMarks()).marks).toBe(1);
      await h.pool.query("UPDATE deviations SET title = 'Marked after the take' WHERE deviationid = $1", [b]);
      expect(await record.markedWorks()).toEqual([a]);
      await record.dropTakenMarks();
      await record.dropTaken();
    } finally {
      session.release();
    }
    expect(await marks()).toEqual([`work:${b}`]);
    // By hand, a's mark went without its links written: a write that compares every file puts them right.
    await h.pool.query("UPDATE readable_tree_sweeps SET marked_format = NULL");
    await write();
    expect(await marks()).toEqual([]);
    expect(await tree()).toEqual(await expected());
  });

  it("reach a user's works and folders, and every folder beneath a marked folder", async () => {
    await write();
    const { rows } = await h.pool.query<{ folderid: string; owner_userid: string }>(
      "SELECT folderid, owner_userid FROM gallery_folders WHERE removed_at IS NULL ORDER BY folderid LIMIT 1",
    );
    const top = rows[0]!;
    await h.pool.query("INSERT INTO gallery_folders (folderid, owner_userid, parent_folderid, name) VALUES ('marks-child', $1, $2, 'child')", [
      top.owner_userid,
      top.folderid,
    ]);
    await h.pool.query("INSERT INTO gallery_folders (folderid, owner_userid, parent_folderid, name) VALUES ('marks-grandchild', $1, 'marks-child', 'g')", [
      top.owner_userid,
    ]);
    const work = await storedWork();
    await h.pool.query("INSERT INTO folder_members (kind, folderid, deviationid) VALUES ('gallery', 'marks-grandchild', $1)", [work.deviationid]);
    await write();
    expect(await tree()).toEqual(await expected());
    const session = await h.pool.connect();
    try {
      const record = new ReadableTreeRepository(session);
      await h.pool.query("UPDATE gallery_folders SET name = 'top, renamed for the marks' WHERE folderid = $1", [top.folderid]);
      expect((await record.takeMarks()).marks).toBe(1);
      expect(await record.markedWorks()).toContain(work.deviationid);
      await record.dropTaken();
      await h.pool.query("UPDATE users SET username = 'renamed-for-the-marks' WHERE userid = $1", [top.owner_userid]);
      await record.takeMarks();
      const reached = await record.markedWorks();
      const { rows: authored } = await h.pool.query<{ deviationid: string }>("SELECT deviationid FROM deviations WHERE author_userid = $1", [top.owner_userid]);
      for (const { deviationid } of authored) expect(reached).toContain(deviationid);
      expect(reached).toContain(work.deviationid);
      await record.dropTaken();
    } finally {
      session.release();
    }
    await write();
    expect(await tree()).toEqual(await expected());
    expect(await marks()).toEqual([]);
  });

  it("give way to a rebuild when a table they watch is emptied by TRUNCATE, which fires no row's trigger", async () => {
    await write();
    const client = await h.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("TRUNCATE folder_members");
      const { rows } = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM readable_tree_sweeps");
      expect(rows[0]!.n).toBe(0);
      expect((await client.query("SELECT kind, key FROM readable_tree_marks")).rows).toEqual([{ kind: "truncate", key: "folder_members" }]);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
    expect(await new ReadableTreeRepository(h.pool).rebuildDue()).toBe(false);
    // A TRUNCATE that ended while a write ran: that write put the sweep back, and its mark was not among the write's.
    // The next write rebuilds, and its sweep removes a link the record does not hold.
    const [some] = [...(await tree()).keys()];
    const stray = path.join(h.archiveDir, path.dirname(some!), "stray [not recorded].jpg");
    await fs.symlink(path.relative(path.dirname(stray), path.join(h.archiveDir, (await tree()).get(some!)!)), stray);
    expect(await write()).toMatchObject({ removed: 0 });
    await h.pool.query("INSERT INTO readable_tree_marks (kind, key) VALUES ('truncate', 'downloads')");
    expect(await write()).toMatchObject({ removed: 1 });
    await expect(fs.lstat(stray)).rejects.toThrow(/ENOENT/);
    expect(await tree()).toEqual(await expected());
    expect(await marks()).toEqual([]);
  });

  it("are taken and removed by one write at a time: a second waits on the first's lock in PostgreSQL", async () => {
    await write();
    const holder = await h.pool.connect();
    try {
      await holder.query("SELECT pg_advisory_lock(x'647674726565'::bigint)");
      const work = await storedWork();
      await h.pool.query("UPDATE deviations SET title = 'Written after the wait' WHERE deviationid = $1", [work.deviationid]);
      let done = false;
      const writing = changeLocalTree(h.pool, h.deps.archive).then((r) => {
        done = true;
        return r;
      });
      await expect.poll(async () => (await h.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event = 'advisory'")).rows[0].n).toBe(1);
      expect(done).toBe(false);
      await holder.query("SELECT pg_advisory_unlock(x'647674726565'::bigint)");
      expect(await writing).toMatchObject({ written: work.links.length, removed: work.links.length });
    } finally {
      holder.release();
    }
    expect(await tree()).toEqual(await expected());
  });
});
