import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeviationRepository } from "../../src/db/deviation.repository.ts";
import { DownloadRepository } from "../../src/db/download.repository.ts";
import { FolderRepository } from "../../src/db/folder.repository.ts";
import { distinctUsers } from "../../src/db/mirror-rows.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { TrackedUserRepository } from "../../src/db/tracked-user.repository.ts";
import { UserRepository } from "../../src/db/user.repository.ts";
import { withTransaction, type Queryable } from "../../src/db/with-transaction.ts";
import {
  at,
  countingQueryable,
  createMirrorDb,
  insertAccount,
  makeDeviation,
  makeMetadata,
  makeUser,
  uuid,
  type MirrorDb,
} from "../helpers/mirror-fixtures.ts";

let m: MirrorDb;
let accountId: number;

/** The repositories a page handler uses, all on one Queryable. */
function repositories(db: Queryable) {
  return {
    users: new UserRepository(db),
    deviations: new DeviationRepository(db),
    folders: new FolderRepository(db),
    downloads: new DownloadRepository(db),
    syncState: new SyncStateRepository(db),
  };
}

beforeAll(async () => {
  m = await createMirrorDb();
  accountId = await insertAccount(m.pool, "me", uuid(9, "u"));
});
afterAll(async () => {
  await m?.drop();
});

const count = async (sql: string, params: unknown[] = []) => ((await m.pool.query(sql, params)).rows[0] as { n: number }).n;

describe(withTransaction.name, () => {
  it("commits a page and its cursor together", async () => {
    const ref = { accountId, source: "gallery", key: uuid(1, "g") };
    await withTransaction(m.pool, async (tx) => {
      const repos = repositories(tx);
      const devs = [makeDeviation({ n: 1 }), makeDeviation({ n: 2 })];
      await repos.users.upsertUsers(distinctUsers(devs.map((d) => d.author)), at("2025-01-01T00:00:00Z"));
      await repos.deviations.upsertDeviations(devs, at("2025-01-01T00:00:00Z"));
      await repos.syncState.saveSourceState(ref, { cursor: { offset: 24 } });
    });
    expect(await count("SELECT count(*)::int AS n FROM deviations WHERE deviationid = ANY($1)", [[uuid(1), uuid(2)]])).toBe(2);
    expect((await new SyncStateRepository(m.pool).getSourceState(ref))?.cursor).toEqual({ offset: 24 });
  });

  it("rolls back a page and its cursor together: neither is written", async () => {
    const ref = { accountId, source: "gallery", key: uuid(2, "g") };
    await expect(
      withTransaction(m.pool, async (tx) => {
        const repos = repositories(tx);
        await repos.deviations.upsertDeviations([makeDeviation({ n: 10 })], at("2025-01-01T00:00:00Z"));
        await repos.syncState.saveSourceState(ref, { cursor: { offset: 48 } });
        throw new Error("the worker died mid-page");
      }),
    ).rejects.toThrow("the worker died mid-page");
    expect(await count("SELECT count(*)::int AS n FROM deviations WHERE deviationid = $1", [uuid(10)])).toBe(0);
    expect(await new SyncStateRepository(m.pool).getSourceState(ref)).toBeNull();
    // The pool is still healthy afterwards.
    expect(await count("SELECT 1 AS n")).toBe(1);
  });

  it("concurrent pages sharing rows in opposite orders do not deadlock", async () => {
    const authors = Array.from({ length: 2000 }, (_, i) => makeUser(10_000 + i));
    const page = (users: typeof authors) =>
      withTransaction(m.pool, async (tx) => {
        await new UserRepository(tx).upsertUsers(users, at("2025-01-01T00:00:00Z"));
        await tx.query("SELECT pg_sleep(0.05)");
      });
    for (let round = 0; round < 3; round++) {
      await expect(Promise.all([page(authors), page([...authors].reverse())])).resolves.toBeDefined();
    }
  });

  it("writes a 50-row page with ONE statement per table", async () => {
    const seen = at("2025-02-01T00:00:00Z");
    const devs = Array.from({ length: 50 }, (_, i) => makeDeviation({ n: 1000 + i, author: 1 + (i % 7) }));
    const statements = await withTransaction(m.pool, async (tx) => {
      const counted = countingQueryable(tx);
      const repos = repositories(counted);
      await repos.users.upsertUsers(distinctUsers(devs.map((d) => d.author)), seen);
      expect(await repos.deviations.upsertDeviations(devs, seen)).toMatchObject({ inserted: 50 });
      expect(
        await repos.deviations.upsertMetadata(
          devs.map((_, i) => makeMetadata({ n: 1000 + i })),
          seen,
        ),
      ).toMatchObject({ inserted: 50 });
      expect(
        await repos.folders.upsertFolderMembership(
          "gallery",
          uuid(50, "g"),
          devs.map((d, i) => ({ deviationid: d.deviationid, position: i })),
          seen,
        ),
      ).toMatchObject({
        inserted: 50,
      });
      expect(
        await repos.downloads.markDownloadsWanted(
          devs.map((d) => ({ deviationid: d.deviationid, kind: "original" as const })),
          seen,
        ),
      ).toBe(50);
      await repos.syncState.saveSourceState({ accountId, source: "gallery", key: uuid(50, "g") }, { cursor: { offset: 50 } }, seen);
      return counted.statements;
    });
    expect(statements).toHaveLength(6);
    // The tables each statement writes: the page's table, plus history rows for edits in the same statement.
    const written = statements.map((sql) => [...sql.matchAll(/INSERT INTO (\w+)/g)].map((hit) => hit[1]));
    expect(written).toEqual([
      ["user_history", "users"],
      ["deviation_history", "deviations"],
      ["deviation_history", "deviation_metadata"],
      ["folder_members"],
      ["downloads"],
      ["sync_sources"],
    ]);
    expect(await count("SELECT count(*)::int AS n FROM folder_members WHERE folderid = $1", [uuid(50, "g")])).toBe(50);
  });
});

