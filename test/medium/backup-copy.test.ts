// Backup format 2 (src/backup/table-files.ts): the mirror through COPY, one gzipped text file per table, from one
// snapshot; restored by dvault's own migrations and COPY FROM (src/backup/table-load.ts). A round trip keeps every
// table's rows and leaves the sequences past the restored ids and Prisma's ledger as Prisma keeps it; a backup damaged
// in any of the ways below is refused before anything is touched, in one line naming the file.
import { execFileSync, spawn } from "node:child_process";
import { watch } from "node:fs";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackupManifestV2, createBackup, UNFINISHED } from "../../src/backup/backup.ts";
import { restoreBackup } from "../../src/backup/restore.ts";
import { writeTables } from "../../src/backup/table-files.ts";
import { connectPg, quoteIdent } from "../../src/db/connect.ts";
import { migrate } from "../../src/db/migrate.ts";
import { openMirrorDump } from "../../src/db/mirror-dump.ts";
import { knownMigrations } from "../../src/db/mirror-load.ts";
import { withDatabase } from "../../src/db/pg-fields.ts";
import { createArchivedHarness, dropDatabaseNamed, expectNoDatabase, spoiledCopy, tableDigests } from "../helpers/backup-fixture.ts";
import { testConfig } from "../helpers/config.ts";
import { countedDownloadFigures, keptDownloadFigures } from "../helpers/download-counts.ts";
import type { DownloadHarness } from "../helpers/download-harness.ts";
import { collectRun, runDvault } from "../helpers/dvault-cli.ts";
import { TEST_ENGINE, TEST_PG_URL } from "../helpers/env.ts";
import { itNeedingPgDump } from "../helpers/needs-pg-dump.ts";

let h: DownloadHarness;
let base: string;
let good: string;
const targetDb = `dvault_t_backup_copy_${process.pid}`;

beforeAll(async () => {
  h = await createArchivedHarness({ deviations: 30, quota: 6 });
  base = await fs.mkdtemp(path.join(os.tmpdir(), "dvault-backup-copy-"));
  good = path.join(base, "good");
  await createBackup({ config: testConfig(h.env), out: good, version: "test" });
}, 120_000);

afterAll(async () => {
  await h?.close();
  await dropDatabase(targetDb);
  if (base) await fs.rm(base, { recursive: true, force: true });
});

const dropDatabase = dropDatabaseNamed;

/** The target of the refusals below: a database that does not exist yet, and folders that do not either. */
const target = () =>
  testConfig({
    DATABASE_URL: withDatabase(TEST_PG_URL, targetDb),
    DVAULT_ARCHIVE_DIR: path.join(base, "target", "archive"),
    DVAULT_CONFIG_DIR: path.join(base, "target", "config"),
  });

const readManifest = async (dir: string) => JSON.parse(await fs.readFile(path.join(dir, "manifest.json"), "utf8")) as BackupManifestV2;

/** Each sequence behind a column: the largest id of its table and the value it gives next. */
async function sequences(url: string): Promise<Array<{ table: string; max: number; next: number }>> {
  const client = await connectPg(url);
  try {
    const { rows } = await client.query<{ tbl: string; col: string; seq: string }>(
      `SELECT table_name AS tbl, column_name AS col, pg_get_serial_sequence(quote_ident(table_name), column_name) AS seq
       FROM information_schema.columns WHERE table_schema = 'public' AND (column_default LIKE 'nextval(%' OR is_identity = 'YES')`,
    );
    const out = [];
    for (const r of rows) {
      const max = (await client.query<{ m: string | null }>(`SELECT max(${quoteIdent(r.col)})::text AS m FROM ${quoteIdent(r.tbl)}`)).rows[0]!.m;
      const next = (await client.query<{ n: string }>("SELECT nextval($1)::text AS n", [r.seq])).rows[0]!.n;
      out.push({ table: r.tbl, max: Number(max ?? 0), next: Number(next) });
    }
    return out;
  } finally {
    await client.end();
  }
}

/** A copy of the good backup, changed by `spoil` (the manifest written back after). */
/** The migration that made the downloads' counters, and its tables (a backup made before it has none of them). */
const COUNTERS_MIGRATION = "20261129060000_download_counts";
/** The tables of COUNTERS_MIGRATION and of the migrations after it, which a backup made before them does not have. */
const LATER_TABLES = ["download_status_counts", "stored_files", "stored_file_totals", "readable_tree_sources", "readable_tree_links", "readable_tree_sweeps"];

