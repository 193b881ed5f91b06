// Files of folders dvault does not own (src/foreign-file.ts): a regular file is read within its bound; a link at
// its name, a FIFO, a device, a socket or a folder is refused before a byte is read, and at once (a FIFO with no
// writer would block a plain open for ever).
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ForeignFileError, readForeignFile } from "../../src/foreign-file.ts";

let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-foreign-"));
});
afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

async function refusal(file: string, maxBytes = 1024): Promise<Pick<ForeignFileError, "refusal" | "reason" | "code">> {
  const err = await readForeignFile(file, { maxBytes }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ForeignFileError);
  const { refusal, reason, code } = err as ForeignFileError;
  return { refusal, reason, code };
}

describe(readForeignFile.name, () => {
  it("reads a regular file whole, within its bound", async () => {
    const file = path.join(dir, "ok.json");
    await fs.writeFile(file, "x".repeat(3_000_000));
    expect((await readForeignFile(file, { maxBytes: 3_000_000 })).length).toBe(3_000_000);
    expect(await refusal(file, 2_999_999)).toEqual({ refusal: "too-large", reason: "larger than 2.9 MiB (2.9 MiB)", code: "EFBIG" });
  });

  it("follows no link at the name, whatever it points to", async () => {
    const target = path.join(dir, "target.json");
    await fs.writeFile(target, "{}");
    for (const [name, to] of [
      ["to-file", target],
      ["to-zero", "/dev/zero"],
      ["to-random", "/dev/urandom"],
    ] as const) {
      await fs.symlink(to, path.join(dir, name));
      expect(await refusal(path.join(dir, name))).toEqual({ refusal: "link", reason: "a symbolic link (not followed)", code: "ELOOP" });
    }
  });

  it("refuses a FIFO without a writer at once, and a device, a socket and a folder", async () => {
    const fifo = path.join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    expect(await refusal(fifo)).toEqual({ refusal: "not-file", reason: "not a regular file (a FIFO)", code: "ENOTREG" });
    expect(await refusal("/dev/zero")).toEqual({ refusal: "not-file", reason: "not a regular file (a device)", code: "ENOTREG" });
    expect(await refusal(dir)).toEqual({ refusal: "not-file", reason: "not a regular file (a folder)", code: "ENOTREG" });
    const socket = path.join(dir, "s.sock");
    const server = net.createServer().listen(socket);
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      expect(await refusal(socket)).toEqual({ refusal: "not-file", reason: "not a regular file (a socket)", code: "ENXIO" });
    } finally {
      server.close();
    }
  });

  it("says what the system said of a file it cannot open", async () => {
    expect(await refusal(path.join(dir, "missing"))).toEqual({ refusal: "unreadable", reason: "cannot be read (ENOENT)", code: "ENOENT" });
  });

  it("stops when its signal is aborted", async () => {
    const file = path.join(dir, "stopped.json");
    await fs.writeFile(file, "{}");
    await expect(readForeignFile(file, { maxBytes: 10, signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
  });
});
