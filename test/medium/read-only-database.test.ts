// A database that refuses writes (a standby, default_transaction_read_only, a disk full on the server) under the
// commands a person runs. On DVAULT_ENGINE=postgres every start ran the coordination tables' and BullMQ's migrations
// (CREATE SCHEMA, its ledger's ALTER TABLE) even when nothing was pending, so `dvault status`, which reads only, failed
// there ("unexpected error: cannot execute CREATE SCHEMA in a read-only transaction") where it works on Redis; and a
// run that must write ended with "unexpected error" and a second line about LOG_LEVEL, never saying what to do.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgFields } from "../../src/db/pg-fields.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createDownloadHarness, type DownloadHarness } from "../helpers/download-harness.ts";
import { runDvault } from "../helpers/dvault-cli.ts";

let h: DownloadHarness;

beforeAll(async () => {
  h = await createDownloadHarness({
    sim: { dataset: { deviations: 4, galleryFolders: 1, collectionFolders: 0, favourites: 0, trackedUsers: 0 }, downloadQuota: 100 },
    sources: [gallerySource],
  });
  await h.syncAll(["gallery"]);
  // Every table, the engine's included, made as a run makes them; then the database refuses writes to new sessions.
  const first = await runDvault(h, ["download", "--once"]);
  expect(first.code, first.stderr).toBe(0);
  await h.pool.query("UPDATE downloads SET status = 'wanted', next_attempt_at = NULL WHERE kind = 'original'");
  await h.pool.query(`ALTER DATABASE "${pgFields(h.db.url).database}" SET default_transaction_read_only = on`);
}, 120_000);

afterAll(async () => {
  if (h) await h.pool.query(`ALTER DATABASE "${pgFields(h.db.url).database}" RESET default_transaction_read_only`).catch(() => undefined);
  await h?.close();
});

describe("a read-only database", () => {
  it("still shows dvault status, which opens by saying that the database refuses writes and what to do", async () => {
    const run = await runDvault(h, ["status"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Downloads$/m);
    expect(run.stdout).toMatch(
      /^WARNING: PostgreSQL refuses writes, so nothing is archived and the worker's jobs wait without spending attempts; the database is read-only \(default_transaction_read_only is on\): turn it off$/m,
    );
    const json = await runDvault(h, ["status", "--json"]);
    expect(JSON.parse(json.stdout).database).toEqual({ refusesWrites: "read-only" });
  }, 60_000);

  it("ends download --once and sync --once with one line saying what to do, exit 3", async () => {
    for (const args of [
      ["download", "--once"],
      ["sync", "--once"],
    ]) {
      const run = await runDvault(h, args);
      expect(run.code, run.stdout + run.stderr).toBe(3);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      // The engine's own write (PostgreSQL alone) or the run's first check (src/db/account.repository.ts proveWritable).
      expect(run.stderr).toMatch(
        /^dvault: (PostgreSQL refused a write: the database is read-only \(.*\)\. Make it writable|the database refuses writes \(.*\), so nothing was spent: make it writable)/,
      );
    }
  }, 60_000);
});
