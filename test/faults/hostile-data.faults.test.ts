// Hostile data from the simulator: traversal, device names, NUL, bidi overrides and 300-character titles
// and filenames (dataset.hostileNames), HTML and script in titles and note subjects. Every archived path
// stays inside the root and the mirror holds every title exactly.
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkMirror } from "./check.ts";
import { createFaultHarness, downloadUntilConverged, SMALL_DATASET, syncUntilConverged, type FaultHarness } from "./harness.ts";

let h: FaultHarness;

beforeAll(async () => {
  // 30 deviations: room for the 20 hostile names on downloadable originals.
  h = await createFaultHarness({ sim: { seed: 6, dataset: { ...SMALL_DATASET, deviations: 30, hostileNames: true } } });
});
afterAll(async () => {
  await h?.close();
});

async function walk(dir: string, found: string[] = []): Promise<string[]> {
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name);
    found.push(abs);
    if (e.isDirectory()) await walk(abs, found);
  }
  return found;
}

describe("hostile data", () => {
  it("keeps every archived path inside the root and the mirror exact", async () => {
    await syncUntilConverged({ services: h.services, accountId: h.account.id, sources: h.sourceMap });
    await downloadUntilConverged({ services: h.services, deps: h.deps });
    await checkMirror(h);
    const root = await fs.realpath(h.archiveDir);
    const entries = await walk(root);
    expect(entries.length).toBeGreaterThan(20);
    for (const abs of entries) {
      const real = await fs.realpath(abs);
      expect(real === root || real.startsWith(root + path.sep), `${abs} → ${real}`).toBe(true);
      expect(path.basename(abs)).not.toMatch(/[\u0000-\u001f\u202a-\u202e\u2066-\u2069\\]/u);
      expect(Buffer.byteLength(path.basename(abs))).toBeLessThanOrEqual(255);
    }
    const { rows } = await h.pool.query<{ path: string }>("SELECT path FROM downloads WHERE path IS NOT NULL");
    for (const { path: rel } of rows) expect(path.resolve(root, rel).startsWith(root + path.sep), rel).toBe(true);
    await expect(fs.stat(path.join(path.dirname(root), "etc", "passwd"))).rejects.toThrow();
  }, 120_000);
});