describe(SyncStateRepository.name, () => {
  it("saves only the fields of a patch and reads them back", async () => {
    const sync = new SyncStateRepository(m.pool);
    const ref = { accountId, source: "notes" };
    expect(await sync.getSourceState(ref)).toBeNull();
    await sync.saveSourceState(ref, { sweepStartedAt: at("2025-03-01T00:00:00Z"), cursor: { folder: "1", offset: 24 } }, at("2025-03-01T00:00:00Z"));
    await sync.saveSourceState(
      ref,
      {
        cursor: null,
        lastRunAt: at("2025-03-01T00:05:00Z"),
        lastResult: "ok",
        lastCompleteSweepAt: at("2025-03-01T00:00:00Z"),
        nextRunAt: at("2025-03-01T00:15:00Z"),
        counters: { new: 3, changed: 1, removed: 0, apiCalls: 7, paced: 5, throttled: 1, durationMs: 4200 },
      },
      at("2025-03-01T00:05:00Z"),
    );
    const state = await sync.getSourceState(ref);
    expect(state).toEqual({
      accountId,
      source: "notes",
      key: "",
      cursor: null,
      sweepStartedAt: at("2025-03-01T00:00:00Z"),
      lastRunAt: at("2025-03-01T00:05:00Z"),
      lastResult: "ok",
      lastError: null,
      unavailableReason: null,
      lastCompleteSweepAt: at("2025-03-01T00:00:00Z"),
      nextRunAt: at("2025-03-01T00:15:00Z"),
      counters: { new: 3, changed: 1, removed: 0, apiCalls: 7, paced: 5, throttled: 1, durationMs: 4200 },
      gaps: {},
      updatedAt: at("2025-03-01T00:05:00Z"),
    });
    await sync.saveSourceState({ accountId, source: "feed" }, { lastResult: "degraded", unavailableReason: "endpoint removed (404 Api endpoint not found.)" });
    expect((await sync.listSourceStates(accountId)).map((s) => [s.source, s.lastResult, s.unavailableReason])).toEqual(
      expect.arrayContaining([
        ["feed", "degraded", "endpoint removed (404 Api endpoint not found.)"],
        ["notes", "ok", null],
      ]),
    );
  });

  it("records and clears gaps by scope", async () => {
    const sync = new SyncStateRepository(m.pool);
    const ref = { accountId, source: "gallery", key: uuid(60, "g") };
    await sync.recordGap(ref, uuid(60, "g"), { expected: 12500, mirrored: 10000, reason: "offset ceiling" }, at("2025-03-02T00:00:00Z"));
    await sync.recordGap(ref, "profile-stats", { expected: 12600, mirrored: 12500, reason: "profile counts 12600 deviations" }, at("2025-03-02T00:00:00Z"));
    await sync.recordGap(ref, uuid(60, "g"), { expected: 12510, mirrored: 10000, reason: "offset ceiling" }, at("2025-03-03T00:00:00Z"));
    expect((await sync.getSourceState(ref))?.gaps).toEqual({
      [uuid(60, "g")]: { expected: 12510, mirrored: 10000, reason: "offset ceiling", recordedAt: "2025-03-03T00:00:00.000Z" },
      "profile-stats": { expected: 12600, mirrored: 12500, reason: "profile counts 12600 deviations", recordedAt: "2025-03-02T00:00:00.000Z" },
    });
    await sync.clearGap(ref, "profile-stats");
    expect(Object.keys((await sync.getSourceState(ref))?.gaps ?? {})).toEqual([uuid(60, "g")]);
  });
});

