// A downloads host's start removes the partial originals nothing will resume (another host stored the file, or
// it was given up, or its row is gone) and keeps those a resume needs, and any young enough to be in use. A start also
// removes the partial files of in-memory writes (Archive.storeBytes) whose writer is proven dead, and any old one.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DownloadRepository } from "../../src/db/download.repository.ts";
import { sweepBytesPartials, sweepStrandedPartials } from "../../src/downloads/partial-sweep.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { Archive } from "../../src/storage/archive.ts";
import { createMirrorDb, type MirrorDb } from "../helpers/mirror-fixtures.ts";
import { writerOfChild } from "../helpers/writer-child.ts";

let m: MirrorDb;
let dir: string;

beforeAll(async () => {
  [m, dir] = await Promise.all([createMirrorDb(), fs.mkdtemp(path.join(os.tmpdir(), "dvault-partial-sweep-"))]);
  await m.pool.query("INSERT INTO users (userid, username) VALUES ('U-1', 'Painter')");
});
afterAll(async () => {
  await m?.drop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

async function row(deviationid: string, status: string): Promise<void> {
  await m.pool.query("INSERT INTO deviations (deviationid, title, author_userid, type, raw) VALUES ($1, $1, 'U-1', 'image', '{}')", [deviationid]);
  const stored = status === "done";
  await m.pool.query(
    "INSERT INTO downloads (deviationid, kind, status, path, size, sha256, done_at) VALUES ($1, 'original', $2, $3, $4, $5, $6)",
    stored ? [deviationid, status, `originals/aa/bb/${"ab".repeat(32)}.png`, 1000, "ab".repeat(32), new Date()] : [deviationid, status, null, null, null, null],
  );
}

describe(sweepStrandedPartials.name, () => {
  it("removes old partial originals of stored, given-up or vanished rows, and keeps the wanted and the young", async () => {
    const archive = new Archive({ root: dir, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    const partials = { done: "D-done", given: "D-given", gone: "D-gone", wanted: "D-wanted", young: "D-young" };
    await row(partials.done, "done");
    await row(partials.given, "not_downloadable");
    await row(partials.wanted, "wanted");
    await row(partials.young, "done");
    for (const id of Object.values(partials)) {
      const file = archive.partialPath(`${id}-original`);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, Buffer.alloc(1000, 7));
      await fs.writeFile(`${file}.json`, JSON.stringify({ etag: '"e"' }));
      if (id !== partials.young) await fs.utimes(file, dayOld, dayOld);
    }
    // Not a transfer's partial file: never touched, whatever its age.
    const other = path.join(dir, ".partial", "blob-0123.part");
    await fs.writeFile(other, "x");
    await fs.utimes(other, dayOld, dayOld);

    const swept = await sweepStrandedPartials({ archive, repo: new DownloadRepository(m.pool), now });
    expect(swept).toEqual({ removed: 3, bytes: 3000 });
    const left = (await fs.readdir(path.join(dir, ".partial"))).sort();
    expect(left).toEqual(
      ["blob-0123.part", "D-wanted-original.part", "D-wanted-original.part.json", "D-young-original.part", "D-young-original.part.json"].sort(),
    );
    expect((await archive.partialState(`${partials.wanted}-original`)).size).toBe(1000);
  });
});

describe(sweepBytesPartials.name, () => {
  it("removes the partial files of in-memory writes whose writer is dead on this host, and any old one; keeps the others", async () => {
    const root = await fs.mkdtemp(path.join(dir, "bytes-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    const dead = await writerOfChild("exited");
    const live = await writerOfChild("running");
    const me = thisWriterTag();
    const [place, hash, pid, nonce] = me.split("-");
    try {
      const random = (i: number) => i.toString(16).padStart(16, "0");
      const name = (writer: string, i: number) => `bytes-${writer}-${random(i)}.part`;
      const gone = {
        dead: name(dead.tag, 1),
        // This very pid under another nonce: an earlier process that had it (a restarted container).
        predecessor: name(`${place}-${hash}-${pid}-${nonce === "0b0b0b0b" ? "0c0c0c0c" : "0b0b0b0b"}`, 2),
        oldMine: name(me, 3),
        // Named as storeBytes named them before it named the writer.
        oldUnnamed: `bytes-${random(4)}.part`,
      };
      const kept = {
        mine: name(me, 5),
        liveChild: name(live.tag, 6),
        // The dead child's pid, but on another host (or in another pid namespace): nothing proves it gone there.
        elsewhere: name(`other.host-0123456789ab-${dead.pid}-0a0a0a0a`, 7),
        unnamed: `bytes-${random(8)}.part`,
        // Not a write of bytes in memory: another sweep's, or none's.
        blob: "blob-0123.part",
        original: "D-old-original.part",
      };
      await fs.mkdir(path.join(root, ".partial"), { recursive: true });
      for (const file of [...Object.values(gone), ...Object.values(kept)]) await fs.writeFile(path.join(root, ".partial", file), Buffer.alloc(10, 7));
      for (const file of [gone.oldMine, gone.oldUnnamed, kept.blob, kept.original]) await fs.utimes(path.join(root, ".partial", file), dayOld, dayOld);

      expect(await sweepBytesPartials({ archive, now })).toEqual({ removed: 4, bytes: 40 });
      expect((await fs.readdir(path.join(root, ".partial"))).sort()).toEqual(Object.values(kept).sort());
      // By the clock it is given: a day on, the young ones are old too (all but the other sweeps' files).
      expect(await sweepBytesPartials({ archive, now: now + 24 * 3_600_000 })).toEqual({ removed: 4, bytes: 40 });
      expect((await fs.readdir(path.join(root, ".partial"))).sort()).toEqual([kept.blob, kept.original].sort());
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});
