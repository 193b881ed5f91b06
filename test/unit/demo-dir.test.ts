// The demo's folder (src/demo/demo-dir.ts): the demo empties it on every run, so it takes only a folder that is its own
// (new, empty, marked, or an earlier demo's ./.demo) and refuses anyone else's before touching it.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { claimDemoDir, DEMO_MARK, type InstallFolders } from "../../src/demo/demo-dir.ts";
import { UserError } from "../../src/errors.ts";

let root: string;
/** The install's own folders (src/config.ts), apart from every folder the tests hand the demo unless a test says so. */
let install: InstallFolders;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), "dvault-demo-dir-"));
  install = {
    archiveDir: path.join(root, "install", "archive"),
    configDir: path.join(root, "install", "config"),
    dataDir: path.join(root, "install", "data"),
    digest: { dir: path.join(root, "install", "digests") },
  };
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe(claimDemoDir.name, () => {
  it("makes and marks a new folder, marks an empty one, and takes a marked one whatever it holds", () => {
    const fresh = path.join(root, "a", "b");
    expect(claimDemoDir(fresh, install)).toBe(fresh);
    expect(readdirSync(fresh)).toEqual([DEMO_MARK]);

    const empty = path.join(root, "empty");
    mkdirSync(empty);
    claimDemoDir(empty, install);
    expect(existsSync(path.join(empty, DEMO_MARK))).toBe(true);

    writeFileSync(path.join(fresh, "anything.txt"), "the demo's own, since the folder is marked");
    expect(claimDemoDir(fresh, install)).toBe(fresh);
  });

  it("refuses a folder holding a person's files, naming them, and changes nothing in it", () => {
    const mine = path.join(root, "mine");
    mkdirSync(path.join(mine, "photos"), { recursive: true });
    writeFileSync(path.join(mine, "thesis.txt"), "precious");
    const refusal = (() => {
      try {
        claimDemoDir(mine, install);
      } catch (err) {
        return err;
      }
    })();
    expect(refusal).toBeInstanceOf(UserError);
    expect((refusal as Error).message).toMatch(/already holds files the demo did not make \(photos, thesis\.txt\); .*name a new or empty folder with --dir$/);
    expect(readdirSync(mine).sort()).toEqual(["photos", "thesis.txt"]);
    expect(readFileSync(path.join(mine, "thesis.txt"), "utf8")).toBe("precious");
  });

  it("refuses a folder that holds only an archive, unless it is an earlier demo's ./.demo", () => {
    // A person's data folder with their real archive in it looks like a demo's but for its name.
    const data = path.join(root, "data");
    mkdirSync(path.join(data, "archive"), { recursive: true });
    expect(() => claimDemoDir(data, install)).toThrow(/already holds files the demo did not make \(archive\)/);
    expect(existsSync(path.join(data, DEMO_MARK))).toBe(false);

    const earlier = path.join(root, ".demo");
    for (const name of ["archive", "digest", "server"]) mkdirSync(path.join(earlier, name), { recursive: true });
    claimDemoDir(earlier, install);
    expect(existsSync(path.join(earlier, DEMO_MARK))).toBe(true);

    const touched = path.join(root, "x", ".demo");
    mkdirSync(path.join(touched, "archive"), { recursive: true });
    writeFileSync(path.join(touched, "notes.md"), "mine");
    expect(() => claimDemoDir(touched, install)).toThrow(/\(archive, notes\.md\)/);
  });

  it("refuses a file at the name, and says how many there are when there are many", () => {
    const file = path.join(root, "file");
    writeFileSync(file, "x");
    expect(() => claimDemoDir(file, install)).toThrow(`the demo's folder ${file} is not a folder; name a new or empty folder with --dir`);

    const many = path.join(root, "many");
    mkdirSync(many);
    for (let i = 0; i < 5; i++) writeFileSync(path.join(many, `f${i}`), "");
    expect(() => claimDemoDir(many, install)).toThrow(/\(f\d, f\d, f\d, … \(5 in all\)\)/);
  });

  it("follows a link to a folder as the folder itself", () => {
    const target = path.join(root, "target");
    mkdirSync(target);
    writeFileSync(path.join(target, "keep.txt"), "mine");
    const link = path.join(root, "link");
    symlinkSync(target, link);
    expect(() => claimDemoDir(link, install)).toThrow(/\(keep\.txt\)/);
  });

  it("takes an earlier demo's folder by the folder's own name, not by the name of a link to it", () => {
    const theirs = path.join(root, "Ct");
    mkdirSync(path.join(theirs, "config"), { recursive: true });
    writeFileSync(path.join(theirs, "config", "settings"), "mine");
    const link = path.join(root, ".demo");
    symlinkSync(theirs, link);
    expect(() => claimDemoDir(link, install)).toThrow(/already holds files the demo did not make \(config\)/);
    expect(readFileSync(path.join(theirs, "config", "settings"), "utf8")).toBe("mine");
    expect(existsSync(path.join(theirs, DEMO_MARK))).toBe(false);
  });

  it("refuses a folder that is, holds or lies in one of the install's own, even empty or new, and marks nothing", () => {
    mkdirSync(install.archiveDir, { recursive: true });
    const cases: [string, RegExp][] = [
      [install.archiveDir, /overlaps this install's folder .*install\/archive \(DVAULT_ARCHIVE_DIR, the archive\)/],
      [path.join(install.archiveDir, "demo"), /\(DVAULT_ARCHIVE_DIR, the archive\)/],
      [path.join(root, "install"), /\(DVAULT_ARCHIVE_DIR, the archive\)/],
      [path.join(install.configDir, "demo"), /\(DVAULT_CONFIG_DIR, the settings and secret key\)/],
      [install.dataDir, /\(DVAULT_DATA_DIR, the embedded server's data\)/],
      [install.digest.dir, /\(DVAULT_DIGEST_DIR, the digests of the file channel\)/],
    ];
    for (const [dir, message] of cases) {
      expect(() => claimDemoDir(dir, install), dir).toThrow(message);
      expect(existsSync(path.join(dir, DEMO_MARK)), dir).toBe(false);
    }
    // Through a link to the archive, too.
    const link = path.join(root, "looks-apart");
    symlinkSync(install.archiveDir, link);
    expect(() => claimDemoDir(link, install)).toThrow(/\(DVAULT_ARCHIVE_DIR, the archive\)/);
    expect(readdirSync(install.archiveDir)).toEqual([]);
  });
});
