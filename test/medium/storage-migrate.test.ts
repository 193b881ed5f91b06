// `dvault storage migrate`: the local archive copied into a bucket (a real S3-compatible server on loopback) and
// back, byte-exact; stopped after a few objects it resumes, skipping what already arrived whole, and a run with
// nothing left copies nothing; a source whose bytes do not match their key is reported, not copied; --to s3
// without a bucket is one line saying what to set.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { BlobStore } from "../../src/storage/blob-store.ts";
import { thisWriterTag } from "../../src/queue/holder.ts";
import { originalRelPath, writtenPartialKey, writtenPartialWriter } from "../../src/storage/layout.ts";
import { MIGRATED_PREFIXES, migrateStore } from "../../src/storage/migrate-store.ts";
import { openBlobStore } from "../../src/storage/store.ts";
import { StorageFaultError } from "../../src/storage/storage-fault.ts";
import { thumbKey } from "../../src/storage/thumbnails.ts";
import { testConfig } from "../helpers/config.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import { partialNamesDuring } from "../helpers/partial-names.ts";
import { leftovers, type S3TestServer, startS3Server } from "../helpers/s3-server.ts";
import { canMount } from "../helpers/tmpfs.ts";
import { writerOfChild } from "../helpers/writer-child.ts";

let s3: S3TestServer;
let dir: string;

// A bucket and an archive folder per test: each lists everything in the bucket it copies into.
beforeEach(async () => {
  s3 = await startS3Server();
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-migrate-"));
});
afterEach(async () => {
  await s3?.close();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

const localStore = (name: string) => openBlobStore(testConfig({ DVAULT_ARCHIVE_DIR: path.join(dir, name) }));

/** Every object under originals/ and thumbnails/, as key → sha256 of its bytes. */
async function contents(store: BlobStore): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const prefix of MIGRATED_PREFIXES) {
    for await (const info of store.list(prefix))
      out[info.key] = createHash("sha256")
        .update((await store.read(info.key))!)
        .digest("hex");
  }
  return out;
}

/** `count` originals of a few KiB each, and a thumbnail for every other one. */
async function fill(store: BlobStore, count: number, seed: string): Promise<void> {
  for (let i = 0; i < count; i++) {
    const bytes = Buffer.from(`${seed} original ${i} `.repeat(200 + i * 37));
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    await store.write(originalRelPath(sha256, i % 3 === 0 ? "jpg" : "png"), bytes);
    if (i % 2 === 0) await store.write(thumbKey(sha256, bytes.length, "s"), Buffer.from(`thumb of ${i}`));
  }
}

