// Text PostgreSQL cannot hold (NUL, lone UTF-16 surrogates) in the service's answers: the gallery and
// collections sources still finish ok through the real pipeline, and the names are mirrored with U+FFFD
// (docs/schema.md#text-from-the-service); every way a write reaches PostgreSQL (pool, transaction, Prisma,
// connectPg, jsonb) stores such text the same way.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AccountRepository } from "../../src/db/account.repository.ts";
import { connectPg } from "../../src/db/connect.ts";
import { StaticDataRepository } from "../../src/db/static-data.repository.ts";
import { storableJson, StorableTextClient } from "../../src/db/storable-text.ts";
import { SyncStateRepository } from "../../src/db/sync-state.repository.ts";
import { withTransaction } from "../../src/db/with-transaction.ts";
import type { SimCollectionFolder, SimDeviation, SimGalleryFolder } from "../../src/simulator/dataset.ts";
import { collectionsSource } from "../../src/sync/sources/collections.ts";
import { gallerySource } from "../../src/sync/sources/gallery.ts";
import { createSyncHarness, type SyncHarness } from "../helpers/sync-harness.ts";

const NUL = "\u0000";
const HIGH = "\ud800";
const LOW = "\udfff";
const R = "\ufffd";

let h: SyncHarness;

// A fresh account per test: the second writes a source's state that the first's list of sources would show.
beforeEach(async () => {
  h = await createSyncHarness({
    sim: { dataset: { deviations: 40, galleryFolders: 3, favourites: 20, collectionFolders: 3 } },
    sources: [gallerySource, collectionsSource],
  });
});
afterEach(async () => {
  await h?.close();
});

/** The ground truth is read-only to tests; no simulator activity renames a folder, so the names are set here, before any sync. */
function ownGalleryFolder(): SimGalleryFolder {
  const folder = h.sim.truth.galleryFolders.find((f) => f.ownerId === h.sim.truth.ownerId && f.deviationIds.some((id) => !dev(id).isDeleted));
  if (!folder) throw new Error("the dataset has no gallery folder with a live deviation");
  return folder as SimGalleryFolder;
}

function ownCollectionFolder(): SimCollectionFolder {
  const folder = h.sim.truth.collectionFolders.find((f) => f.ownerId === h.sim.truth.ownerId && f.deviationIds.length > 0);
  if (!folder) throw new Error("the dataset has no collection folder with a favourite");
  return folder as SimCollectionFolder;
}

function dev(id: string): SimDeviation {
  return h.sim.truth.deviations.get(id) as SimDeviation;
}

