// The archive on real files in a temp dir: content addressing, resume, dedupe, size checks, a full disk,
// abort, owner-only modes, confinement to the root and the readable tree of relative links.
import { execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import got from "got";
import { downloadableOwnerDeviations } from "../../src/simulator/dataset.ts";
import { startSimulator } from "../../src/simulator/server.ts";
import { Archive } from "../../src/storage/archive.ts";
import { DiskFullError } from "../../src/storage/free-space.ts";
import { OutsideArchiveError } from "../../src/storage/layout.ts";
import { SizeMismatchError } from "../../src/storage/stream-write.ts";
import { readableName, sanitizeComponent } from "../../src/storage/sanitize.ts";

let dir: string;
let root: string;
const cleanups: Array<() => Promise<void>> = [];

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-archive-"));
  root = path.join(dir, "archive");
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function sha(buf: Buffer): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** Yields `data` in chunks of `size`; fails after `failAfter` bytes when given (a reset mid-body). */
async function* chunks(data: Buffer, size = 7_001, failAfter?: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < data.length; i += size) {
    if (failAfter !== undefined && i >= failAfter) throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    yield data.subarray(i, Math.min(i + size, data.length));
  }
}

async function listFiles(top: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(path.relative(top, p));
    }
  };
  await walk(top);
  return out.sort();
}

function mode(st: { mode: number }): number {
  return st.mode & 0o777;
}