describe(TrackedUserRepository.name, () => {
  it("adds, lists and removes tracked users, case-insensitively", async () => {
    const tracked = new TrackedUserRepository(m.pool);
    await tracked.addTrackedUser({ accountId, username: "SomeArtist", tokenKind: "user", at: at("2025-01-01T00:00:00Z") });
    const again = await tracked.addTrackedUser({
      accountId,
      username: "someartist",
      userid: uuid(70, "u"),
      tokenKind: "client",
      limitation: "client token: mature deviations are hidden",
      at: at("2025-01-02T00:00:00Z"),
    });
    expect(again).toMatchObject({ username: "someartist", userid: uuid(70, "u"), tokenKind: "client", addedAt: at("2025-01-01T00:00:00Z"), removedAt: null });
    await tracked.addTrackedUser({ accountId, username: "another", tokenKind: "user", at: at("2025-01-03T00:00:00Z") });
    expect((await tracked.listTrackedUsers(accountId)).map((t) => t.username)).toEqual(["another", "someartist"]);

    expect(await tracked.removeTrackedUser(accountId, "SOMEARTIST", at("2025-02-01T00:00:00Z"))).toBe(true);
    expect(await tracked.removeTrackedUser(accountId, "someartist", at("2025-02-02T00:00:00Z"))).toBe(false);
    expect((await tracked.listTrackedUsers(accountId)).map((t) => t.username)).toEqual(["another"]);
    expect((await tracked.listTrackedUsers(accountId, { includeRemoved: true })).map((t) => [t.username, t.removedAt])).toEqual([
      ["another", null],
      ["someartist", at("2025-02-01T00:00:00Z")],
    ]);
    // Tracking again starts anew.
    expect(await tracked.addTrackedUser({ accountId, username: "SomeArtist", tokenKind: "user", at: at("2025-03-01T00:00:00Z") })).toMatchObject({
      addedAt: at("2025-03-01T00:00:00Z"),
      removedAt: null,
    });
  });
});

describe(DownloadRepository.name, () => {
  it("inserts wanted rows once and never touches a row the download worker moved on", async () => {
    const downloads = new DownloadRepository(m.pool);
    await repositories(m.pool).deviations.upsertDeviations([makeDeviation({ n: 2000 }), makeDeviation({ n: 2001 })], at("2025-01-01T00:00:00Z"));
    expect(
      await downloads.markDownloadsWanted([
        { deviationid: uuid(2000), kind: "original", priority: 5, reason: "own gallery" },
        { deviationid: uuid(2000), kind: "original" },
        { deviationid: uuid(2001), kind: "text" },
      ]),
    ).toBe(2);
    // A finished row, as the download worker leaves it (a stored row always has its path and hash).
    await m.pool.query(
      "UPDATE downloads SET status = 'done', done_at = now(), path = 'originals/aa/bb/x.png', sha256 = repeat('a', 64), size = 1 WHERE deviationid = $1",
      [uuid(2000)],
    );
    expect(
      await downloads.markDownloadsWanted([
        { deviationid: uuid(2000), kind: "original" },
        { deviationid: uuid(2000), kind: "degraded" },
      ]),
    ).toBe(1);
    const { rows } = await m.pool.query("SELECT kind, status, priority, reason FROM downloads WHERE deviationid = $1 ORDER BY kind", [uuid(2000)]);
    expect(rows).toEqual([
      { kind: "original", status: "done", priority: 5, reason: "own gallery" },
      { kind: "degraded", status: "wanted", priority: 0, reason: null },
    ]);
  });
});
