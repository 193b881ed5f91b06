// The readable tree from the database: one original referenced from 3 gallery folders (one nested) and
// 2 collections gives 5 links to one stored file; journals, unfiled files and hostile names included.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Archive } from "../../src/storage/archive.ts";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import { buildReadableLinks, MAX_FOLDER_DEPTH } from "../../src/storage/links.ts";
import { readableName } from "../../src/storage/sanitize.ts";
import { createMirrorDb, type MirrorDb } from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let dir: string;

beforeAll(async () => {
  m = await createMirrorDb();
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-links-"));
});
afterAll(async () => {
  await m?.drop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

async function sql(text: string, values: unknown[] = []): Promise<void> {
  await m.pool.query(text, values);
}

async function user(userid: string, username: string) {
  await sql("INSERT INTO users (userid, username) VALUES ($1, $2)", [userid, username]);
}

async function deviation(id: string, title: string | null, author: string, type = "image") {
  await sql("INSERT INTO deviations (deviationid, title, author_userid, type, raw) VALUES ($1, $2, $3, $4::deviation_type, '{}')", [id, title, author, type]);
}

async function galleryFolder(folderid: string, owner: string, name: string, parent: string | null = null) {
  await sql("INSERT INTO gallery_folders (folderid, owner_userid, name, parent_folderid) VALUES ($1, $2, $3, $4)", [folderid, owner, name, parent]);
}

async function collectionFolder(folderid: string, owner: string, name: string) {
  await sql("INSERT INTO collection_folders (folderid, owner_userid, name) VALUES ($1, $2, $3)", [folderid, owner, name]);
}

async function member(kind: "gallery" | "collection", folderid: string, deviationid: string, removed = false) {
  await sql("INSERT INTO folder_members (kind, folderid, deviationid, removed_at, removed_reason) VALUES ($1::folder_kind, $2, $3, $4, $5::removed_reason)", [
    kind,
    folderid,
    deviationid,
    removed ? new Date() : null,
    removed ? "gone_from_listing" : null,
  ]);
}

async function download(deviationid: string, kind: string, status: string, relPath: string | null, sha = "0".repeat(64)) {
  await sql(
    `INSERT INTO downloads (deviationid, kind, status, path, sha256, degraded_reason, done_at)
     VALUES ($1, $2::download_kind, $3::download_status, $4, $5, $6, now())`,
    [deviationid, kind, status, relPath, relPath ? sha : null, status === "degraded" ? "quota" : null],
  );
}

describe(buildReadableLinks.name, () => {
  it("links one stored original from 3 folders and 2 collections as 5 links to one file", async () => {
    const archive = new Archive({ root: path.join(dir, "archive"), minFreeBytes: 0 });
    const original = await archive.storeBytes({ bytes: Buffer.from("the original bytes"), ext: "png" });
    const rendition = await archive.storeBytes({ bytes: Buffer.from("a degraded rendition"), ext: "jpg" });
    const journal = await archive.storeBytes({ bytes: Buffer.from("<p>journal</p>"), ext: "html" });

    await user("U-ARTIST", "Artist");
    await user("U-OWNER", "Owner/..");
    await deviation("D-SHARED", "../../etc/passwd", "U-ARTIST");
    await deviation("D-DEGRADED", "CON", "U-ARTIST");
    await deviation("D-JOURNAL", "Evil \u202Egnp.exe", "U-ARTIST", "journal");
    await deviation("D-LOOSE", null, "U-ARTIST");
    await deviation("D-WANTED", "not stored yet", "U-ARTIST");

    await galleryFolder("G-A", "U-ARTIST", "Featured");
    await galleryFolder("G-B", "U-ARTIST", "Sketches");
    await galleryFolder("G-PARENT", "U-ARTIST", "Parent");
    await galleryFolder("G-CHILD", "U-ARTIST", "Child..", "G-PARENT");
    await galleryFolder("G-GONE", "U-ARTIST", "Old");
    await collectionFolder("C-1", "U-OWNER", "Faves");
    await collectionFolder("C-2", "U-OWNER", "Mo|re");
    for (const f of ["G-A", "G-B", "G-CHILD"]) await member("gallery", f, "D-SHARED");
    await member("gallery", "G-GONE", "D-SHARED", true);
    for (const f of ["C-1", "C-2"]) await member("collection", f, "D-SHARED");
    await member("gallery", "G-B", "D-DEGRADED");
    await member("gallery", "G-B", "D-WANTED");

    await download("D-SHARED", "original", "done", original.relPath, original.sha256);
    // A degraded rendition kept alongside a finished original loses to it.
    await download("D-SHARED", "degraded", "degraded", rendition.relPath, rendition.sha256);
    await download("D-DEGRADED", "original", "degraded", rendition.relPath, rendition.sha256);
    await download("D-JOURNAL", "text", "done", journal.relPath, journal.sha256);
    // An absolute path inside the archive is accepted; one outside is ignored.
    await download("D-LOOSE", "original", "done", archive.resolveInside(original.relPath), original.sha256);
    await download("D-WANTED", "original", "wanted", null);

    const links = await buildReadableLinks(await new ReadableTreeRepository(m.pool).listPlacements(MAX_FOLDER_DEPTH), archive.root);
    const shared = readableName({ title: "../../etc/passwd", deviationid: "D-SHARED", ext: "png" });
    const sharedLinks = links.filter((l) => l.linkPath.endsWith(shared));
    expect(sharedLinks.map((l) => l.linkPath).sort()).toEqual(
      [
        `by-user/Artist/Featured/${shared}`,
        `by-user/Artist/Parent/Child/${shared}`,
        `by-user/Artist/Sketches/${shared}`,
        `by-user/Owner_/collections/Faves/${shared}`,
        `by-user/Owner_/collections/Mo_re/${shared}`,
      ].sort(),
    );
    expect(new Set(sharedLinks.map((l) => l.target))).toEqual(new Set([original.relPath]));
    expect(links).toContainEqual({
      linkPath: `by-user/Artist/Sketches/${readableName({ title: "CON", deviationid: "D-DEGRADED", ext: "jpg" })}`,
      target: rendition.relPath,
      deviationid: "D-DEGRADED",
    });
    expect(links).toContainEqual({ linkPath: "by-user/Artist/journals/Evil gnp.exe [D-JOURNAL].html", target: journal.relPath, deviationid: "D-JOURNAL" });
    expect(links).toContainEqual({ linkPath: "by-user/Artist/unfiled/untitled [D-LOOSE].png", target: original.relPath, deviationid: "D-LOOSE" });
    expect(links.some((l) => l.linkPath.includes("D-WANTED"))).toBe(false);
    expect(links).toHaveLength(8);
    // Deterministic.
    expect(await buildReadableLinks(await new ReadableTreeRepository(m.pool).listPlacements(MAX_FOLDER_DEPTH), archive.root)).toEqual(links);

    expect(await archive.writeLinks(links)).toEqual({ written: 8, removed: 0 });
    const target = await fs.realpath(archive.resolveInside(original.relPath));
    for (const l of sharedLinks) expect(await fs.realpath(archive.resolveInside(l.linkPath))).toBe(target);
    // The original is stored once: the 5 links plus the unfiled one all name the same inode.
    const inodes = new Set(
      await Promise.all(links.filter((l) => l.target === original.relPath).map(async (l) => (await fs.stat(archive.resolveInside(l.linkPath))).ino)),
    );
    expect(inodes.size).toBe(1);

    // Leaving a collection removes its link on the next regeneration.
    await sql("UPDATE folder_members SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE folderid = 'C-2'");
    const after = await buildReadableLinks(await new ReadableTreeRepository(m.pool).listPlacements(MAX_FOLDER_DEPTH), archive.root);
    expect(after).toHaveLength(7);
    expect(await archive.writeLinks(after)).toEqual({ written: 0, removed: 1 });
  });
});