describe(StorableTextClient.name, () => {
  it("lets a source finish ok when folder names, a title and a description hold NUL and lone surrogates, mirroring them with U+FFFD", async () => {
    const gallery = ownGalleryFolder();
    gallery.name = `Gal${NUL}lery ${HIGH}one`;
    gallery.description = `desc ${LOW} and ${NUL}`;
    const collection = ownCollectionFolder();
    collection.name = `Fav${NUL}s ${LOW}${HIGH} end${HIGH}`;
    const d = dev(gallery.deviationIds.find((id) => !dev(id).isDeleted) as string);
    h.sim.activity({ kind: "edit_title", deviationid: d.deviationid, title: `Ti${NUL}tle ${HIGH}x 😀` });
    h.sim.activity({ kind: "edit_description", deviationid: d.deviationid, description: `<p>${NUL}body ${LOW}</p>` });

    h.sim.clock.advance(60_000);
    const galleryRun = await h.runSource("gallery");
    expect(galleryRun.status).toBe("ok");
    h.sim.clock.advance(60_000);
    const collectionsRun = await h.runSource("collections");
    expect(collectionsRun.status).toBe("ok");

    const { rows: galleryRows } = await h.pool.query("SELECT name, description, raw->>'name' AS raw_name FROM gallery_folders WHERE folderid = $1", [
      gallery.folderid,
    ]);
    expect(galleryRows).toEqual([{ name: `Gal${R}lery ${R}one`, description: `desc ${R} and ${R}`, raw_name: `Gal${R}lery ${R}one` }]);
    const { rows: collectionRows } = await h.pool.query("SELECT name, raw->>'name' AS raw_name FROM collection_folders WHERE folderid = $1", [
      collection.folderid,
    ]);
    expect(collectionRows).toEqual([{ name: `Fav${R}s ${R}${R} end${R}`, raw_name: `Fav${R}s ${R}${R} end${R}` }]);
    const { rows: devRows } = await h.pool.query(
      "SELECT d.title, d.raw->>'title' AS raw_title, m.description FROM deviations d JOIN deviation_metadata m USING (deviationid) WHERE deviationid = $1",
      [d.deviationid],
    );
    // The emoji is a valid surrogate pair and stays as it is.
    expect(devRows).toEqual([{ title: `Ti${R}tle ${R}x 😀`, raw_title: `Ti${R}tle ${R}x 😀`, description: `<p>${R}body ${R}</p>` }]);
    const { rows: sources } = await h.pool.query("SELECT source, last_result::text AS last_result FROM sync_sources ORDER BY source");
    expect(sources).toEqual([
      { source: "collections", last_result: "ok" },
      { source: "gallery", last_result: "ok" },
    ]);
  });

  it("stores such text the same way on every path a write takes: pool, transaction, the typed builder, connectPg, jsonb", async () => {
    const hostile = `a${NUL}b${HIGH}c${LOW}d 😀 \\u0000 kept`;
    const stored = `a${R}b${R}c${R}d 😀 \\u0000 kept`;
    const at = new Date("2025-06-01T00:00:00Z");

    // A plain text parameter through the pool (the policy texts).
    await new StaticDataRepository(h.pool).savePolicyText("tos", hostile, at);
    // jsonb through a transaction's client (a source's cursor and error), keys included.
    await withTransaction(h.pool, (tx) =>
      new SyncStateRepository(tx).saveSourceState(
        { accountId: h.account.id, source: "static", key: "" },
        { cursor: { [`k${NUL}`]: hostile }, lastError: hostile },
      ),
    );
    // The typed builder (the account repository), on the pool and inside a transaction.
    await new AccountRepository(h.pool).markNeedsReauth({ id: h.account.id, reason: hostile, now: at });
    await withTransaction(h.pool, (tx) => new AccountRepository(tx).saveIdentity(h.account.id, { userId: h.account.userId, username: hostile }));
    // A single connection (the CLI's).
    const client = await connectPg(h.db.url);
    try {
      await client.query("INSERT INTO policy_texts (kind, sha256, text, first_seen_at, fetched_at) VALUES ('privacy', 'x', $1, $2, $2)", [hostile, at]);
      await client.query("INSERT INTO policy_texts (kind, sha256, text, first_seen_at, fetched_at) VALUES ('submission', 'y', $1::jsonb->>'t', $2, $2)", [
        storableJson({ t: hostile }),
        at,
      ]);
    } finally {
      await client.end();
    }

    const { rows: policies } = await h.pool.query("SELECT kind::text AS kind, text FROM policy_texts ORDER BY kind");
    expect(policies).toEqual(["privacy", "submission", "tos"].map((kind) => ({ kind, text: stored })).sort((a, b) => a.kind.localeCompare(b.kind)));
    const { rows: state } = await h.pool.query("SELECT cursor, last_error FROM sync_sources WHERE source = 'static'");
    expect(state).toEqual([{ cursor: { [`k${R}`]: stored }, last_error: stored }]);
    const { rows: account } = await h.pool.query("SELECT state_reason, username FROM accounts WHERE id = $1", [h.account.id]);
    expect(account).toEqual([{ state_reason: stored, username: stored }]);
  });
});
