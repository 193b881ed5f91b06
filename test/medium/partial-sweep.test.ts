// A downloads host's start removes the partial originals nothing will resume (another host stored the file, or
// it was given up, or its row is gone) and keeps those a resume needs, and any young enough to be in use. A start also
// removes the partial files of in-memory writes (Archive.storeBytes) whose writer is proven dead, and any old one; so too
// an import's copies (Archive.adoptFile) and the local blob store's (a thumbnail, a readable index, a migrated object),
// whose names carry their writer; the temp files `dvault storage migrate` and copyBlob copy an object through in
// .partial/; and a batch's journal of placed originals once nothing it lists is still wanted.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DownloadRepository } from "../../src/db/download.repository.ts";
import { postgresCoordinator } from "../../src/coord/postgres.ts";
import { sweepPartialsAtStart, sweepStrandedPartials, sweepWrittenPartials } from "../../src/downloads/partial-sweep.ts";
import { type PlacedOriginal, PlacedOriginals, placedOriginalsPrefix } from "../../src/downloads/placed-originals.ts";
import { createLogger } from "../../src/log.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { Archive } from "../../src/storage/archive.ts";
import { LocalBlobStore } from "../../src/storage/blob-store.ts";
import { copyBlob } from "../../src/storage/blob-transfer.ts";
import { originalRelPath } from "../../src/storage/layout.ts";
import { LocalDisk } from "../../src/storage/local-disk.ts";
import { migrateStore } from "../../src/storage/migrate-store.ts";
import { TEST_ENGINE } from "../helpers/env.ts";
import { createMirrorDb, type MirrorDb } from "../helpers/mirror-fixtures.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { createTestRedis } from "../helpers/redis.ts";
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

/** Files of 10 bytes named `names` in `folder` (made if missing), those of `old` a day old: what a sweep is given to judge. */
async function plant(folder: string, names: readonly string[], old: readonly string[], dayOld: Date): Promise<void> {
  await fs.mkdir(folder, { recursive: true });
  for (const file of names) await fs.writeFile(path.join(folder, file), Buffer.alloc(10, 7));
  for (const file of old) await fs.utimes(path.join(folder, file), dayOld, dayOld);
}

async function row(deviationid: string, status: string): Promise<void> {
  await m.pool.query("INSERT INTO deviations (deviationid, title, author_userid, type, raw) VALUES ($1, $1, 'U-1', 'image', '{}')", [deviationid]);
  const stored = status === "done";
  await m.pool.query(
    "INSERT INTO downloads (deviationid, kind, status, path, size, sha256, done_at) VALUES ($1, 'original', $2, $3, $4, $5, $6)",
    stored ? [deviationid, status, `originals/aa/bb/${"ab".repeat(32)}.png`, 1000, "ab".repeat(32), new Date()] : [deviationid, status, null, null, null, null],
  );
}

/** The rows of the five cases a sweep judges, their ids `<tag>-done` and so on: stored, given up, gone (no row), still wanted, and stored but young. */
async function fiveCases(tag: string) {
  const ids = { done: `${tag}-done`, given: `${tag}-given`, gone: `${tag}-gone`, wanted: `${tag}-wanted`, young: `${tag}-young` };
  await row(ids.done, "done");
  await row(ids.given, "not_downloadable");
  await row(ids.wanted, "wanted");
  await row(ids.young, "done");
  return ids;
}