describe(Archive.name, () => {
  it("stores a stream at originals/ab/cd/<sha256>.<ext>, owner-only, and removes its partial file", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(300_000);
    const stored = await archive.storeStream({ key: "DEV-1-original", body: chunks(data), ext: "PNG", expectedSize: data.length, etag: '"e1"' });
    const digest = sha(data);
    expect(stored).toEqual({
      sha256: digest,
      size: data.length,
      relPath: `originals/${digest.slice(0, 2)}/${digest.slice(2, 4)}/${digest}.png`,
      deduplicated: false,
    });
    const abs = archive.resolveInside(stored.relPath);
    expect((await fs.readFile(abs)).equals(data)).toBe(true);
    expect(mode(await fs.stat(abs))).toBe(0o600);
    for (const d of [root, path.join(root, "originals"), path.dirname(path.dirname(abs)), path.dirname(abs)]) expect(mode(await fs.stat(d))).toBe(0o700);
    expect(await archive.partialState("DEV-1-original")).toEqual({ size: 0, etag: undefined });
    expect(await listFiles(path.join(root, ".partial"))).toEqual([]);
    expect(await archive.hashFile(stored.relPath)).toEqual({ sha256: digest, size: data.length });
  });

  it("honours configured modes", async () => {
    const archive = new Archive({ root, minFreeBytes: 0, fileMode: 0o640, dirMode: 0o750 });
    const stored = await archive.storeBytes({ bytes: Buffer.from("<p>journal</p>"), ext: "html" });
    const abs = archive.resolveInside(stored.relPath);
    expect(mode(await fs.stat(abs))).toBe(0o640);
    expect(mode(await fs.stat(path.dirname(abs)))).toBe(0o750);
  });

  it("stores identical bytes once, whatever the key, extension or source", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(50_000);
    const a = await archive.storeStream({ key: "A-original", body: chunks(data), ext: "jpg" });
    const b = await archive.storeStream({ key: "B-original", body: chunks(data, 999), ext: "jpg" });
    const c = await archive.storeBytes({ bytes: data, ext: "jpeg" });
    expect(a.deduplicated).toBe(false);
    expect(b).toEqual({ ...a, deduplicated: true });
    expect(c).toEqual({ ...a, deduplicated: true });
    expect((await listFiles(path.join(root, "originals"))).length).toBe(1);
    expect(await listFiles(path.join(root, ".partial"))).toEqual([]);
  });

  it("resumes a transfer reset mid-body from the partial file and gets the right sha256", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(2_000_000);
    const key = "RESUME-original";
    await expect(archive.storeStream({ key, body: chunks(data, 64 * 1024, 1_300_000), ext: "jpg", expectedSize: data.length, etag: '"v1"' })).rejects.toThrow(
      "socket hang up",
    );
    const state = await archive.partialState(key);
    expect(state.etag).toBe('"v1"');
    // Every byte that arrived before the reset was kept (the generator fails at the first chunk past 1.3 MB).
    expect(state.size).toBe(Math.ceil(1_300_000 / 65_536) * 65_536);
    expect((await fs.readFile(archive.partialPath(key))).equals(data.subarray(0, state.size))).toBe(true);
    expect(existsSync(path.join(root, "originals"))).toBe(false);

    // What a Range request from state.size delivers.
    const stored = await archive.storeStream({
      key,
      body: chunks(data.subarray(state.size)),
      ext: "jpg",
      expectedSize: data.length,
      resumeFrom: state.size,
      etag: '"v1"',
    });
    expect(stored.sha256).toBe(sha(data));
    expect(stored.size).toBe(data.length);
    expect(await archive.hashFile(stored.relPath)).toEqual({ sha256: sha(data), size: data.length });
    expect(await archive.partialState(key)).toEqual({ size: 0, etag: undefined });
  });

  it("writes a partial file's resume metadata only once bytes may be worth resuming, and never keeps a stale one", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const metaOf = (key: string) => `${archive.partialPath(key)}.json`;
    /** Yields `data` in chunks, noting after each whether the metadata file exists; fails after `failAfter` bytes. */
    const seen: boolean[] = [];
    async function* watched(key: string, data: Buffer, size: number, failAfter?: number): AsyncGenerator<Buffer> {
      for await (const chunk of chunks(data, size, failAfter)) {
        yield chunk;
        seen.push(existsSync(metaOf(key)));
      }
    }
    // A file whose bytes all come in one batch (under 512 KiB): no metadata file at any point.
    const small = randomBytes(300_000);
    seen.length = 0;
    await archive.storeStream({ key: "SMALL", body: watched("SMALL", small, 50_000), ext: "jpg", expectedSize: small.length, etag: '"s"' });
    expect(seen).toEqual([false, false, false, false, false, false]);
    expect(existsSync(metaOf("SMALL"))).toBe(false);

    // A larger one: written before its first batch reaches the disk, with the ETag a resume sends.
    const large = randomBytes(1_500_000);
    seen.length = 0;
    await expect(
      archive.storeStream({ key: "LARGE", body: watched("LARGE", large, 100_000, 1_200_000), ext: "jpg", expectedSize: large.length, etag: '"l"' }),
    ).rejects.toThrow("socket hang up");
    expect(seen.indexOf(true)).toBeGreaterThan(0);
    expect(await archive.partialState("LARGE")).toEqual({ size: 1_200_000, etag: '"l"' });

    // A small transfer cut short keeps its prefix resumable: the metadata is written as it stops.
    await expect(
      archive.storeStream({ key: "CUT", body: chunks(small, 50_000, 100_000), ext: "jpg", expectedSize: small.length, etag: '"c"' }),
    ).rejects.toThrow("socket hang up");
    expect(await archive.partialState("CUT")).toEqual({ size: 100_000, etag: '"c"' });

    // Started again from its first byte (the service's ETag changed): the earlier metadata goes at once, so a
    // process killed now resumes nothing under the old ETag.
    seen.length = 0;
    await archive.storeStream({ key: "CUT", body: watched("CUT", small, 50_000), ext: "jpg", expectedSize: small.length, etag: '"c2"' });
    expect(seen.every((s) => !s)).toBe(true);
    expect(await archive.partialState("CUT")).toEqual({ size: 0, etag: undefined });
  });

  it("closes the partial file when its resume metadata cannot be written or removed", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(100_000);
    const openFds = () => readdirSync("/proc/self/fd").length;
    await expect(archive.storeStream({ key: "FD", body: chunks(data, 1000, 60_000), ext: "bin", etag: '"f"' })).rejects.toThrow("socket hang up");
    // A folder where the metadata file goes: neither written (a resume) nor removed (a start from the first byte).
    const meta = `${archive.partialPath("FD")}.json`;
    await fs.rm(meta, { force: true });
    await fs.mkdir(meta);
    await fs.writeFile(path.join(meta, "inside"), "x");
    const before = openFds();
    for (const resumeFrom of [60_000, 0]) {
      await expect(
        archive.storeStream({ key: "FD", body: chunks(data.subarray(resumeFrom)), ext: "bin", resumeFrom, expectedSize: data.length, etag: '"f"' }),
      ).rejects.toThrow();
    }
    expect(openFds()).toBe(before);
  });

  it("keeps only the bytes asked for when resuming from less than the partial file holds", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(100_000);
    await expect(archive.storeStream({ key: "K", body: chunks(data, 1000, 60_000), ext: "bin" })).rejects.toThrow();
    const stored = await archive.storeStream({ key: "K", body: chunks(data.subarray(40_000)), ext: "bin", resumeFrom: 40_000, expectedSize: data.length });
    expect(stored.sha256).toBe(sha(data));
    await expect(archive.storeStream({ key: "K", body: chunks(data), ext: "bin", resumeFrom: 10 })).rejects.toThrow(RangeError);
  });

  it("never leaves a final file when the size is wrong: short keeps the partial for a resume, long discards it", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const data = randomBytes(10_000);
    await expect(archive.storeStream({ key: "SHORT", body: chunks(data), ext: "jpg", expectedSize: 12_000 })).rejects.toBeInstanceOf(SizeMismatchError);
    expect((await archive.partialState("SHORT")).size).toBe(10_000);
    await expect(archive.storeStream({ key: "LONG", body: chunks(data), ext: "jpg", expectedSize: 9_000 })).rejects.toBeInstanceOf(SizeMismatchError);
    expect((await archive.partialState("LONG")).size).toBe(0);
    expect(existsSync(path.join(root, "originals"))).toBe(false);
  });

  it("leaves the partial file when aborted, even while the body is stalled", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const first = randomBytes(700_000);
    let returned = false;
    const body: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]() {
        let sent = false;
        return {
          next: () => {
            if (!sent) {
              sent = true;
              return Promise.resolve({ done: false, value: first });
            }
            return new Promise<IteratorResult<Uint8Array>>(() => undefined);
          },
          return: () => {
            returned = true;
            return Promise.resolve({ done: true, value: undefined });
          },
        };
      },
    };
    const controller = new AbortController();
    const pending = archive.storeStream({ key: "ABORT", body, ext: "jpg", expectedSize: 2_000_000, signal: controller.signal, etag: '"a"' });
    // Abort once the first chunk is on disk and the body has stalled.
    await expect.poll(async () => (await archive.partialState("ABORT")).size).toBe(700_000);
    controller.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(returned).toBe(true);
    expect(await archive.partialState("ABORT")).toEqual({ size: 700_000, etag: '"a"' });
    expect(existsSync(path.join(root, "originals"))).toBe(false);
  });

  it("refuses a second transfer of the same key in one process", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const controller = new AbortController();
    const stalled: AsyncIterable<Uint8Array> = { [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<Uint8Array>>(() => undefined) }) };
    // storeStream claims its key when called, before its first await: no wait is needed here.
    const first = archive.storeStream({ key: "SAME", body: stalled, ext: "jpg", signal: controller.signal });
    await expect(archive.storeStream({ key: "SAME", body: chunks(Buffer.from("x")), ext: "jpg" })).rejects.toThrow(/already running/);
    controller.abort();
    await expect(first).rejects.toThrow();
  });

  it("throws DiskFullError before a transfer when free space is under the threshold", async () => {
    const archive = new Archive({ root, minFreeBytes: Number.MAX_SAFE_INTEGER });
    expect(await archive.freeBytes()).toBeGreaterThan(0);
    await expect(archive.assertSpace()).rejects.toBeInstanceOf(DiskFullError);
    const err = await archive.storeStream({ key: "X", body: chunks(Buffer.from("abc")), ext: "jpg" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiskFullError);
    expect((err as DiskFullError).freeBytes).toBeGreaterThan(0);
    expect((err as Error).message).toMatch(/Free some space/);
  });

  it("on ENOSPC deletes the partial file, leaves no final file and throws DiskFullError (injected failure)", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    async function* full(): AsyncGenerator<Buffer> {
      yield randomBytes(1000);
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    }
    await expect(archive.storeStream({ key: "FULL", body: full(), ext: "jpg", expectedSize: 5000 })).rejects.toBeInstanceOf(DiskFullError);
    expect(await archive.partialState("FULL")).toEqual({ size: 0, etag: undefined });
    expect(existsSync(path.join(root, "originals"))).toBe(false);
  });

  const canMount = process.platform === "linux" && process.getuid?.() === 0;
  it.runIf(canMount)("on a real full disk (a 1 MiB tmpfs) leaves neither a final nor a partial file", async () => {
    const mnt = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-tmpfs-"));
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mnt], { stdio: "ignore" });
    } catch {
      await fs.rmdir(mnt);
      console.warn("tmpfs mount not permitted here; the injected ENOSPC test covers the path");
      return;
    }
    cleanups.push(async () => {
      execFileSync("umount", [mnt], { stdio: "ignore" });
      await fs.rmdir(mnt);
    });
    const archive = new Archive({ root: path.join(mnt, "archive"), minFreeBytes: 0 });
    const small = await archive.storeBytes({ bytes: Buffer.from("already stored"), ext: "txt" });
    const data = randomBytes(3 * 1024 * 1024);
    const err = await archive
      .storeStream({ key: "BIG-original", body: chunks(data, 64 * 1024), ext: "jpg", expectedSize: data.length })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DiskFullError);
    expect(await archive.partialState("BIG-original")).toEqual({ size: 0, etag: undefined });
    // Nothing else was deleted, and nothing new counts as stored.
    expect(await listFiles(path.join(mnt, "archive", "originals"))).toEqual([small.relPath.replace(/^originals\//, "")]);
    expect(await archive.hashFile(small.relPath)).toMatchObject({ size: 14 });
    // Space is back once the partial is gone: a small file fits again.
    await expect(archive.storeBytes({ bytes: Buffer.from("fits"), ext: "txt" })).resolves.toMatchObject({ size: 4 });
  });

  it("resolves paths only inside the root, symlinked parents included", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    await archive.storeBytes({ bytes: Buffer.from("x"), ext: "txt" });
    expect(archive.resolveInside("originals/ab/x.jpg")).toBe(path.join(root, "originals/ab/x.jpg"));
    for (const bad of ["../outside", "originals/../../outside", "/etc/passwd", "C:\\Windows", "a\u0000b", "\\\\server\\share"]) {
      expect(() => archive.resolveInside(bad), bad).toThrow(OutsideArchiveError);
    }
    const outside = path.join(dir, "outside");
    await fs.mkdir(outside);
    await fs.symlink(outside, path.join(root, "escape"));
    expect(() => archive.resolveInside("escape/file")).toThrow(OutsideArchiveError);
    expect(() => archive.resolveInside("escape/new/deeper/file")).toThrow(OutsideArchiveError);
    // Names sanitised from hostile input always stay inside.
    for (const hostile of ["../../etc/passwd", "..", "/abs", "CON", "a\u202Eb"]) {
      expect(
        archive
          .resolveInside(`by-user/${sanitizeComponent(hostile)}/${readableName({ title: hostile, deviationid: "ID", ext: "jpg" })}`)
          .startsWith(root + path.sep),
      ).toBe(true);
    }
  });

  it("never waits on a FIFO at a partial file's metadata name: the resume reads no ETag, its write is refused", { timeout: 30_000 }, async () => {
    // The metadata is read and written by synchronous calls (local-disk.ts): a wait on a FIFO there would stop the
    // whole process, its leases and its signals with it, so a child process makes the calls.
    const partial = new Archive({ root, minFreeBytes: 0 }).partialPath("k");
    await fs.mkdir(path.dirname(partial), { recursive: true });
    await fs.writeFile(partial, "ab");
    execFileSync("mkfifo", [`${partial}.json`]);
    const disk = JSON.stringify(pathToFileURL(path.resolve("src/storage/local-disk.ts")).href);
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "-e",
        `import(${disk}).then(async ({ LocalDisk }) => {
          const disk = new LocalDisk({ root: ${JSON.stringify(root)}, fileMode: 0o600, dirMode: 0o700 });
          const read = await disk.partialState("k");
          const write = await disk.writePartialMeta("k", "e").then(() => "written", (err) => err.code);
          console.log(JSON.stringify({ read: { size: read.size, etag: read.etag ?? null }, write }));
        })`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    // A child still waiting when the test times out goes with it.
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(0);
    expect(JSON.parse(out)).toEqual({ read: { size: 2, etag: null }, write: "ENXIO" });
  });

  it("writes a readable tree of relative links, replaces changed ones and removes those no longer listed", async () => {
    const archive = new Archive({ root, minFreeBytes: 0 });
    const one = await archive.storeBytes({ bytes: randomBytes(1000), ext: "png" });
    const two = await archive.storeBytes({ bytes: randomBytes(1000), ext: "jpg" });
    const name = readableName({ title: "../../etc/passwd", deviationid: "D1", ext: "png" });
    const places = [
      "by-user/artist/Folder A",
      "by-user/artist/Folder B",
      "by-user/artist/Parent/Child",
      "by-user/owner/collections/Faves",
      "by-user/owner/collections/More",
    ];
    const links = places.map((p) => ({ linkPath: `${p}/${name}`, target: one.relPath }));
    expect(await archive.writeLinks(links)).toEqual({ written: 5, removed: 0 });
    for (const l of links) {
      const abs = archive.resolveInside(l.linkPath);
      const target = await fs.readlink(abs);
      expect(path.isAbsolute(target)).toBe(false);
      expect(await fs.realpath(abs)).toBe(await fs.realpath(archive.resolveInside(one.relPath)));
      expect(mode(await fs.stat(path.dirname(abs)))).toBe(0o700);
    }
    expect((await listFiles(path.join(root, "originals"))).length).toBe(2);
    // Same list again: nothing to do.
    expect(await archive.writeLinks(links)).toEqual({ written: 0, removed: 0 });

    // A user's own file in the tree is left alone; a link whose row is gone is removed with its empty folder.
    await fs.writeFile(path.join(root, "by-user/artist/notes.txt"), "mine");
    const next = [...links.slice(0, 3), { linkPath: links[3]!.linkPath, target: two.relPath }];
    expect(await archive.writeLinks(next)).toEqual({ written: 1, removed: 1 });
    expect(existsSync(path.join(root, "by-user/owner/collections/More"))).toBe(false);
    expect(await fs.readFile(path.join(root, "by-user/artist/notes.txt"), "utf8")).toBe("mine");
    expect(await fs.realpath(archive.resolveInside(links[3]!.linkPath))).toBe(await fs.realpath(archive.resolveInside(two.relPath)));

    // The archive moves as a whole: relative links still resolve at the new place.
    const moved = path.join(dir, "moved");
    await fs.rename(root, moved);
    expect((await fs.readFile(path.join(moved, links[0]!.linkPath))).length).toBe(1000);

    await expect(archive.writeLinks([{ linkPath: "../escape", target: one.relPath }])).rejects.toThrow(OutsideArchiveError);
    await expect(archive.writeLinks([{ linkPath: "by-user/a/b", target: "../../etc/passwd" }])).rejects.toThrow(OutsideArchiveError);
  });

  it("stores a got stream from the simulator's CDN, resuming after a reset mid-body with Range and If-Range", async () => {
    const size = 5 * 1024 * 1024 + 3;
    const probe = await startSimulator({ seed: 4, dataset: { deviations: 10 } });
    const id = downloadableOwnerDeviations(probe.truth)[0]?.deviationid ?? "";
    await probe.close();
    const sim = await startSimulator({ seed: 4, dataset: { deviations: 10 }, fileSizes: { [id]: size } });
    try {
      const archive = new Archive({ root, minFreeBytes: 0 });
      const info = await got(`${sim.apiUrl}/deviation/download/${id}`, { headers: { authorization: `Bearer ${sim.issueUserToken().access_token}` } }).json<{
        src: string;
      }>();
      sim.faults.add({ route: "/_cdn", kind: "reset_mid_body", atByte: 1_000_000 });
      const first = got.stream(info.src, { retry: { limit: 0 } });
      const etag = await new Promise<string>((resolve) => first.once("response", (r: { headers: Record<string, string> }) => resolve(r.headers.etag ?? "")));
      await expect(archive.storeStream({ key: `${id}-original`, body: first, ext: "jpg", expectedSize: size, etag })).rejects.toThrow();
      const partial = await archive.partialState(`${id}-original`);
      expect(partial).toEqual({ size: 1_000_000, etag });

      const rest = got.stream(info.src, { retry: { limit: 0 }, headers: { range: `bytes=${partial.size}-`, "if-range": etag } });
      const status = await new Promise<number>((resolve) => rest.once("response", (r: { statusCode: number }) => resolve(r.statusCode)));
      expect(status).toBe(206);
      const stored = await archive.storeStream({ key: `${id}-original`, body: rest, ext: "jpg", expectedSize: size, resumeFrom: partial.size, etag });
      expect(stored).toMatchObject({ size, sha256: await sim.fileSha256(id), deduplicated: false });
      expect(await archive.hashFile(stored.relPath)).toEqual({ size, sha256: stored.sha256 });
    } finally {
      await sim.close();
    }
  });
});
