// The demo's folder (`dvault demo --dir`, ./.demo by default): the demo empties it on every run, so it only ever
// empties a folder that is its own. A folder is the demo's when it is new or empty (the demo then marks it), when it
// holds the demo's mark, or when it is ./.demo-like: named `.demo` and holding nothing but what a demo makes (an
// earlier version's, which left no mark). Anything else (a person's folder, a project, a real archive) is refused
// before the demo starts a server in it or writes anything.
import { existsSync, mkdirSync, readdirSync, realpathSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { UserError } from "../errors.ts";
import { DEMO_SERVER_DIR } from "./servers.ts";

/** The file that says a folder is the demo's: written when the demo first takes a new or empty folder. */
export const DEMO_MARK = ".dvault-demo";

/** What a demo leaves in its folder: the mark, its archive, its digests, its settings and its own embedded server's data. */
const DEMO_NAMES = new Set([DEMO_MARK, "archive", "digest", "digests", "config", DEMO_SERVER_DIR]);

const MARK_TEXT = "This folder is dvault demo's own: each run of the demo empties it and starts over.\n";

/** The install's own folders, which the demo's folder may neither be, hold, nor lie in (src/config.ts). */
export type InstallFolders = { archiveDir: string; configDir: string; dataDir: string; digest: { dir: string } };

/** `p` with every link of the part that exists resolved (a folder not made yet: its nearest existing parent's). */
function realOf(p: string): string {
  const abs = path.resolve(p);
  if (existsSync(abs)) return realpathSync(abs);
  const parent = path.dirname(abs);
  return parent === abs ? abs : path.join(realOf(parent), path.basename(abs));
}

/** Whether `inner` is `outer` or lies inside it. */
function within(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Throws when the demo's folder overlaps one of the install's own: emptying it would empty theirs, or part of it. */
function assertApart(real: string, abs: string, install: InstallFolders): void {
  const named = [
    ["DVAULT_ARCHIVE_DIR, the archive", install.archiveDir],
    ["DVAULT_CONFIG_DIR, the settings and secret key", install.configDir],
    ["DVAULT_DATA_DIR, the embedded server's data", install.dataDir],
    ["DVAULT_DIGEST_DIR, the digests of the file channel", install.digest.dir],
  ] as const;
  for (const [what, folder] of named) {
    const theirs = realOf(folder);
    if (within(theirs, real) || within(real, theirs)) {
      throw new UserError(
        `the demo's folder ${abs} overlaps this install's folder ${folder} (${what}); the demo empties its folder on every run, so name a folder apart from it with --dir`,
      );
    }
  }
}

/**
 * Takes `dir` as the demo's folder (made if missing, marked if new or empty) and returns its absolute path; throws a
 * UserError naming what is in the way when the folder is someone else's, or overlaps one of the install's own folders.
 */
export function claimDemoDir(dir: string, install: InstallFolders): string {
  const abs = path.resolve(dir);
  if (existsSync(abs) && !statSync(abs).isDirectory()) {
    throw new UserError(`the demo's folder ${abs} is not a folder; name a new or empty folder with --dir`);
  }
  assertApart(realOf(abs), abs, install);
  mkdirSync(abs, { recursive: true });
  const names = readdirSync(abs).sort();
  if (names.includes(DEMO_MARK)) return abs;
  // An earlier demo's folder, by the name of the folder itself (not of a link to it) and what it holds.
  const earlierDemo = path.basename(realpathSync(abs)) === ".demo" && names.every((n) => DEMO_NAMES.has(n));
  if (names.length > 0 && !earlierDemo) {
    const shown = names.slice(0, 3).join(", ") + (names.length > 3 ? `, … (${names.length} in all)` : "");
    throw new UserError(
      `the demo's folder ${abs} already holds files the demo did not make (${shown}); the demo empties its folder on every run, so name a new or empty folder with --dir`,
    );
  }
  writeFileSync(path.join(abs, DEMO_MARK), MARK_TEXT, { mode: 0o600 });
  return abs;
}
