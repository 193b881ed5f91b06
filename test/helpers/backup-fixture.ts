// What the backup and restore tests share: an install with an archive to back up, copies of a good backup spoiled
// one way each, and the target database's state.
import { execFileSync } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { expect } from "vitest";
import type { BackupManifest } from "../../src/backup/backup.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "./download-harness.ts";
import { TEST_PG_URL } from "./env.ts";

/** A synced gallery of `deviations` with `quota` of them downloaded. */
export async function createArchivedHarness({ deviations, quota }: { deviations: number; quota: number }): Promise<DownloadHarness> {
  const h = await createDownloadHarness({
    sim: { dataset: { deviations, galleryFolders: 1, collectionFolders: 0, favourites: 0 }, downloadQuota: quota },
    sources: [gallerySource],
    quota,
  });
  await h.syncAll(["gallery"]);
  await h.runOnce();
  return h;
}

/** A copy of the backup `from` at `to`, changed by `spoil`; the manifest, as `spoil` left it, written back. */
export async function spoiledCopy<M extends BackupManifest>(from: string, to: string, spoil: (dir: string, manifest: M) => Promise<void>): Promise<string> {
  execFileSync("cp", ["-a", from, to]);
  const manifest = JSON.parse(await fs.readFile(path.join(to, "manifest.json"), "utf8")) as M;
  await spoil(to, manifest);
  await fs.writeFile(path.join(to, "manifest.json"), JSON.stringify(manifest));
  return to;
}

export async function dropDatabaseNamed(name: string): Promise<void> {
  const admin = await connectPg(TEST_PG_URL);
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export async function expectNoDatabase(name: string): Promise<void> {
  const admin = await connectPg(TEST_PG_URL);
  try {
    expect((await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])).rowCount).toBe(0);
  } finally {
    await admin.end();
  }
}

/**
 * Every table of the public schema but Prisma's ledger, readable_tree_sweeps (a restore forgets the sweep,
 * src/backup/restore.ts) and readable_tree_marks (not backed up, src/db/mirror-tables.ts): its row count and a hash of
 * its rows in one order.
 */
export async function tableDigests(url: string): Promise<Record<string, string>> {
  const client = await connectPg(url);
  try {
    const tables = await client.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('_prisma_migrations', 'readable_tree_sweeps', 'readable_tree_marks') ORDER BY 1",
    );
    const out: Record<string, string> = {};
    for (const { name } of tables.rows) {
      const r = await client.query<{ n: number; h: string }>(
        `SELECT count(*)::int AS n, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')) AS h FROM ${quoteIdent(name)} t`,
      );
      out[name] = `${r.rows[0]!.n} ${r.rows[0]!.h}`;
    }
    return out;
  } finally {
    await client.end();
  }
}