describe(sweepStrandedPartials.name, () => {
  it("removes old partial originals of stored, given-up or vanished rows, and keeps the wanted and the young", async () => {
    const archive = new Archive({ root: dir, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    const partials = await fiveCases("D");
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

  it("removes an old journal of placed originals (placed-journal.ts) once every row it lists is stored, given up or gone; keeps one with a row still wanted, and the young", async () => {
    const root = await fs.mkdtemp(path.join(dir, "journals-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    await row("J-done", "done");
    await row("J-given", "not_downloadable");
    await row("J-wanted", "wanted");
    const journal = (...ids: string[]) => `${ids.map((deviationid) => JSON.stringify({ deviationid })).join("\n")}\n`;
    const names = {
      settled: `placed-batch-${"1".repeat(16)}.jsonl`,
      wanted: `placed-batch-${"2".repeat(16)}.jsonl`,
      young: `placed-batch-${"3".repeat(16)}.jsonl`,
    };
    await fs.mkdir(path.join(root, ".partial"), { recursive: true });
    await fs.writeFile(path.join(root, ".partial", names.settled), journal("J-done", "J-given", "J-gone"));
    await fs.writeFile(path.join(root, ".partial", names.wanted), journal("J-done", "J-wanted"));
    await fs.writeFile(path.join(root, ".partial", names.young), journal("J-done"));
    for (const name of [names.settled, names.wanted]) await fs.utimes(path.join(root, ".partial", name), dayOld, dayOld);

    const swept = await sweepStrandedPartials({ archive, repo: new DownloadRepository(m.pool), now });
    expect(swept.removed).toBe(1);
    expect((await fs.readdir(path.join(root, ".partial"))).sort()).toEqual([names.wanted, names.young]);
  });
});

describe("the placed originals' notes and store keys", () => {
  /** A placed original of `deviationid` as download-file.ts keeps it, placed at `placedAt`. */
  const placedOf = (deviationid: string, placedAt: Date): PlacedOriginal => {
    const sha256 = createHash("sha256").update(deviationid).digest("hex");
    return {
      deviationid,
      accountId: 1,
      placedAt: placedAt.toISOString(),
      row: { status: "done", rendition: "original", path: originalRelPath(sha256, "png"), size: 10, sha256, mime: "image/png", bytes: 10 },
    };
  };

  it("removes an old note (local-disk.ts writePlacedNote) whose row is stored, given up or gone, and one a crash left before its rename; keeps a wanted or failed row's and the young", async () => {
    const root = await fs.mkdtemp(path.join(dir, "notes-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    // A row failed for good is given up only until a person asks for it again (`dvault downloads retry`): its note stays.
    const ids = { ...(await fiveCases("N")), failed: "N-failed" };
    await row(ids.failed, "failed");
    for (const id of Object.values(ids)) await archive.keepPlacedNote(`${id}-original`, JSON.stringify(placedOf(id, dayOld)));
    const partial = path.join(root, ".partial");
    const leftByCrash = "N-done-original.part.placed.json.tmp";
    await fs.writeFile(path.join(partial, leftByCrash), "{}");
    for (const name of await fs.readdir(partial)) if (!name.startsWith(ids.young)) await fs.utimes(path.join(partial, name), dayOld, dayOld);

    const swept = await sweepStrandedPartials({ archive, repo: new DownloadRepository(m.pool), now });
    expect(swept.removed).toBe(4);
    expect((await fs.readdir(partial)).sort()).toEqual([
      "N-failed-original.part.placed.json",
      "N-wanted-original.part.placed.json",
      "N-young-original.part.placed.json",
    ]);
    expect(archive.readPlacedNote(`${ids.wanted}-original`)).toBe(JSON.stringify(placedOf(ids.wanted, dayOld)));
  });

  it("forgets at a downloads host's start the store's old keys whose row is stored, given up or gone; keeps a wanted or failed row's, the young, and what it cannot read", async () => {
    const root = await fs.mkdtemp(path.join(dir, "keys-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    const testRedis = TEST_ENGINE === "redis" ? await createTestRedis() : undefined;
    const schema = `dvault_coord_${randomBytes(4).toString("hex")}`;
    const coord = testRedis?.coord ?? (await postgresCoordinator(m.pool, { schema, sweepEveryMs: 0 }));
    const prefix = testRedis?.prefix ?? "dvault-test";
    try {
      const ids = { ...(await fiveCases("K")), failed: "K-failed" };
      await row(ids.failed, "failed");
      const placed = new PlacedOriginals(coord, prefix, archive);
      for (const id of Object.values(ids))
        await coord.put(`${placedOriginalsPrefix(prefix)}${id}`, JSON.stringify(placedOf(id, id === ids.young ? new Date(now) : dayOld)));
      await coord.put(`${placedOriginalsPrefix(prefix)}K-unread`, "not a placed original");
      const lines: { msg: string; removed?: number }[] = [];
      const log = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });

      await sweepPartialsAtStart({ archive, repo: new DownloadRepository(m.pool), placed, now, log });
      const left = (await coord.keysStartingWith(placedOriginalsPrefix(prefix))).map((k) => k.slice(placedOriginalsPrefix(prefix).length)).sort();
      expect(left).toEqual([ids.failed, "K-unread", ids.wanted, ids.young]);
      expect(lines.find((l) => l.removed !== undefined)?.removed).toBe(3);
    } finally {
      await coord.close();
      await testRedis?.cleanup();
      if (!testRedis) await m.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    }
  });
});

/** A fresh archive, a day-old time, and writers of this host: an exited child, a running one (killed by the caller), this process. */
async function writersSetUp(prefix: string) {
  const root = await fs.mkdtemp(path.join(dir, prefix));
  const now = Date.now();
  const [dead, live] = [await writerOfChild("exited"), await writerOfChild("running")];
  return { root, archive: new Archive({ root, minFreeBytes: 0 }), now, dayOld: new Date(now - 24 * 3_600_000), dead, live, me: thisWriterTag() };
}

const random = (i: number) => i.toString(16).padStart(16, "0");

describe(sweepWrittenPartials.name, () => {
  it("removes the partial files of in-memory writes whose writer is dead on this host, and any old one not of a writer running here; keeps the others", async () => {
    const { root, archive, now, dayOld, dead, live, me } = await writersSetUp("bytes-");
    const [place, hash, pid, nonce] = me.split("-");
    try {
      const name = (writer: string, i: number) => `bytes-${writer}-${random(i)}.part`;
      const gone = {
        dead: name(dead.tag, 1),
        // This very pid under another nonce: an earlier process that had it (a restarted container).
        predecessor: name(`${place}-${hash}-${pid}-${nonce === "0b0b0b0b" ? "0c0c0c0c" : "0b0b0b0b"}`, 2),
        // Named as storeBytes named them before it named the writer.
        oldUnnamed: `bytes-${random(4)}.part`,
      };
      const kept = {
        mine: name(me, 5),
        // A writer that runs here keeps its file however old: a long copy may still need it.
        oldMine: name(me, 3),
        liveChild: name(live.tag, 6),
        // The dead child's pid, but on another host (or in another pid namespace): nothing proves it gone there.
        elsewhere: name(`other.host-0123456789ab-${dead.pid}-0a0a0a0a`, 7),
        unnamed: `bytes-${random(8)}.part`,
        // Not a write of bytes in memory: another sweep's, or none's.
        blob: "blob-0123.part",
        original: "D-old-original.part",
      };
      const old = [kept.oldMine, gone.oldUnnamed, kept.blob, kept.original];
      await plant(path.join(root, ".partial"), [...Object.values(gone), ...Object.values(kept)], old, dayOld);

      const bytesOnly = ["bytes"] as const;
      expect(await sweepWrittenPartials({ archive, now, kinds: bytesOnly })).toEqual({ removed: 3, bytes: 30 });
      expect((await fs.readdir(path.join(root, ".partial"))).sort()).toEqual(Object.values(kept).sort());
      // By the clock it is given: a day on, the young ones are old too, and go unless their writer runs here (nor the
      // other sweeps' files).
      expect(await sweepWrittenPartials({ archive, now: now + 24 * 3_600_000, kinds: bytesOnly })).toEqual({ removed: 2, bytes: 20 });
      expect((await fs.readdir(path.join(root, ".partial"))).sort()).toEqual([kept.mine, kept.oldMine, kept.liveChild, kept.blob, kept.original].sort());
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});

describe("the local blob store's partial files", () => {
  const partialNames = async (root: string, write: () => Promise<unknown>) => (await partialNamesDuring(path.join(root, ".partial"), write)).names;

  it("names write's and putFile's partial file for the store's writer, and only at random without one", async () => {
    const root = await fs.mkdtemp(path.join(dir, "blob-names-"));
    const me = thisWriterTag();
    const named = new RegExp(`^blob-${me.replaceAll(".", "\\.")}-[0-9a-f]{16}\\.part$`);
    const disk = new LocalDisk({ root, fileMode: 0o600, dirMode: 0o700 });
    const store = new LocalBlobStore(disk, { writer: me });
    const written = await partialNames(root, () => store.write("thumbnails/aa/bb/one.s.webp", Buffer.from("a thumbnail")));
    expect(written).toHaveLength(1);
    expect(written[0]).toMatch(named);
    const source = path.join(root, "source");
    await fs.writeFile(source, "an object to put");
    const put = await partialNames(root, () => store.putFile("originals/aa/bb/two.bin", source));
    expect(put).toHaveLength(1);
    expect(put[0]).toMatch(named);
    // The Archive's own store (no store given) writes as the archive's writer.
    const archive = new Archive({ root, minFreeBytes: 0, writer: me });
    const viaArchive = await partialNames(root, () => archive.blobs.write("thumbnails/aa/bb/three.s.webp", Buffer.from("another")));
    expect(viaArchive[0]).toMatch(named);
    // A store without a writer keeps the old names, which the sweep takes only by age.
    const unnamed = await partialNames(root, () => new LocalBlobStore(disk).write("thumbnails/aa/bb/four.s.webp", Buffer.from("x")));
    expect(unnamed[0]).toMatch(/^blob-[0-9a-f]{16}\.part$/);
    expect(await fs.readFile(path.join(root, "thumbnails/aa/bb/one.s.webp"), "utf8")).toBe("a thumbnail");
    expect(await fs.readdir(path.join(root, ".partial"))).toEqual([]);
  });

  it("are removed once their writer is dead on this host, or old and not of a writer running here; a live writer's stay", async () => {
    const { root, archive, now, dayOld, dead, live, me } = await writersSetUp("blob-sweep-");
    try {
      const name = (writer: string, i: number) => `blob-${writer}-${random(i)}.part`;
      const gone = {
        dead: name(dead.tag, 1),
        // Named as the blob store named them before it named the writer.
        oldUnnamed: `blob-${random(3)}.part`,
        // The other kind, from the same dead writer: the start's sweep takes both.
        deadBytes: `bytes-${dead.tag}-${random(4)}.part`,
      };
      const kept = {
        mine: name(me, 5),
        liveChild: name(live.tag, 6),
        // A writer that runs here keeps its file however old.
        oldLive: name(live.tag, 2),
        elsewhere: name(`other.host-0123456789ab-${dead.pid}-0a0a0a0a`, 7),
        unnamed: `blob-${random(8)}.part`,
        original: "D-old-original.part",
      };
      const partialDir = path.join(root, ".partial");
      await plant(partialDir, [...Object.values(gone), ...Object.values(kept)], [kept.oldLive, gone.oldUnnamed, kept.original], dayOld);

      // The blob kind alone first: the dead writer's bytes file is another kind's.
      expect(await sweepWrittenPartials({ archive, now, kinds: ["blob"] })).toEqual({ removed: 2, bytes: 20 });
      expect(await fs.readdir(partialDir)).toContain(gone.deadBytes);
      expect(await sweepWrittenPartials({ archive: { root }, now })).toEqual({ removed: 1, bytes: 10 });
      expect((await fs.readdir(partialDir)).sort()).toEqual(Object.values(kept).sort());
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});

describe("an import's partial files (Archive.adoptFile's)", () => {
  it("name their writer, copied or hard-linked, and go once it is dead", async () => {
    // Before: named for the content (adopt-<sha256>.part), so two files of the same bytes adopted at once met in one
    // partial file, and the one a killed import left was removed by nothing.
    const { root, now, dead, live, me } = await writersSetUp("adopt-");
    try {
      const archive = new Archive({ root, minFreeBytes: 0, writer: me });
      const adopted = async (name: string, bytes: Buffer, link: boolean) => {
        const from = path.join(dir, `${path.basename(root)}-${name}`);
        await fs.writeFile(from, bytes);
        const st = await fs.stat(from);
        const expected = { sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.length, ino: st.ino, mtimeMs: st.mtimeMs };
        return (await partialNamesDuring(path.join(root, ".partial"), () => archive.adoptFile({ from, ext: "png", expected, link }))).names;
      };
      const named = new RegExp(`^adopt-${me.replaceAll(".", "\\.")}-[0-9a-f]{16}\\.part$`);
      const copied = await adopted("copied.png", Buffer.from("copied bytes"), false);
      expect(copied).toHaveLength(1);
      expect(copied[0]).toMatch(named);
      const linked = await adopted("linked.png", Buffer.from("linked bytes"), true);
      expect(linked).toHaveLength(1);
      expect(linked[0]).toMatch(named);

      const deadOne = `adopt-${dead.tag}-${random(1)}.part`;
      const mine = `adopt-${me}-${random(2)}.part`;
      await plant(path.join(root, ".partial"), [deadOne, mine], [], new Date(now));
      expect(await sweepWrittenPartials({ archive, now, kinds: ["adopt"] })).toEqual({ removed: 1, bytes: 10 });
      expect(await fs.readdir(path.join(root, ".partial"))).toEqual([mine]);
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});

describe("the temp files an object is copied through (storage migrate's, copyBlob's)", () => {
  it("name the writer when one is given, and only at random without one", async () => {
    const root = await fs.mkdtemp(path.join(dir, "copy-names-"));
    const me = thisWriterTag();
    const disk = (name: string) => new LocalDisk({ root: path.join(root, name), fileMode: 0o600, dirMode: 0o700 });
    const from = new LocalBlobStore(disk("from"));
    await from.write("originals/aa/bb/one.bin", Buffer.from("an object"));
    const tmpDir = path.join(root, "tmp");
    const named = (kind: string) => new RegExp(`^${kind}-${me.replaceAll(".", "\\.")}-[0-9a-f]{16}$`);
    const names = async (run: () => Promise<unknown>) => (await partialNamesDuring(tmpDir, run)).names;

    const migrated = await names(() => migrateStore({ from, to: new LocalBlobStore(disk("to-1")), tmpDir, writer: me }));
    expect(migrated).toHaveLength(1);
    expect(migrated[0]).toMatch(named("migrate"));
    const unnamedMigrate = await names(() => migrateStore({ from, to: new LocalBlobStore(disk("to-2")), tmpDir }));
    expect(unnamedMigrate[0]).toMatch(/^migrate-[0-9a-f]{16}$/);
    const copied = await names(() => copyBlob({ from, to: from, key: "originals/aa/bb/one.bin", toKey: "originals/aa/bb/two.bin", tmpDir, writer: me }));
    expect(copied).toHaveLength(1);
    expect(copied[0]).toMatch(named("copy"));
    const unnamedCopy = await names(() => copyBlob({ from, to: from, key: "originals/aa/bb/one.bin", toKey: "originals/aa/bb/three.bin", tmpDir }));
    expect(unnamedCopy[0]).toMatch(/^copy-[0-9a-f]{16}$/);
    expect(await fs.readdir(tmpDir)).toEqual([]);
  });

  it("in .partial/ are removed once their writer is dead on this host, or old and not of a writer running here", async () => {
    const { root, archive, now, dayOld, dead, live, me } = await writersSetUp("copy-sweep-");
    try {
      const gone = {
        deadMigrate: `migrate-${dead.tag}-${random(1)}`,
        deadCopy: `copy-${dead.tag}-${random(2)}`,
        // Named as migrate-store.ts and copyBlob named them before they named the writer.
        oldUnnamedMigrate: `migrate-${random(5)}`,
        oldUnnamedCopy: `copy-${random(6)}`,
      };
      const kept = {
        // A writer that runs here keeps its file however old: a migrate's upload of a large object may still need it.
        oldLiveMigrate: `migrate-${live.tag}-${random(3)}`,
        oldLiveCopy: `copy-${live.tag}-${random(4)}`,
        liveMigrate: `migrate-${live.tag}-${random(7)}`,
        liveCopy: `copy-${live.tag}-${random(8)}`,
        mine: `copy-${me}-${random(9)}`,
        elsewhere: `migrate-other.host-0123456789ab-${dead.pid}-0a0a0a0a-${random(10)}`,
        unnamed: `copy-${random(11)}`,
        // Not a name these writes give, old: a partial original of a deviation whose id starts so, and a short name.
        original: "migrate-0123-original.part",
        short: "copy-0123",
      };
      const partialDir = path.join(root, ".partial");
      const old = [kept.oldLiveMigrate, kept.oldLiveCopy, gone.oldUnnamedMigrate, gone.oldUnnamedCopy, kept.original, kept.short];
      await plant(partialDir, [...Object.values(gone), ...Object.values(kept)], old, dayOld);

      expect(await sweepWrittenPartials({ archive, now })).toEqual({ removed: 4, bytes: 40 });
      expect((await fs.readdir(partialDir)).sort()).toEqual(Object.values(kept).sort());
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});

describe("the downloads' preflight probe", () => {
  it("names the archive's writer, and this pid without one", async () => {
    const root = await fs.mkdtemp(path.join(dir, "probe-names-"));
    const me = thisWriterTag();
    const probe = async (archive: Archive) => (await partialNamesDuring(path.join(root, ".partial"), () => archive.proveWritable())).names;
    expect(await probe(new Archive({ root, minFreeBytes: 0, writer: me }))).toEqual([
      expect.stringMatching(new RegExp(`^\\.dvault-preflight-${me.replaceAll(".", "\\.")}-[0-9a-f]{8}$`)),
    ]);
    expect(await probe(new Archive({ root, minFreeBytes: 0 }))).toEqual([
      expect.stringMatching(new RegExp(`^\\.dvault-preflight-${process.pid}-[0-9a-f]{8}$`)),
    ]);
    expect(await fs.readdir(path.join(root, ".partial"))).toEqual([]);
    expect(await fs.readdir(path.join(root, "originals"))).toEqual([]);
  });

  it("left in .partial/ or originals/ is removed once its writer is dead on this host, or old and not of a writer running here", async () => {
    const { root, archive, now, dayOld, dead, live, me } = await writersSetUp("probe-sweep-");
    try {
      const probe = (writer: string | number, i: number) => `.dvault-preflight-${writer}-${i.toString(16).padStart(8, "0")}`;
      const gone = { dead: probe(dead.tag, 1), oldPid: probe(dead.pid, 3) };
      const kept = {
        // A writer that runs here keeps its probe however old.
        oldLive: probe(live.tag, 2),
        live: probe(live.tag, 4),
        mine: probe(me, 5),
        // The old name's pid proves nothing (another host's, or reused): only its age.
        youngPid: probe(dead.pid, 6),
        notProbe: ".dvault-preflight-x",
      };
      const folders = [path.join(root, ".partial"), path.join(root, "originals")];
      for (const folder of folders) await plant(folder, [...Object.values(gone), ...Object.values(kept)], [kept.oldLive, gone.oldPid, kept.notProbe], dayOld);
      // At the top of originals/, a written partial's name is no partial file: kept, as the content folders are.
      const stray = `bytes-${dead.tag}-${random(1)}.part`;
      await fs.writeFile(path.join(root, "originals", stray), "x");
      await fs.mkdir(path.join(root, "originals", "ab"));

      // A sweep of named kinds leaves the probes.
      expect(await sweepWrittenPartials({ archive, now, kinds: ["bytes"] })).toEqual({ removed: 0, bytes: 0 });
      expect(await sweepWrittenPartials({ archive, now })).toEqual({ removed: 4, bytes: 40 });
      expect((await fs.readdir(folders[0]!)).sort()).toEqual(Object.values(kept).sort());
      expect((await fs.readdir(folders[1]!)).sort()).toEqual([...Object.values(kept), stray, "ab"].sort());
    } finally {
      live.child.kill("SIGKILL");
    }
  });
});

describe("the written-partials sweep and a transfer's partial file", () => {
  it("keeps an old partial original whose deviation id starts with bytes- or blob- (the id is the service's): a resume needs it", async () => {
    const root = await fs.mkdtemp(path.join(dir, "named-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    for (const key of ["bytes-0123-original", "blob-4567-original"]) {
      const file = archive.partialPath(key);
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(file, Buffer.alloc(1000, 7));
      await fs.utimes(file, dayOld, dayOld);
    }

    expect(await sweepWrittenPartials({ archive, now })).toEqual({ removed: 0, bytes: 0 });
    expect((await archive.partialState("bytes-0123-original")).size).toBe(1000);
    expect((await archive.partialState("blob-4567-original")).size).toBe(1000);
  });
});

describe("the partial sweeps and a link planted at .partial", () => {
  it("remove nothing through a .partial that links outside the archive, and say why", async () => {
    const root = await fs.mkdtemp(path.join(dir, "linked-"));
    const outside = await fs.mkdtemp(path.join(dir, "outside-"));
    const archive = new Archive({ root, minFreeBytes: 0 });
    const now = Date.now();
    const dayOld = new Date(now - 24 * 3_600_000);
    const dead = await writerOfChild("exited");
    // Files of someone else's that happen to have the partial files' names, old, and some named for a dead writer.
    const names = [
      `bytes-${"0".repeat(16)}.part`,
      `bytes-${dead.tag}-${"1".repeat(16)}.part`,
      `blob-${dead.tag}-${"2".repeat(16)}.part`,
      "D-linked-original.part",
    ];
    for (const name of names) {
      await fs.writeFile(path.join(outside, name), "not the archive's");
      await fs.utimes(path.join(outside, name), dayOld, dayOld);
    }
    await row("D-linked", "done");
    await fs.symlink(outside, path.join(root, ".partial"));

    await expect(sweepWrittenPartials({ archive, now })).rejects.toThrow(/outside the archive/);
    await expect(sweepWrittenPartials({ archive: { root }, now })).rejects.toThrow(/outside the archive/);
    await expect(sweepStrandedPartials({ archive, repo: new DownloadRepository(m.pool), now })).rejects.toThrow(/outside the archive/);
    expect((await fs.readdir(outside)).sort()).toEqual(names.sort());
  });

  it("and remove no preflight probe's name through an originals/ that links outside the archive", async () => {
    const root = await fs.mkdtemp(path.join(dir, "linked-originals-"));
    const outside = await fs.mkdtemp(path.join(dir, "outside-"));
    const dead = await writerOfChild("exited");
    const name = `.dvault-preflight-${dead.tag}-00000001`;
    await fs.writeFile(path.join(outside, name), "not the archive's");
    await fs.symlink(outside, path.join(root, "originals"));

    await expect(sweepWrittenPartials({ archive: { root }, now: Date.now() })).rejects.toThrow(/outside the archive/);
    expect(await fs.readdir(outside)).toEqual([name]);
  });
});
