// The test order's seed for a CI run (.ci/run): derived from the commit under test, so every landing (a new
// commit) has a new order, the seed of any landing can be named from its commit alone, and a run of the same
// commit replays it. With no git checkout (an unpacked tarball) it falls back to a random seed.
// Usage: node scripts/test-seed.js [commit]   (prints the seed and what it came from, tab-separated)
import { execFileSync } from "node:child_process";
import { createHash, randomInt } from "node:crypto";
import { pathToFileURL } from "node:url";

/** A seed in [1, 2^31) from a commit id: the first 8 hex digits of its SHA-256. */
export function seedOfCommit(commit) {
  if (!/^[0-9a-f]{7,64}$/i.test(commit)) throw new Error(`not a commit id: "${commit}"`);
  const hex = createHash("sha256").update(commit.toLowerCase()).digest("hex").slice(0, 8);
  return (Number.parseInt(hex, 16) % (2 ** 31 - 1)) + 1;
}

function headCommit() {
  try {
    return execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const commit = process.argv[2] ?? headCommit();
  if (commit) console.log(`${seedOfCommit(commit)}\tcommit ${commit.slice(0, 12)}`);
  else console.log(`${randomInt(1, 2 ** 31)}\trandom (no git commit)`);
}
