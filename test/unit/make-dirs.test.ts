// makeDirs (src/make-dirs.ts): folders made one at a time from the nearest that exists. Node 20's recursive mkdir
// loops for ever on a folder the kernel answers ENOENT for while its parent exists (/proc/x); this one ends.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeDirs, makeDirsSync } from "../../src/make-dirs.ts";

const made: string[] = [];
const tmp = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dvault-make-dirs-"));
  made.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe(makeDirs.name, () => {
  it("makes the folders a path lacks with the mode asked for, and returns the first one made, as mkdir -p does", async () => {
    const root = tmp();
    expect(await makeDirs(path.join(root, "a", "b", "c"), 0o700)).toBe(path.join(root, "a"));
    expect(fs.statSync(path.join(root, "a", "b", "c")).mode & 0o777).toBe(0o700);
    expect(await makeDirs(path.join(root, "a", "b"))).toBeUndefined();
    expect(makeDirsSync(path.join(root, "x", "y"), 0o700)).toBe(path.join(root, "x"));
  });

  it("names a file in the way as ENOTDIR, with its path", async () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, "file"), "");
    await expect(makeDirs(path.join(root, "file", "sub"))).rejects.toMatchObject({ code: "ENOTDIR", path: path.join(root, "file") });
    expect(() => makeDirsSync(path.join(root, "file", "sub"))).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
  });

  it.runIf(fs.existsSync("/proc/self"))("ends with the kernel's error under /proc, where Node's recursive mkdir spins", async () => {
    await expect(makeDirs("/proc/dvault-no-such/x")).rejects.toMatchObject({ code: "ENOENT" });
    expect(() => makeDirsSync("/proc/dvault-no-such/x")).toThrow(expect.objectContaining({ code: "ENOENT" }));
  });
});
