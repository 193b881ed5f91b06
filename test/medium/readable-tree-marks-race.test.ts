// The readable tree written through the marks while rows commit between a write's steps; folder loops; marks of keys gone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadableTreeRepository } from "../../src/db/readable-tree.repository.ts";
import type { DownloadHarness } from "../helpers/download-harness.ts";
import { diff, gallery, marks, member, q, startMarksHarness, user, work, write, writeAndCompare } from "../helpers/readable-tree-compare.ts";

let h: DownloadHarness;
beforeAll(async () => {
  h = await startMarksHarness();
});
afterAll(async () => {
  await h?.close();
});

type Method = "takeMarks" | "markedWorks" | "noteChanges" | "nextChanges" | "placementsOf" | "recordIntent" | "record" | "dropTakenMarks";
/** Runs `during` once, just after the repository's `method` returns in the next write. */
async function writeWith(method: Method, during: () => Promise<unknown>): Promise<void> {
  const proto = ReadableTreeRepository.prototype as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const original = proto[method]!;
  let done = false;
  proto[method] = async function (this: unknown, ...args: unknown[]) {
    const r = await original.apply(this, args);
    if (!done) {
      done = true;
      await during();
    }
    return r;
  };
  try {
    await write();
  } finally {
    proto[method] = original;
  }
  expect(done, `${method} ran`).toBe(true);
}

describe("changes committed during a write", () => {
  for (const method of ["takeMarks", "markedWorks", "noteChanges", "nextChanges", "placementsOf", "recordIntent", "record"] as const) {
    it(`after ${method}: a title, a new stored work, a folder rename, a membership; the next write puts them right`, async () => {
      const u = await user();
      const g = await gallery(u, null, `F ${method}`);
      const [w1, w2] = [await work(u), await work(u)];
      await member("gallery", g, w1);
      await writeAndCompare("setup");
      // Something for the write to do, so that it pages.
      await q("UPDATE deviations SET title = $2 WHERE deviationid = $1", [w1, `before ${method}`]);
      await writeWith(method, async () => {
        await q("UPDATE deviations SET title = $2 WHERE deviationid = $1", [w1, `during ${method}`]);
        await q("UPDATE gallery_folders SET name = $2 WHERE folderid = $1", [g, `F renamed ${method}`]);
        await q("INSERT INTO folder_members (kind, folderid, deviationid) VALUES ('gallery', $1, $2)", [g, w2]);
        await work(u);
      });
      expect((await marks()).length).toBeGreaterThan(0);
      await writeAndCompare(`after a change during ${method}`);
    });
  }

  it("a TRUNCATE committed during a write that is not a rebuild: the next write rebuilds", async () => {
    const u = await user();
    const w = await work(u);
    await writeAndCompare("setup");
    await q("UPDATE deviations SET title = 'x' WHERE deviationid = $1", [w]);
    await q("CREATE TABLE IF NOT EXISTS red_keep AS SELECT * FROM folder_members");
    await writeWith("placementsOf", () => q("TRUNCATE folder_members"));
    expect(await new ReadableTreeRepository(h.pool).rebuildDue()).toBe(true);
    await write();
    expect(await diff()).toEqual({ missingOrWrong: [], extra: [] });
    await q("INSERT INTO folder_members SELECT * FROM red_keep");
    await writeAndCompare("memberships back");
  });
});

describe("folder loops and marks of keys gone", () => {
  it("a loop of folders made, broken by a DELETE, and a folder its own parent", async () => {
    const u = await user();
    const a = await gallery(u, null, "LA");
    const b = await gallery(u, a, "LB");
    const c = await gallery(u, b, "LC");
    const w = await work(u);
    await member("gallery", c, w);
    await writeAndCompare("setup");
    await q("UPDATE gallery_folders SET parent_folderid = $2 WHERE folderid = $1", [a, b]); // a <-> b: c unreachable
    await writeAndCompare("loop");
    await q("DELETE FROM gallery_folders WHERE folderid = $1", [a]); // b a root again
    await writeAndCompare("loop broken by a delete");
    await q("UPDATE gallery_folders SET parent_folderid = folderid WHERE folderid = $1", [b]);
    await writeAndCompare("its own parent");
    await q("UPDATE gallery_folders SET parent_folderid = NULL WHERE folderid = $1", [b]);
    await writeAndCompare("a root again");
  });

  it("a chain moved past MAX_FOLDER_DEPTH and back", async () => {
    const u = await user();
    let parent: string | null = null;
    const chain: string[] = [];
    for (let i = 0; i < 10; i++) chain.push((parent = await gallery(u, parent, `d${i}`)));
    const other: string[] = [];
    parent = null;
    for (let i = 0; i < 10; i++) other.push((parent = await gallery(u, parent, `e${i}`)));
    const w = await work(u);
    await member("gallery", chain[9]!, w);
    await member("gallery", chain[5]!, w);
    await writeAndCompare("setup");
    await q("UPDATE gallery_folders SET parent_folderid = $2 WHERE folderid = $1", [chain[0], other[9]]);
    await writeAndCompare("moved below another chain: 20 deep");
    await q("UPDATE gallery_folders SET name = 'renamed deep' WHERE folderid = $1", [chain[7]]);
    await writeAndCompare("renamed below the cut");
    await q("UPDATE gallery_folders SET removed_at = now(), removed_reason = 'gone_from_listing' WHERE folderid = $1", [other[2]]);
    await writeAndCompare("a folder above removed: the rest a root");
  });

  it("marks of works, users and folders that no longer exist, or never did", async () => {
    await q("INSERT INTO readable_tree_marks (kind, key) VALUES ('work', 'nope'), ('user', 'nope'), ('gallery', 'nope'), ('collection', 'nope')");
    await writeAndCompare("marks of nothing");
  });
});