describe(migrateStore.name, () => {
  it("copies local → s3 → local byte-exact, resumes after an interruption and copies nothing the second time", async () => {
    const local = localStore("archive");
    const bucket = openBlobStore(testConfig({ ...s3.env }));
    await fill(local, 14, "a");
    const source = await contents(local);
    expect(Object.keys(source)).toHaveLength(21);
    const tmpDir = path.join(dir, "archive", ".partial");

    // Stopped once 5 objects have arrived: what arrived is whole, nothing half-uploaded stays behind.
    const stop = new AbortController();
    let ended = 0;
    const interrupted = migrateStore({
      from: local,
      to: bucket,
      tmpDir,
      concurrency: 3,
      signal: stop.signal,
      progress: (e) => {
        if (e.type === "end" && ++ended === 5) stop.abort(new Error("stopped by the test"));
      },
    });
    await expect(interrupted).rejects.toThrow("stopped by the test");
    const partway = await contents(bucket);
    expect(Object.keys(partway).length).toBeGreaterThanOrEqual(5);
    expect(Object.keys(partway).length).toBeLessThan(21);
    for (const [key, sha] of Object.entries(partway)) expect(sha, key).toBe(source[key]);
    expect((await leftovers(s3.dir)).multipartUploads).toEqual([]);
    expect(await fs.readdir(tmpDir)).toEqual([]);

    const resumed = await migrateStore({ from: local, to: bucket, tmpDir });
    expect(resumed).toMatchObject({ objects: 21, skipped: Object.keys(partway).length, copied: 21 - Object.keys(partway).length, failed: [] });
    expect(await contents(bucket)).toEqual(source);

    const again = await migrateStore({ from: local, to: bucket, tmpDir });
    expect(again).toMatchObject({ objects: 21, skipped: 21, copied: 0, failed: [] });

    const back = localStore("back");
    const home = await migrateStore({ from: bucket, to: back, tmpDir });
    expect(home).toMatchObject({ objects: 21, copied: 21, failed: [] });
    expect(await contents(back)).toEqual(source);
    // The source was only read.
    expect(await contents(local)).toEqual(source);
  });

  it("copies too what a worker writes into the source while it runs: listed again until a listing finds nothing new", async () => {
    const local = localStore("busy");
    await fill(local, 3, "d");
    // The worker's download lands while the first pass reads the source (an openRead waits for it).
    let late: Promise<void> | undefined;
    const downloading: BlobStore = Object.assign(Object.create(local) as BlobStore, {
      openRead: async (key: string) => {
        late ??= fill(local, 1, "downloaded meanwhile");
        await late;
        return local.openRead(key);
      },
    });
    const bucket = openBlobStore(testConfig({ ...s3.env }));
    const r = await migrateStore({ from: downloading, to: bucket, tmpDir: path.join(dir, "tmp"), concurrency: 1 });
    const source = await contents(local);
    // 3 originals and 2 thumbnails, then the downloaded original and its thumbnail.
    expect(Object.keys(source)).toHaveLength(7);
    expect(r).toMatchObject({ objects: 7, copied: 7, failed: [] });
    expect(await contents(bucket)).toEqual(source);
  });

  it.runIf(canMount())("stops at a target that is full, in one line, instead of reading every other object to fail it too", async () => {
    const local = localStore("many");
    await fill(local, 40, "e");
    const disk = path.join(dir, "small-disk");
    await fs.mkdir(disk);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=96k", "tmpfs", disk]);
    try {
      const target = openBlobStore(testConfig({ DVAULT_ARCHIVE_DIR: disk }));
      let started = 0;
      const run = migrateStore({
        from: local,
        to: target,
        tmpDir: path.join(disk, ".partial"),
        concurrency: 2,
        progress: (e) => void (e.type === "start" && started++),
      });
      await expect(run).rejects.toThrow(new RegExp(`^${disk} is full \\(ENOSPC\\) after \\d+ object\\(s\\) copied: free space there, then run it again`));
      await expect(run).rejects.toBeInstanceOf(StorageFaultError);
      // 60 objects: the copy stopped at the first that found the disk full, one in flight beside it at most.
      const arrived = Object.keys(await contents(target)).length;
      expect(started).toBeLessThanOrEqual(arrived + 2);
      expect(await fs.readdir(path.join(disk, ".partial"))).toEqual([]);
    } finally {
      execFileSync("umount", [disk]);
    }
  });

  it("reports an original whose bytes no longer match its key and copies the rest", async () => {
    const local = localStore("damaged");
    await fill(local, 3, "b");
    const [victim] = Object.keys(await contents(local)).filter((k) => k.startsWith("originals/"));
    await local.write(victim!, Buffer.from("not what the key says"));
    const target = localStore("damaged-target");
    const r = await migrateStore({ from: local, to: target, tmpDir: path.join(dir, "tmp") });
    expect(r.failed).toEqual([{ key: victim, reason: expect.stringMatching(/not the sha256 of its key: run dvault verify/) }]);
    expect(r.copied).toBe(4);
    expect(await target.stat(victim!)).toBeUndefined();
  });
});

describe("dvault storage migrate", () => {
  const cliEnv = (extra: Record<string, string>) => ({
    redis: { url: "redis://127.0.0.1:6379" },
    env: { DVAULT_ARCHIVE_DIR: path.join(dir, "cli"), ...extra },
  });

  it("migrates with --json, and says in one line what to set when the bucket is not configured", async () => {
    await fill(localStore("cli"), 2, "c");
    // A temp copy a killed run left, and one of a writer still running (this process): the start removes the first.
    const partialDir = path.join(dir, "cli", ".partial");
    const dead = writtenPartialKey("copy", (await writerOfChild("exited")).tag);
    const live = writtenPartialKey("copy", thisWriterTag());
    await fs.mkdir(partialDir, { recursive: true });
    for (const name of [dead, live]) await fs.writeFile(path.join(partialDir, name), "left");
    const { DVAULT_STORAGE: _, ...s3Vars } = s3.env;
    // Its copies on their way go through the archive's .partial/, named for the command's process (the start's sweep
    // removes those of a killed run: test/medium/partial-sweep).
    const { result: done, names } = await partialNamesDuring(path.join(dir, "cli", ".partial"), () =>
      runDvault(cliEnv(s3Vars), ["storage", "migrate", "--to", "s3", "--json"]),
    );
    const copies = names.filter((name) => name.startsWith("migrate-"));
    expect(copies).toHaveLength(3);
    for (const name of copies) expect(writtenPartialWriter("migrate", name)).toMatch(/-\d+-[0-9a-f]+$/);
    expect(done.stderr).not.toContain("dvault:");
    expect(done.code).toBe(0);
    expect(JSON.parse(done.stdout)).toMatchObject({ objects: 3, failed: [] });
    expect((await fs.readdir(partialDir)).filter((n) => n.startsWith("copy-"))).toEqual([live]);

    const refused = await runDvault(cliEnv({}), ["storage", "migrate", "--to", "s3"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/^dvault: the s3 store \(the target\) is not configured: DVAULT_S3_BUCKET must be set/);
  });
});
