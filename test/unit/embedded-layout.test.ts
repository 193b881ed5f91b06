// Where the embedded server's data goes (src/db/embedded/layout.ts) and the library links its binaries need
// (src/db/embedded/binaries.ts), on real folders under /tmp.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreLibraryLinks } from "../../src/db/embedded/binaries.ts";
import { newFolder } from "../../src/db/embedded/layout.ts";

const made: string[] = [];
const tempDir = (mode: number) => {
  const dir = mkdtempSync("/tmp/dvault-embedded-unit-");
  chmodSync(dir, mode);
  made.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Another user than the folders' owner (they are this process's): only the "other" permission bits apply to it. */
const stranger = { name: "someone", uid: (process.getuid?.() ?? 0) + 4242, gid: (process.getgid?.() ?? 0) + 4242 };

describe("newFolder", () => {
  it("is DVAULT_DATA_DIR/postgres when the server runs as this user, or its user can enter the folder", () => {
    const open = tempDir(0o755);
    expect(newFolder(path.join(open, "data"), undefined)).toBe(path.join(open, "data", "postgres"));
    expect(newFolder(path.join(open, "data"), stranger)).toBe(path.join(open, "data", "postgres"));
  });

  it("is a folder of its own under the root home when the server's user cannot enter DVAULT_DATA_DIR (a mode-700 home)", () => {
    const home = tempDir(0o700);
    const folder = newFolder(path.join(home, ".local", "share", "dvault"), stranger, "/var/lib/dvault");
    expect(folder).toMatch(/^\/var\/lib\/dvault\/postgres-[0-9a-f]{12}$/);
    // Named after the data folder: another DVAULT_DATA_DIR gets another.
    expect(newFolder(path.join(home, "other"), stranger, "/var/lib/dvault")).not.toBe(folder);
  });
});

describe("restoreLibraryLinks", () => {
  it("makes each missing link of native/pg-symlinks.json beside its file, relative, and leaves existing ones", () => {
    const root = tempDir(0o755);
    mkdirSync(path.join(root, "native", "lib"), { recursive: true });
    writeFileSync(path.join(root, "native", "lib", "libpq.so.5.18"), "");
    writeFileSync(
      path.join(root, "native", "pg-symlinks.json"),
      JSON.stringify([
        { source: "native/lib/libpq.so.5.18", target: "native/lib/libpq.so.5" },
        { source: "native/lib/libpq.so.5.18", target: "native/lib/libpq.so" },
      ]),
    );
    expect(restoreLibraryLinks(root)).toEqual([path.join(root, "native/lib/libpq.so.5"), path.join(root, "native/lib/libpq.so")]);
    expect(lstatSync(path.join(root, "native/lib/libpq.so.5")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(path.join(root, "native/lib/libpq.so.5"))).toBe("libpq.so.5.18");
    expect(restoreLibraryLinks(root)).toEqual([]);
  });
});
