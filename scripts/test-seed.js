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

/** The full id of `rev` (HEAD, a short id) in this checkout, or null when git cannot name it. */
function fullCommit(rev) {
  try {
    return execFileSync("git", ["rev-parse", "--verify", "--quiet", `${rev}^{commit}`], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const given = process.argv[2];
  // The seed is always that of the full id, as .ci/run takes it from HEAD: a short id given here names the same
  // commit, so it must give the same seed. A full id this checkout lacks is taken as it is.
  const commit = given === undefined ? fullCommit("HEAD") : /^[0-9a-f]{40}$/i.test(given) ? given : fullCommit(given);
  if (given !== undefined && !commit) {
    console.error(`test-seed: "${given}" is not a commit of this checkout: give one it has, or a full 40-digit commit id`);
    process.exit(2);
  }
  if (commit) console.log(`${seedOfCommit(commit)}\tcommit ${commit.slice(0, 12)}`);
  else console.log(`${randomInt(1, 2 ** 31)}\trandom (no git commit)`);
}
