// Everything that reads the archive, with the archive in a bucket (a real S3-compatible server on loopback,
// test/helpers/s3-server.ts): the dashboard serves an object this process never wrote to disk, whole, by range
// or through a presigned redirect; verify finds a missing and a truncated object, and --deep a changed byte;
// the readable tree becomes index objects; backup and restore carry the bucket's objects.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBackup } from "../../src/backup/backup.ts";
import { restoreBackup } from "../../src/backup/restore.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { linksDirtyKey } from "../../src/downloads/after-store.ts";
import { downloadDepsFor } from "../../src/downloads/deps.ts";
import { regenerateLinksIfDirty } from "../../src/downloads/readable-links.ts";
import { setAsideCorrupt, verifyArchive } from "../../src/downloads/verify.ts";
import { startDashboard } from "../../src/http/server.ts";
import { freePort } from "../../src/free-port.ts";
import { createLogger } from "../../src/log.ts";
import { createServices, type Services } from "../../src/services.ts";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import type { S3BlobStore } from "../../src/storage/s3-blob-store.ts";
import { originalRelPath } from "../../src/storage/layout.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { READABLE_INDEX_JSON, writeReadableIndex } from "../../src/storage/readable-index.ts";
import { openBlobStore } from "../../src/storage/store.ts";
import { artworkPng } from "../helpers/archive-fixtures.ts";
import { testConfig } from "../helpers/config.ts";
import { TEST_PG_URL } from "../helpers/env.ts";
import { createMirrorDb, type MirrorDb } from "../helpers/mirror-fixtures.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { createTestRedis, type TestRedis } from "../helpers/redis.ts";
import { leftovers, type S3TestServer, startS3Server } from "../helpers/s3-server.ts";

const log = createLogger({ level: "silent" });
let s3: S3TestServer;
let m: MirrorDb;
let r: TestRedis;
let services: Services;
let store: BlobStore;
let n = 0;

const config = (extra: Record<string, string> = {}) => testConfig({ DATABASE_URL: m.db.url, DVAULT_REDIS_PREFIX: r.prefix, ...s3.env, ...extra });

// A bucket, a mirror and an archive folder per test: most list or count everything in them.
beforeEach(async () => {
  [s3, m, r] = await Promise.all([startS3Server(), createMirrorDb(), createTestRedis()]);
  await m.pool.query("INSERT INTO users (userid, username) VALUES ('U-1', 'Painter')");
  services = await createServices({ config: config(), log });
  store = openBlobStore(services.config);
});
afterEach(async () => {
  await services?.close();
  await Promise.all([s3?.close(), m?.drop(), r?.cleanup()]);
});

type Put = { deviationid: string; key: string; bytes: Buffer; downloadId: string };

/** An original put straight into the bucket and recorded as downloaded: no file of it on this machine. */
async function putOriginal(bytes: Buffer, opts: { ext?: string; mime?: string; stored?: Buffer } = {}): Promise<Put> {
  const deviationid = `D-${++n}`;
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const key = originalRelPath(sha256, opts.ext ?? "png");
  await store.write(key, opts.stored ?? bytes);
  await m.pool.query("INSERT INTO deviations (deviationid, title, author_userid, type, raw) VALUES ($1, $2, 'U-1', 'image', '{}')", [deviationid, `Work ${n}`]);
  const { rows } = await m.pool.query<{ id: string }>(
    `INSERT INTO downloads (deviationid, kind, status, path, size, sha256, mime, done_at) VALUES ($1, 'original', 'done', $2, $3, $4, $5, now()) RETURNING id::text`,
    [deviationid, key, bytes.length, sha256, opts.mime ?? "image/png"],
  );
  return { deviationid, key, bytes, downloadId: rows[0]!.id };
}

