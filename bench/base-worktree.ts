// A base revision checked out into a temporary git worktree that borrows this tree's node_modules, for the benches
// that measure old and new code in one run (compare-revisions.ts, startup.ts).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

export const HEAD_DIR = path.resolve(import.meta.dirname, "..");

export function git(cwd: string, ...a: string[]): string {
  const r = spawnSync("git", a, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${a.join(" ")}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/**
 * `rev` in a temporary worktree, made ready by running `setup` there (e.g. its Prisma client generated); a
 * failed setup throws with `what` ("the Prisma client of <commit> did not generate").
 */
export function prepareBase(rev: string, setup: { argv: readonly string[]; what: string }): { dir: string; commit: string; cleanup: () => void } {
  const commit = git(HEAD_DIR, "rev-parse", "--short", rev);
  const dir = path.join(mkdtempSync(path.join(tmpdir(), "dvault-base-")), "tree");
  git(HEAD_DIR, "worktree", "add", "--detach", dir, commit);
  symlinkSync(path.join(HEAD_DIR, "node_modules"), path.join(dir, "node_modules"));
  const [file, ...argv] = setup.argv;
  const r = spawnSync(file as string, argv, { cwd: dir, stdio: "ignore" });
  if (r.status !== 0) throw new Error(`${setup.what} of ${commit} failed`);
  return {
    dir,
    commit,
    cleanup: () => {
      git(HEAD_DIR, "worktree", "remove", "--force", dir);
      rmSync(path.dirname(dir), { recursive: true, force: true });
    },
  };
}
