// The readable tree (by-user/...) at the size of a collector's archive: what one regeneration costs when nothing in
// it changes, as at the end of every `download --once` / `archive --once` that stored a file, and in the worker when
// the tree is dirty (src/downloads/readable-links.ts rewrites the whole tree from the database). It times
// src/storage/readable-tree.ts#writeReadableTree alone, on a scratch folder of N empty originals and one link each:
// the first write, then a rewrite of the same list by a new LocalDisk (a new process's), with the heap's growth;
// the database's part (every placement listed) comes on top. Reported, no goal: docs/PERFORMANCE.md#readable-tree.
// Run: node --import tsx bench/readable-tree.ts [--links 10000,50000]
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { LocalDisk } from "../src/storage/local-disk.ts";
import { type ReadableLink, writeReadableTree } from "../src/storage/readable-tree.ts";
import { machine } from "./bench-env.ts";

const { values: args } = parseArgs({ options: { links: { type: "string", default: "10000,50000" } } });
const sizes = (args.links ?? "").split(",").map(Number);
if (sizes.some((n) => !(Number.isInteger(n) && n >= 1))) {
  process.stderr.write("readable-tree: --links expects whole numbers ≥ 1, comma-separated\n");
  process.exit(2);
}

/** N empty originals under `root` and the list that links each once, 200 artists' galleries deep. */
function archiveOf(root: string, n: number): ReadableLink[] {
  const links: ReadableLink[] = [];
  for (let i = 0; i < n; i++) {
    const sum = createHash("sha256").update(String(i)).digest("hex");
    const target = `originals/${sum.slice(0, 2)}/${sum.slice(2, 4)}/${sum}.jpg`;
    mkdirSync(path.join(root, path.dirname(target)), { recursive: true });
    writeFileSync(path.join(root, target), "");
    links.push({ linkPath: `by-user/artist${i % 200}/gallery/work-${i}.jpg`, target });
  }
  return links;
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await run();
  return performance.now() - started;
}

console.log(`readable-tree: ${machine()}`);
console.log("| links | first write | rewrite, nothing changed | per link | heap growth of the rewrite |");
console.log("|---:|---:|---:|---:|---:|");
for (const n of sizes) {
  const root = mkdtempSync(path.join(os.tmpdir(), "dvault-bench-tree-"));
  try {
    const links = archiveOf(root, n);
    const disk = () => new LocalDisk({ root, fileMode: 0o644, dirMode: 0o755 });
    const first = await timed(() => writeReadableTree(disk(), links));
    const heapBefore = process.memoryUsage().heapUsed;
    const again = await timed(() => writeReadableTree(disk(), links));
    const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
    console.log(`| ${n} | ${(first / 1000).toFixed(1)} s | ${(again / 1000).toFixed(1)} s | ${((again / n) * 1000).toFixed(0)} µs | ${heapMb.toFixed(0)} MB |`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