describe("the dashboard over a bucket", () => {
  it("serves a file it never downloaded: whole, by range, HEAD, and 416 past its end", async () => {
    const file = await putOriginal(artworkPng(3, 40, 40));
    const dash = await startDashboard(services, { host: "127.0.0.1", port: 0 });
    try {
      const whole = await fetch(`${dash.url}/files/${file.downloadId}`);
      expect(whole.status).toBe(200);
      expect(whole.headers.get("content-type")).toBe("image/png");
      expect(whole.headers.get("content-security-policy")).toContain("sandbox");
      expect(whole.headers.get("accept-ranges")).toBe("bytes");
      expect(Buffer.from(await whole.arrayBuffer()).equals(file.bytes)).toBe(true);
      // Nothing of it reached this machine's archive folder.
      expect(await fs.readdir(services.config.archiveDir)).toEqual([]);

      const etag = whole.headers.get("etag") ?? "";
      expect(etag).toBe(`"${createHash("sha256").update(file.bytes).digest("hex")}"`);
      expect((await fetch(`${dash.url}/files/${file.downloadId}`, { headers: { "If-None-Match": etag } })).status).toBe(304);

      const part = await fetch(`${dash.url}/files/${file.downloadId}`, { headers: { Range: "bytes=10-29" } });
      expect(part.status).toBe(206);
      expect(part.headers.get("content-range")).toBe(`bytes 10-29/${file.bytes.length}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(file.bytes.subarray(10, 30))).toBe(true);
      const tail = await fetch(`${dash.url}/files/${file.downloadId}`, { headers: { Range: "bytes=-5" } });
      expect(Buffer.from(await tail.arrayBuffer()).equals(file.bytes.subarray(-5))).toBe(true);

      const past = await fetch(`${dash.url}/files/${file.downloadId}`, { headers: { Range: `bytes=${file.bytes.length + 10}-` } });
      expect(past.status).toBe(416);
      expect(past.headers.get("content-range")).toBe(`bytes */${file.bytes.length}`);

      const head = await fetch(`${dash.url}/files/${file.downloadId}`, { method: "HEAD" });
      expect(head.status).toBe(200);
      expect(head.headers.get("content-length")).toBe(String(file.bytes.length));

      // A row whose object is not in the bucket, and one pointing outside originals/.
      const gone = await putOriginal(artworkPng(4, 8, 8));
      await store.remove(gone.key);
      expect((await fetch(`${dash.url}/files/${gone.downloadId}`)).status).toBe(404);
      await m.pool.query("UPDATE downloads SET path = '../../etc/passwd' WHERE id = $1", [gone.downloadId]);
      expect((await fetch(`${dash.url}/files/${gone.downloadId}`)).status).toBe(404);
    } finally {
      await dash.close();
    }
  });

  it("redirects to a short-lived presigned URL when DVAULT_S3_PRESIGN is on, which serves the bytes", async () => {
    const file = await putOriginal(Buffer.from("%PDF-1.4 a document, not shown inline"), { ext: "pdf", mime: "application/pdf" });
    const dash = await startDashboard(
      { ...services, config: config({ DVAULT_S3_PRESIGN: "true", DVAULT_S3_PRESIGN_TTL: "120" }) },
      { host: "127.0.0.1", port: 0 },
    );
    try {
      const res = await fetch(`${dash.url}/files/${file.downloadId}`, { redirect: "manual" });
      expect(res.status).toBe(302);
      expect(res.headers.get("cache-control")).toBe("no-store");
      const location = new URL(res.headers.get("location") ?? "");
      expect(location.origin).toBe(s3.endpoint);
      expect(location.searchParams.get("X-Amz-Expires")).toBe("120");
      const direct = await fetch(location);
      expect(direct.status).toBe(200);
      expect(Buffer.from(await direct.arrayBuffer()).equals(file.bytes)).toBe(true);
      // A row whose object is gone: dvault's own 404, not a redirect to the bucket's error.
      const gone = await putOriginal(Buffer.from("%PDF-1.4 removed from the bucket"), { ext: "pdf", mime: "application/pdf" });
      await store.remove(gone.key);
      expect((await fetch(`${dash.url}/files/${gone.downloadId}`, { redirect: "manual" })).status).toBe(404);
    } finally {
      await dash.close();
    }
  });
});

async function all(objects: AsyncIterable<{ key: string }>): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of objects) keys.push(o.key);
  return keys;
}

const countAside = async () => (await all(store.list(".corrupt/"))).length;

describe("verify over a bucket", () => {
  it("finds a missing and a truncated object by size, a changed byte with --deep, and sets corrupt bytes aside with --fix", async () => {
    // The other tests' files out of the way: this one counts every object.
    await m.pool.query("DELETE FROM downloads");
    for await (const info of store.list("originals/")) await store.remove(info.key);
    const ok = await putOriginal(artworkPng(10, 16, 16));
    const missing = await putOriginal(artworkPng(11, 16, 16));
    await store.remove(missing.key);
    const truncatedBytes = artworkPng(12, 16, 16);
    const truncated = await putOriginal(truncatedBytes, { stored: truncatedBytes.subarray(0, 50) });
    const flippedBytes = artworkPng(13, 16, 16);
    const changed = Buffer.from(flippedBytes);
    changed[60] = (changed[60]! + 1) % 256;
    const flipped = await putOriginal(flippedBytes, { stored: changed });
    const orphan = originalRelPath("ab".repeat(32), "jpg");
    await store.write(orphan, Buffer.from("stray"));

    const deps = downloadDepsFor(services);
    expect(deps.archive.blobs.kind).toBe("s3");
    const shallow = await verifyArchive({ deps, fix: false, log });
    expect(shallow.deep).toBe(false);
    expect(shallow.missing.map((x) => x.path)).toEqual([missing.key]);
    expect(shallow.corrupt).toEqual([
      {
        path: truncated.key,
        deviationids: [truncated.deviationid],
        expected: expect.any(String),
        actual: undefined,
        expectedSize: truncatedBytes.length,
        actualSize: 50,
      },
    ]);
    expect(shallow.orphaned).toEqual([orphan]);
    expect(shallow.ok).toBe(2);

    const deep = await verifyArchive({ deps, fix: false, log, deep: true });
    expect(deep.corrupt.map((c) => c.path).sort()).toEqual([truncated.key, flipped.key].sort());
    expect(deep.ok).toBe(1);

    const fixed = await verifyArchive({ deps, fix: true, log, deep: true });
    expect(fixed.requeued + fixed.lost).toBe(3);
    // The corrupt objects left their content address for a .corrupt/ key; the good one stayed.
    expect(await store.stat(flipped.key)).toBeUndefined();
    expect(await store.stat(truncated.key)).toBeUndefined();
    const aside = [];
    for await (const info of store.list(".corrupt/")) aside.push(info);
    expect(aside.map((a) => a.key.split("/")[1]?.split(".")[0]).sort()).toEqual(
      [flipped.key, truncated.key].map((k) => path.posix.basename(k).split(".")[0]).sort(),
    );
    expect((await store.read(ok.key))?.equals(ok.bytes)).toBe(true);
  });

  it("leaves in place an object a download made whole again after the check, and sets nothing aside", async () => {
    // verify --fix found the object truncated; before it is set aside, another host's download of the same
    // content stored the right bytes at the address (a truncated object is no dedupe match, so it is replaced).
    const bytes = artworkPng(15, 16, 16);
    const put = await putOriginal(bytes);
    const asideBefore = await countAside();
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    expect(await setAsideCorrupt(downloadDepsFor(services), put.key, { sha256, size: bytes.length })).toBe("whole again");
    expect((await store.read(put.key))?.equals(bytes)).toBe(true);
    expect(await countAside()).toBe(asideBefore);
    // Bytes still wrong are set aside, as before.
    await store.write(put.key, bytes.subarray(0, 40));
    // Copied through a temp file in the archive's .partial/ named for this process (test/medium/partial-sweep).
    const deps = downloadDepsFor(services);
    const { result, names } = await partialNamesDuring(path.join(deps.archive.root, ".partial"), () =>
      setAsideCorrupt(deps, put.key, { sha256, size: bytes.length }),
    );
    expect(result).toBe("set aside");
    expect(names).toEqual([expect.stringMatching(new RegExp(`^copy-${thisWriterTag().replaceAll(".", "\\.")}-[0-9a-f]{16}$`))]);
    expect(await store.stat(put.key)).toBeUndefined();
    expect(await countAside()).toBe(asideBefore + 1);
  });

  it("in the archive folder too: moved aside, hashed, and put back when it is whole again", async () => {
    const folder = await createServices({ config: config({ DVAULT_STORAGE: "local" }), log });
    try {
      const deps = downloadDepsFor(folder);
      const bytes = artworkPng(16, 16, 16);
      const stored = await deps.archive.storeBytes({ bytes, ext: "png" });
      const expected = { sha256: stored.sha256, size: bytes.length };
      expect(await setAsideCorrupt(deps, stored.relPath, expected)).toBe("whole again");
      expect((await deps.archive.blobs.read(stored.relPath))?.equals(bytes)).toBe(true);
      expect(await all(deps.archive.blobs.list(".corrupt/"))).toEqual([]);
      await deps.archive.blobs.write(stored.relPath, bytes.subarray(0, 40));
      expect(await setAsideCorrupt(deps, stored.relPath, expected)).toBe("set aside");
      expect(await deps.archive.blobs.stat(stored.relPath)).toBeUndefined();
      expect(await all(deps.archive.blobs.list(".corrupt/"))).toHaveLength(1);
    } finally {
      await folder.close();
    }
  });

  it("sets nothing aside and wants nothing again when the bucket cannot be read: the bytes may be fine", async () => {
    await m.pool.query("DELETE FROM downloads");
    const kept = await putOriginal(artworkPng(14, 16, 16));
    // The same rows, through an endpoint nobody answers: every read breaks off.
    const deadEndpoint = `http://127.0.0.1:${await freePort()}`;
    const cut = await createServices({ config: config({ DVAULT_S3_ENDPOINT: deadEndpoint }), log });
    try {
      const report = await verifyArchive({ deps: downloadDepsFor(cut), fix: true, log, deep: true });
      // The object, and the listing of originals/ that looks for orphans.
      expect(report.unreadable.map((u) => u.path)).toEqual([kept.key, "originals/"]);
      expect(report.unreadable[0]?.reason).not.toContain(deadEndpoint);
      expect(report.corrupt).toEqual([]);
      expect(report.requeued + report.lost).toBe(0);
    } finally {
      await cut.close();
    }
    const { rows } = await m.pool.query<{ status: string }>("SELECT status FROM downloads WHERE id = $1", [kept.downloadId]);
    expect(rows[0]?.status).toBe("done");
    expect((await store.read(kept.key))?.equals(kept.bytes)).toBe(true);
  });
});

describe(writeReadableIndex.name, () => {
  it("writes by-user/index.json and a page per user, rewrites only what changed and removes pages of users gone", async () => {
    const a = originalRelPath("a1".repeat(32), "png");
    const b = originalRelPath("b2".repeat(32), "jpg");
    const links = [
      { linkPath: "by-user/Painter/Featured/Dawn [D-1].png", target: a },
      { linkPath: "by-user/Painter/unfiled/<Night> [D-2].jpg", target: b },
      { linkPath: "by-user/Other/collections/Faves/Dawn [D-1].png", target: a },
    ];
    expect(await writeReadableIndex(store, links)).toEqual({ written: 4, removed: 0 });
    const index = JSON.parse((await store.read(READABLE_INDEX_JSON))!.toString()) as { links: { path: string; key: string }[] };
    expect(index.links).toContainEqual({ path: "by-user/Painter/unfiled/<Night> [D-2].jpg", key: b });
    const page = (await store.read("by-user/Painter/index.html"))!.toString();
    expect(page).toContain(`href="../../${a}"`);
    expect(page).toContain("&lt;Night&gt; [D-2].jpg");
    expect(page).not.toContain("<Night>");

    expect(await writeReadableIndex(store, links)).toEqual({ written: 0, removed: 0 });
    expect(await writeReadableIndex(store, links.slice(0, 2))).toEqual({ written: 2, removed: 1 });
    expect(await store.stat("by-user/Other/index.html")).toBeUndefined();
  });
});

describe(regenerateLinksIfDirty.name, () => {
  it("writes the index into a bucket that has none (after a migration), then waits for a stored file", async () => {
    const file = await putOriginal(artworkPng(20, 8, 8));
    for await (const info of store.list("by-user/")) await store.remove(info.key);
    const deps = downloadDepsFor(services);
    await services.coord.remove(linksDirtyKey(services.config.redisPrefix));
    expect(await regenerateLinksIfDirty(deps)).toMatchObject({ written: expect.any(Number) });
    const index = JSON.parse((await store.read(READABLE_INDEX_JSON))!.toString()) as { links: { path: string; key: string }[] };
    expect(index.links).toContainEqual({ path: `by-user/Painter/unfiled/Work ${n} [${file.deviationid}].png`, key: file.key });
    expect(await regenerateLinksIfDirty(deps)).toBeUndefined();
  });
});

/** Zero-byte objects whose keys end with a slash, put past the blob store (which writes none). */
async function putFolderMarkers(into: BlobStore, server: S3TestServer, keys: string[]): Promise<void> {
  for (const key of keys) await (into as S3BlobStore).client.send(new PutObjectCommand({ Bucket: server.bucket, Key: key, Body: "" }));
}

describe("backup and restore with the bucket", () => {
  it("downloads every object into the backup and puts them into an empty bucket on restore, refusing one that is not", async () => {
    const restoredDb = `dvault_t_s3restore_${process.pid}`;
    const target = await startS3Server({ bucket: "dvault-restored" });
    const backupDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), "dvault-s3backup-")), "b");
    try {
      // The bucket's objects: three originals, the readable index's pages over them, and an original whose bytes no
      // longer match its name (damaged in the bucket, and so in the backup).
      const files = [await putOriginal(artworkPng(30, 8, 8)), await putOriginal(artworkPng(31, 8, 8)), await putOriginal(artworkPng(32, 8, 8))];
      await writeReadableIndex(
        store,
        files.map((f) => ({ linkPath: `by-user/Painter/unfiled/Work [${f.deviationid}].png`, target: f.key })),
      );
      const damagedKey = originalRelPath(createHash("sha256").update("the bytes it was stored with").digest("hex"), "png");
      await store.write(damagedKey, Buffer.from("other bytes since"));
      // Folder markers, as the AWS console's "Create folder" and other tools leave them: no object of dvault's.
      await putFolderMarkers(store, s3, ["originals/", "by-user/", "originals/ab/"]);
      const before: Record<string, string> = {};
      for await (const info of store.list(""))
        before[info.key] = createHash("sha256")
          .update((await store.read(info.key))!)
          .digest("hex");
      expect(Object.keys(before).length).toBeGreaterThan(3);

      const manifest = await createBackup({ config: config({ DVAULT_CONFIG_DIR: backupDir.replace(/b$/, "cfg") }), out: backupDir, version: "test" });
      expect(manifest.archive).toMatchObject({ included: true, store: "s3", files: Object.keys(before).length });

      const restoredConfig = testConfig({
        DATABASE_URL: withDatabase(TEST_PG_URL, restoredDb),
        DVAULT_CONFIG_DIR: backupDir.replace(/b$/, "cfg2"),
        ...target.env,
      });
      // A bucket holding only a folder marker holds nothing to overwrite.
      await putFolderMarkers(openBlobStore(restoredConfig), target, ["originals/"]);
      const restored = await restoreBackup({ config: restoredConfig, from: backupDir });
      // Left out rather than put back at a content address it would pass for.
      expect(restored.damaged).toContain(damagedKey);
      for (const key of restored.damaged) {
        expect(key.startsWith("originals/")).toBe(true);
        expect(path.posix.basename(key).split(".")[0]).not.toBe(before[key]);
        delete before[key];
      }
      expect(restored.archiveFiles).toBe(Object.keys(before).length);
      const into = openBlobStore(restoredConfig);
      const after: Record<string, string> = {};
      for await (const info of into.list(""))
        after[info.key] = createHash("sha256")
          .update((await into.read(info.key))!)
          .digest("hex");
      expect(after).toEqual(before);
      expect((await leftovers(target.dir)).multipartUploads).toEqual([]);

      // Again into the same (now full) bucket and a fresh database: refused before anything is written.
      const again = testConfig({ DATABASE_URL: withDatabase(TEST_PG_URL, `${restoredDb}_b`), ...target.env });
      await expect(restoreBackup({ config: again, from: backupDir })).rejects.toThrow(/bucket .* is not empty: restore into an empty bucket/);
    } finally {
      await target.close();
      const admin = await connectPg(TEST_PG_URL);
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(restoredDb)} WITH (FORCE)`);
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(`${restoredDb}_b`)} WITH (FORCE)`);
      await admin.end();
      await fs.rm(path.dirname(backupDir), { recursive: true, force: true });
    }
  });
});