function spoiled(name: string, spoil: (dir: string, m: BackupManifestV2) => Promise<void>): Promise<string> {
  return spoiledCopy(good, path.join(base, name), spoil);
}

async function expectUntouched(): Promise<void> {
  await expectNoDatabase(targetDb);
  expect(await fs.readdir(path.join(base, "target")).catch(() => [])).toEqual([]);
}

describe("backup format 2", () => {
  it("writes one gzipped COPY text file per table of the mirror, with the columns, rows and checksum of each", async () => {
    const m = await readManifest(good);
    expect(m.format).toBe(2);
    expect(m.database.migrations).toEqual(await knownMigrations());
    const names = m.database.tables.map((t) => t.name);
    expect(names).toContain("deviations");
    expect(names).not.toContain("_prisma_migrations");
    // The readable tree's marks are not kept: a restore rebuilds the tree, comparing every file.
    expect(names).not.toContain("readable_tree_marks");
    const deviations = m.database.tables.find((t) => t.name === "deviations")!;
    expect(deviations.rows).toBeGreaterThan(5);
    expect(deviations.columns[0]).toEqual({ name: "deviationid", type: "text" });
    const bytes = await fs.readFile(path.join(good, deviations.file));
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(deviations.sha256);
    expect(
      execFileSync("zcat", [path.join(good, deviations.file)])
        .toString()
        .split("\n").length - 1,
    ).toBe(deviations.rows);
  });

  it("restores every table's rows, sets the sequences past the restored ids, and keeps Prisma's ledger as Prisma does", async () => {
    const db = `${targetDb}_trip`;
    const config = testConfig({
      DATABASE_URL: withDatabase(TEST_PG_URL, db),
      DVAULT_ARCHIVE_DIR: path.join(base, "trip", "archive"),
      DVAULT_CONFIG_DIR: path.join(base, "trip", "config"),
    });
    try {
      // The manifest says the backup was made before the downloads' counters (migration 20261129060000_download_counts
      // and what came after it), without their tables: restore stops there, and `dvault migrate` (Prisma's own migrate
      // deploy) applies the rest on its ledger, counting the restored rows.
      const all = await knownMigrations();
      const later = all.slice(all.indexOf(COUNTERS_MIGRATION));
      const older = await spoiled("older", async (dir, m) => {
        m.database.migrations = m.database.migrations.filter((name) => !later.includes(name));
        for (const t of m.database.tables.filter((t) => LATER_TABLES.includes(t.name))) await fs.rm(path.join(dir, t.file));
        m.database.tables = m.database.tables.filter((t) => !LATER_TABLES.includes(t.name));
      });
      const restored = await restoreBackup({ config, from: older });
      expect(restored.databaseRestored).toBe(true);
      const original = await tableDigests(h.db.url);
      for (const name of LATER_TABLES) delete original[name];
      expect(await tableDigests(config.databaseUrl)).toEqual(original);
      const seqs = await sequences(config.databaseUrl);
      expect(seqs.some((s) => s.max > 0)).toBe(true);
      for (const s of seqs) expect(s.next, s.table).toBeGreaterThan(s.max);
      await expect(migrate(config.databaseUrl)).resolves.toEqual({ databaseCreated: false, applied: later });
      await expect(migrate(config.databaseUrl)).resolves.toEqual({ databaseCreated: false, applied: [] });
      const pool = await connectPg(config.databaseUrl);
      try {
        const kept = await keptDownloadFigures(pool);
        expect(kept).toEqual(await countedDownloadFigures(pool));
        expect(kept.stored.files).toBeGreaterThan(0);
      } finally {
        await pool.end();
      }
    } finally {
      await dropDatabase(db);
    }
  });

  it("reads every table from one snapshot: rows written after it began are not in the backup", async () => {
    const dump = await openMirrorDump(h.db.url);
    const out = path.join(base, "snapshot");
    try {
      const before = (await h.db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM countries")).rows[0]!.n;
      await h.db.pool.query("INSERT INTO countries (countryid, name) VALUES (99901, 'Snapshotland')");
      await fs.mkdir(path.join(out, "database"), { recursive: true });
      const tables = await writeTables({ dump, dir: out });
      expect(tables.find((t) => t.name === "countries")?.rows).toBe(before);
    } finally {
      await dump.close();
      await h.db.pool.query("DELETE FROM countries WHERE countryid = 99901");
    }
  });

  it("refuses each damaged backup before touching anything, in one line naming the file", async () => {
    const file = (m: BackupManifestV2, name: string) => m.database.tables.find((t) => t.name === name)!;
    const oneByte = await spoiled("one-byte", async (dir, m) => {
      const f = path.join(dir, file(m, "deviations").file);
      const bytes = await fs.readFile(f);
      bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
      await fs.writeFile(f, bytes);
    });
    const cut = await spoiled("cut", async (dir, m) => {
      const t = file(m, "deviations");
      const bytes = (await fs.readFile(path.join(dir, t.file))).subarray(0, -40);
      await fs.writeFile(path.join(dir, t.file), bytes);
      t.sha256 = createHash("sha256").update(bytes).digest("hex");
    });
    const rowLess = await spoiled("row-less", async (dir, m) => {
      // A row taken out and the file packed and hashed again: only the count tells.
      const t = file(m, "deviations");
      const lines = execFileSync("zcat", [path.join(dir, t.file)])
        .toString()
        .split("\n")
        .slice(1)
        .join("\n");
      const bytes = gzipSync(lines);
      await fs.writeFile(path.join(dir, t.file), bytes);
      t.sha256 = createHash("sha256").update(bytes).digest("hex");
    });
    const fileGone = await spoiled("file-gone", async (dir, m) => {
      await fs.rm(path.join(dir, file(m, "users").file));
    });
    const tableGone = await spoiled("table-gone", async (dir, m) => {
      await fs.rm(path.join(dir, file(m, "users").file));
      m.database.tables = m.database.tables.filter((t) => t.name !== "users");
    });
    const renamed = await spoiled("renamed", async (_dir, m) => {
      const columns = file(m, "deviations").columns;
      columns[1] = { ...columns[1]!, name: "renamed" };
    });
    const unfit = await spoiled("unfit", async (dir, m) => {
      // The same number of rows, packed and hashed again, but one value is not of its column's type.
      const t = file(m, "downloads");
      const lines = execFileSync("zcat", [path.join(dir, t.file)])
        .toString()
        .split("\n");
      lines[0] = lines[0]!.replace(/^\d+\t/, "not-a-number\t");
      const bytes = gzipSync(lines.join("\n"));
      await fs.writeFile(path.join(dir, t.file), bytes);
      t.sha256 = createHash("sha256").update(bytes).digest("hex");
    });
    const later = await spoiled("later", async (_dir, m) => {
      m.database.migrations.push("29990101000000_from_the_future");
    });
    const extraTop = await spoiled("extra-top", async (dir) => {
      await fs.writeFile(path.join(dir, "notes.txt"), "mine");
    });
    const extraTable = await spoiled("extra-table", async (dir, m) => {
      await fs.copyFile(path.join(dir, file(m, "users").file), path.join(dir, "database", "users2.copy.gz"));
    });
    const linkedDatabase = await spoiled("linked-database", async (dir) => {
      // The same files, but in a folder outside the backup that its database/ links to.
      await fs.rename(path.join(dir, "database"), path.join(base, "linked-database-outside"));
      await fs.symlink(path.join(base, "linked-database-outside"), path.join(dir, "database"));
    });
    const climbing = await spoiled("climbing", async (_dir, m) => {
      file(m, "users").name = "../../etc/x";
    });
    const boastful = await spoiled("boastful", async (_dir, m) => {
      file(m, "users").rows = 1e300;
    });
    const again = "the backup is damaged; restore from another backup (nothing was restored)";
    const refusals: Array<[string, RegExp]> = [
      [oneByte, new RegExp(`/one-byte/database/deviations\\.copy\\.gz does not match its checksum: ${literal(again)}$`)],
      [cut, new RegExp(`/cut/database/deviations\\.copy\\.gz cannot be read to its end \\(unexpected end of file\\): ${literal(again)}$`)],
      [rowLess, new RegExp(`/row-less/database/deviations\\.copy\\.gz holds \\d+ rows where its manifest says \\d+: ${literal(again)}$`)],
      [fileGone, /the backup is damaged or was altered: its table file .*\/file-gone\/database\/users\.copy\.gz is missing; nothing was restored$/],
      [tableGone, /the backup is damaged or was altered: its manifest\.json has no table users, which its migrations make; nothing was restored$/],
      [
        renamed,
        /the backup is damaged or was altered: its manifest\.json gives the table deviations the columns \(deviationid text, renamed .*\) where its migrations make \(deviationid text, \w+ .*\); nothing was restored$/,
      ],
      [
        unfit,
        /the backup is damaged or was altered: .*\/unfit\/database\/downloads\.copy\.gz does not load into the table downloads \(invalid input syntax for type bigint: "not-a-number"\); nothing was restored$/,
      ],
      [
        later,
        /the backup was made by a later dvault \(its migration 29990101000000_from_the_future is not one of this dvault's\): upgrade dvault; nothing was restored$/,
      ],
    ];
    refusals.push(
      [extraTop, /the backup is damaged or was altered: it holds .*\/extra-top\/notes\.txt, which dvault backup does not write; nothing was restored$/],
      [
        extraTable,
        /the backup is damaged or was altered: it holds .*\/extra-table\/database\/users2\.copy\.gz, a file its manifest\.json does not list; nothing was restored$/,
      ],
      [
        linkedDatabase,
        /the backup is damaged or was altered: its .*\/linked-database\/database is a link, not the backup's folder of tables; nothing was restored$/,
      ],
      [climbing, /the backup is damaged or was altered: its manifest\.json has no valid database\.tables\.\d+\.name; nothing was restored$/],
      [boastful, /the backup is damaged or was altered: its manifest\.json has no valid database\.tables\.\d+\.rows; nothing was restored$/],
    );
    for (const [from, message] of refusals) {
      await expect(restoreBackup({ config: target(), from }), from).rejects.toThrow(message);
      await expectUntouched();
    }
    const restored = await restoreBackup({ config: target(), from: good });
    expect(restored.databaseRestored).toBe(true);
  });
});

describe("dvault backup and restore", () => {
  /** `dvault restore --from <from>` into a new database `db`: it restores, saying so. */
  async function restoresThroughCli(from: string, db: string) {
    const env = { ...h.env, DATABASE_URL: withDatabase(TEST_PG_URL, db), DVAULT_ARCHIVE_DIR: path.join(base, db, "archive") };
    try {
      const restored = await runDvault({ redis: h.redis, env }, ["restore", "--from", from]);
      // A backup made with --no-archive: the archive folder is left as it is, and said so (not "0 archive files").
      expect(restored.stdout, restored.stderr).toMatch(
        new RegExp(`^restored the database \\(\\d+ migrations\\); the backup holds no archive: ${literal(env.DVAULT_ARCHIVE_DIR)} was left as it is`, "m"),
      );
      expect(restored.code).toBe(0);
    } finally {
      await dropDatabase(db);
    }
  }

  it("writes format 2 by default, and restore takes it", async () => {
    const out = path.join(base, "cli");
    const made = await runDvault(h, ["backup", "--out", out, "--no-archive"]);
    expect(made.stderr).toBe("");
    expect(made.stdout).toMatch(/^ {2}database: \d+(\.\d)? (B|KiB|MiB|GiB), \d+ migrations, \d+ tables$/m);
    expect((await readManifest(out)).format).toBe(2);
    await restoresThroughCli(out, `${targetDb}_cli2`);
  }, 60_000);

  /** Runs `start` (a backup into `out`, an empty folder) and calls `stop` once, the moment `entry` appears there. */
  async function stoppedAt<T>(out: string, entry: string, start: () => Promise<T>, stop: () => void): Promise<T> {
    let stopped = false;
    // Once: the entry's creation and its first write are two events, and a second Ctrl-C means "exit now".
    const watcher = watch(out, (_event, name) => {
      if (name !== entry || stopped) return;
      stopped = true;
      stop();
    });
    try {
      return await start();
    } finally {
      watcher.close();
    }
  }
  /** `dvault backup --out <out>` in a child, its output piped. */
  function spawnBackup(out: string) {
    const env = { PATH: process.env.PATH ?? "", HOME: "/nonexistent-home", LOG_LEVEL: "warn", REDIS_URL: h.redis.url, DVAULT_ENGINE: TEST_ENGINE, ...h.env };
    return spawn(process.execPath, [path.resolve("bin/dvault.js"), "backup", "--out", out], { env, stdio: ["ignore", "pipe", "pipe"] });
  }
  /** `dvault backup --out <out>` (an empty folder) in a child, sent `signal` once its marker appears there. */
  async function backupStoppedBy(out: string, signal: NodeJS.Signals) {
    await fs.mkdir(out);
    const child = spawnBackup(out);
    return stoppedAt(
      out,
      UNFINISHED,
      () => collectRun(child, Date.now()),
      () => child.kill(signal),
    );
  }

  it("a backup killed outright keeps its marker: restore says so, and the next backup into that folder clears it and writes it again", async () => {
    const out = path.join(base, "killed");
    const killed = await backupStoppedBy(out, "SIGKILL");
    expect(killed.code, "the backup ended before it could be killed").toBeNull();
    const left = await fs.readdir(out);
    expect(left).toContain(UNFINISHED);
    expect(left).not.toContain("manifest.json");

    const restore = await runDvault({ redis: h.redis, env: { ...h.env, DATABASE_URL: withDatabase(TEST_PG_URL, `${targetDb}_killed`) } }, [
      "restore",
      "--from",
      out,
    ]);
    expect(restore.code).toBe(1);
    expect(restore.stderr.trim().split("\n")).toEqual([
      `dvault: ${out} holds a backup that was stopped before its end (no readable manifest.json): restore an earlier one, or run dvault backup into it again`,
    ]);

    const again = await runDvault(h, ["backup", "--out", out]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr.trim().split("\n")).toEqual([`dvault: removed the unfinished backup a stopped run left in ${out}; writing it again`]);
    expect((await fs.readdir(out)).sort()).toEqual((await fs.readdir(good)).sort());
    expect((await readManifest(out)).archive.included).toBe(true);

    // The marker beside a file a backup does not write: the folder is someone's, and left as it is.
    const theirs = path.join(base, "theirs");
    await fs.mkdir(theirs);
    await fs.writeFile(path.join(theirs, UNFINISHED), "");
    await fs.writeFile(path.join(theirs, "notes.txt"), "mine");
    const refused = await runDvault(h, ["backup", "--out", theirs, "--no-archive"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`${theirs} is not empty: choose a new directory for the backup`);
    expect((await fs.readdir(theirs)).sort()).toEqual([UNFINISHED, "notes.txt"]);
  }, 90_000);

  it("a backup still being written is not cleared by a second run into its folder: refused, and the first ends whole", async () => {
    const out = path.join(base, "running");
    await fs.mkdir(out);
    // Paused once its database folder appears (its marker written before it), as a long copy of a large archive is
    // still running when a second run (a cron's, a person's) is pointed at the same folder.
    let paused!: () => void;
    const pausedNow = new Promise<void>((resolve) => {
      paused = resolve;
    });
    const first = spawnBackup(out);
    const done = stoppedAt(
      out,
      "database",
      () => collectRun(first, Date.now()),
      () => {
        first.kill("SIGSTOP");
        paused();
      },
    );
    await pausedNow;
    try {
      const second = await runDvault(h, ["backup", "--out", out]);
      expect(second.code).toBe(1);
      expect(second.stderr.trim().split("\n")).toEqual([
        `dvault: ${out} holds a backup that another dvault process on this machine is still writing: wait for it to end, or choose another --out`,
      ]);
      expect(await fs.readdir(out)).toContain(UNFINISHED);
    } finally {
      first.kill("SIGCONT");
    }
    const ended = await done;
    expect(ended.code, ended.stderr).toBe(0);
    expect((await fs.readdir(out)).sort()).toEqual((await fs.readdir(good)).sort());
    expect((await readManifest(out)).archive.included).toBe(true);
  }, 90_000);

  it("Ctrl-C stops a backup: exit 130, one line, and what it wrote removed", async () => {
    const out = path.join(base, "interrupted");
    const run = await backupStoppedBy(out, "SIGINT");
    expect(run.code, run.stderr).toBe(130);
    expect(run.stderr.trim().split("\n")).toEqual(["dvault: backup stopped: the unfinished backup was removed; run it again"]);
    expect(await fs.readdir(out)).toEqual([]);
  }, 60_000);

  it("a stop during the archive's copy ends the backup there: no manifest, nothing left", async () => {
    const out = path.join(base, "stopped");
    await fs.mkdir(out);
    const stop = new AbortController();
    const run = stoppedAt(
      out,
      "archive",
      () => createBackup({ config: testConfig(h.env), out, version: "test", signal: stop.signal }),
      () => stop.abort(),
    );
    await expect(run).rejects.toThrow();
    expect(stop.signal.aborted).toBe(true);
    expect(await fs.readdir(out)).toEqual([]);
  }, 60_000);

  itNeedingPgDump(
    "writes format 1 with --pg-dump, and restore takes it",
    async () => {
      const dumped = path.join(base, "cli-dump");
      const madeDump = await runDvault(h, ["backup", "--out", dumped, "--no-archive", "--pg-dump"]);
      expect(madeDump.stdout).toMatch(/^ {2}database: \d+(\.\d)? (B|KiB|MiB|GiB), \d+ migrations \(pg_dump\)$/m);
      await restoresThroughCli(dumped, `${targetDb}_cli1`);
    },
    60_000,
  );
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
