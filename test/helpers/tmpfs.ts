// A small real filesystem for the tests of a full or read-only disk: a tmpfs, where this machine lets a test mount
// one (root in a container that allows it); the tests that need it are skipped elsewhere.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** Whether this machine lets the test mount a tmpfs. */
export function canMount(): boolean {
  const probe = mkdtempSync(path.join(os.tmpdir(), "dvault-mount-probe-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], { stdio: "ignore" });
    execFileSync("umount", [probe], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}
