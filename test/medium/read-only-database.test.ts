// A database that refuses writes (a standby, default_transaction_read_only, a disk full on the server) under the
// commands a person runs. On DVAULT_ENGINE=postgres every start ran the coordination tables' and BullMQ's migrations
// (CREATE SCHEMA, its ledger's ALTER TABLE) even when nothing was pending, so `dvault status`, which reads only, failed
// there ("unexpected error: cannot execute CREATE SCHEMA in a read-only transaction") where it works on Redis; and a
// run that must write ended with "unexpected error" and a second line about LOG_LEVEL, never saying what to do.
// A database that starts refusing writes during a `--once` run: its jobs were waited out as the worker's are
// (src/queue/outage.ts), and the run waited for good, a warning every few seconds per job.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pgFields } from "../../src/db/pg-fields.ts";
import { overviewPage } from "../../src/http/pages/overview.ts";
import { StatusReportSchema } from "../../src/status/schema.ts";
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
  // Every table, the engine's included, made as a run makes them.
  const first = await runDvault(h, ["download", "--once"]);
  expect(first.code, first.stderr).toBe(0);
  // A write refused as a read-only server refuses it; the triggers below say which.
  await h.pool.query(
    `CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'cannot execute UPDATE in a read-only transaction' USING ERRCODE = 'read_only_sql_transaction'; END $$`,
  );
}, 120_000);

afterAll(async () => {
  await h?.close();
});

/** The originals wanted again, as a sync that found them new leaves them. */
const wantOriginals = () => h.pool.query("UPDATE downloads SET status = 'wanted', next_attempt_at = NULL, queued_at = NULL WHERE kind = 'original'");

describe("a database that starts refusing writes during a --once run", () => {
  afterEach(async () => {
    await h.pool.query("DROP TRIGGER IF EXISTS refuse_write ON downloads; DROP TRIGGER IF EXISTS refuse_write ON sync_sources");
  });

  it("ends download --once with the line saying what to do, exit 3, not waiting for good", async () => {
    await wantOriginals();
    // The run's claim goes through; every later write to the rows is refused.
    await h.pool.query(
      `CREATE TRIGGER refuse_write BEFORE UPDATE ON downloads FOR EACH ROW
       WHEN (NEW.queued_at IS NULL OR NEW.queued_at IS NOT DISTINCT FROM OLD.queued_at) EXECUTE FUNCTION refuse_write()`,
    );
    await expect(h.runOnce()).rejects.toMatchObject({
      exitCode: 3,
      message: expect.stringMatching(
        /^PostgreSQL refused a write: the database is read-only \(cannot execute UPDATE in a read-only transaction\)\. Make it writable/,
      ),
    });
  }, 30_000);

  it("ends sync --once with one line saying what to do, exit 3, not waiting for good", async () => {
    // After the run's own check at its start (src/cli/sync.ts): the source's first write is refused.
    await h.pool.query("CREATE TRIGGER refuse_write BEFORE INSERT OR UPDATE ON sync_sources FOR EACH ROW EXECUTE FUNCTION refuse_write()");
    const run = await runDvault(h, ["sync", "--once", "--only", "gallery"]);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(run.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^dvault: PostgreSQL refused a write: the database is read-only/)]);
  }, 30_000);
});

describe("a read-only database", () => {
  const database = () => pgFields(h.db.url).database;

  beforeAll(async () => {
    await wantOriginals();
    // The database refuses writes to new sessions.
    await h.pool.query(`ALTER DATABASE "${database()}" SET default_transaction_read_only = on`);
  });

  afterAll(async () => {
    // From a session of its own that writes, whenever it was opened.
    const client = await h.pool.connect();
    try {
      await client.query("SET default_transaction_read_only = off");
      await client.query(`ALTER DATABASE "${database()}" RESET default_transaction_read_only`);
    } finally {
      client.release();
    }
  });

  it("still shows dvault status, which opens by saying that the database refuses writes and what to do", async () => {
    const run = await runDvault(h, ["status"]);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Downloads$/m);
    expect(run.stdout).toMatch(
      /^WARNING: PostgreSQL refuses writes, so nothing is archived and the worker's jobs wait without spending attempts; the database is read-only \(default_transaction_read_only is on\): turn it off$/m,
    );
    const json = await runDvault(h, ["status", "--json"]);
    const report = StatusReportSchema.parse(JSON.parse(json.stdout));
    expect(report.database).toEqual({ refusesWrites: "read-only" });
    // The dashboard's overview, from the same report, opens with the same words.
    expect(overviewPage(report)).toMatch(
      /<h1>Overview[\s\S]*?<div class="notice bad" role="alert">PostgreSQL refuses writes, so nothing is archived and the worker&#39;s jobs wait without spending attempts; the database is read-only \(default_transaction_read_only is on\): turn it off<\/div>/,
    );
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
