// Issue 27 row 5, the bookkeeping: a journal page stored before pages were inert is rewritten once, and its row
// follows the new file (path, sha256, size, a download_history line), the old file goes, the readable links are due
// again, and the service's HTML stays in the database as it came. `dvault verify` counts such pages and `verify
// --fix` rewrites them; the worker's slice (inertTextsStep) goes through every page once per page version and then
// stops; a page whose bytes no longer match its row is left for verify, never laundered into a fresh hash.
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { linksDirtyKey } from "../../src/downloads/after-store.ts";
import { inertTextsStep, makeStoredTextsInert } from "../../src/downloads/inert-texts.ts";
import { isInertPage } from "../../src/text/inert-html.ts";
import { JOB_DEFINITIONS } from "../../jobs/index.ts";
import { runHere } from "../../jobs/run-here.ts";
import { Producer } from "../../src/queue/producer.ts";
import type { DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";
import {
  createHostileJournalHarness,
  HOSTILE_JOURNAL,
  replaceWithOldPage,
  type StoredTextRow as TextRow,
  storedTextRows,
} from "../helpers/hostile-text-pages.ts";

let h: DownloadHarness;
let rows: TextRow[];

async function row(id: string): Promise<TextRow> {
  const { rows: r } = await h.pool.query<TextRow>("SELECT id::text, deviationid, path, sha256, size::int FROM downloads WHERE id = $1::bigint", [id]);
  return r[0]!;
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const exists = (rel: string) =>
  fs.stat(path.join(h.archiveDir, rel)).then(
    () => true,
    () => false,
  );

// A small mirror per test: each rewrites, replaces or tampers with pages another reads.
beforeEach(async () => {
  h = await createHostileJournalHarness();
  rows = await storedTextRows(h);
  expect(rows.length).toBeGreaterThanOrEqual(3);
});

afterEach(async () => {
  await h?.close();
});

describe("stored text pages made inert once", () => {
  it("stores new pages inert", async () => {
    for (const r of rows) expect(isInertPage(await fs.readFile(path.join(h.archiveDir, r.path), "utf8"))).toBe(true);
  });

  it("dvault verify counts a page stored before; verify --fix rewrites it and its row, history and links follow", async () => {
    const target = rows[0]!;
    const old = await replaceWithOldPage(h, target.id, target.title);
    const counted = await runDvault(h, ["verify"]);
    expect(counted.code).toBe(0);
    expect(counted.stdout).toMatch(/^text pages \d+, 1 still as the service sent them \(scripts included\): dvault verify --fix makes them inert/m);

    await h.services.coord.remove(linksDirtyKey(h.services.config.redisPrefix));
    const fixed = await runDvault(h, ["verify", "--fix"]);
    expect(fixed.code).toBe(0);
    expect(fixed.stdout).toMatch(/^text pages \d+, 1 rewritten inert/m);
    const now = await row(target.id);
    const bytes = await fs.readFile(path.join(h.archiveDir, now.path));
    expect(now.path).not.toBe(old.relPath);
    expect(now).toMatchObject({ sha256: sha256(bytes), size: bytes.length });
    expect(isInertPage(bytes.toString("utf8"))).toBe(true);
    expect(bytes.toString("utf8")).not.toMatch(/<script|onerror|srcdoc|javascript:/);
    expect(await exists(old.relPath)).toBe(false);
    const { rows: history } = await h.pool.query(
      "SELECT change, old_path, old_sha256, new_path, new_sha256, note FROM download_history WHERE download_id = $1::bigint ORDER BY id DESC LIMIT 1",
      [target.id],
    );
    expect(history[0]).toMatchObject({ change: "replaced", old_path: old.relPath, old_sha256: old.sha256, new_path: now.path, new_sha256: now.sha256 });
    expect(history[0].note).toMatch(/^made inert/);
    expect(await h.services.coord.exists(linksDirtyKey(h.services.config.redisPrefix))).toBe(true);
    const { rows: texts } = await h.pool.query<{ html: string }>("SELECT html FROM deviation_texts WHERE deviationid = $1", [target.deviationid]);
    expect(texts[0]!.html).toBe(HOSTILE_JOURNAL);
  });

  it("the worker's downloads.enqueue job rewrites each page once per version, and leaves a page whose bytes changed for verify", async () => {
    const [, a, b] = rows as [TextRow, TextRow, TextRow];
    const oldA = await replaceWithOldPage(h, a.id, a.title);
    // b's row points at an old page whose bytes were changed afterwards: corrupt, not for rewriting.
    const oldB = await replaceWithOldPage(h, b.id, b.title, "<p>other</p>");
    await fs.appendFile(path.join(h.archiveDir, oldB.relPath), "tampered");
    await h.services.coord.remove(`${h.services.config.redisPrefix}:texts:inert`);

    // The maintenance job itself, through the worker's catalogue (as a maintenance host runs it every two minutes).
    const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
    try {
      const [outcome] = await runHere({ services: h.services, log: h.log, producer, queue: "maintenance" }, [
        { name: "downloads.enqueue", payload: { scope: "all" } },
      ]);
      expect(outcome).toMatchObject({ state: "completed", value: { texts: { rewritten: 1, more: false, skipped: 1 } } });
    } finally {
      await producer.close();
    }
    expect((await row(a.id)).path).not.toBe(oldA.relPath);
    expect(await row(b.id)).toMatchObject({ path: oldB.relPath, sha256: oldB.sha256 });
    expect(await exists(oldB.relPath)).toBe(true);
    expect((await makeStoredTextsInert({ deps: h.deps, dryRun: true })).skipped).toEqual([
      { path: oldB.relPath, reason: "its bytes no longer match its sha256" },
    ]);
    // Done for this version: the next runs do not read the pages again.
    expect(await inertTextsStep(h.deps, { budgetMs: 60_000 })).toBeUndefined();
    expect(await makeStoredTextsInert({ deps: h.deps, dryRun: true })).toMatchObject({ rewritten: 0 });
  });

  it("a slice out of time stops after the row it reached and the next one goes on from there", async () => {
    const c = rows[0]!;
    await replaceWithOldPage(h, c.id, c.title);
    await h.services.coord.remove(`${h.services.config.redisPrefix}:texts:inert`);
    const none = await inertTextsStep(h.deps, { budgetMs: 0 });
    expect(none).toMatchObject({ checked: 0, rewritten: 0, more: true });
    const rest = await inertTextsStep(h.deps, { budgetMs: 60_000 });
    expect(rest).toMatchObject({ rewritten: 1, more: false });
  });
});
