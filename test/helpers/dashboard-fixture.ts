// An archive for the dashboard's browser tests and `npm run screenshots`: synced from the simulator (variance
// on, so folders nest), files written into the archive through the downloads table — originals, free
// renditions kept while the quota is spent (degraded) and renditions of works that are not downloadable —,
// downloads in other states, a failed job, and the dashboard with its "Sync now" / "Download now" actions.
import os from "node:os";
import { expect, vi } from "vitest";
import { JOB_DEFINITIONS, JOBS } from "../../jobs/index.ts";
import type { WorkerContext } from "../../jobs/context.ts";
import { type RunningDashboard, startDashboard } from "../../src/http/server.ts";
import { checkCatalogue } from "../../src/queue/job-definition.ts";
import { Producer } from "../../src/queue/producer.ts";
import { QueueAdmin } from "../../src/queue/queue-admin.ts";
import { WorkerHost } from "../../src/queue/worker-host.ts";
import { serviceWeekStart } from "../../src/status/collect.ts";
import { SOURCES } from "../../src/sync/sources/index.ts";
import type { SourceName } from "../../src/sync/source.ts";
import { enqueueSyncNow } from "../../src/sync/sync-now.ts";
import { archiveFile, artworkPng } from "./archive-fixtures.ts";
import { createSyncHarness, type SyncHarness } from "./sync-harness.ts";

export const NEW_TITLE = "Lantern Harbor at Dusk";
export const FAILING_JOB = "sync-broken-source";

export type DashboardFixture = {
  h: SyncHarness;
  admin: QueueAdmin;
  producer: Producer;
  item: { deviationid: string; tags: string[] };
  dash: RunningDashboard;
  /** A worker for the sync queue, as `dvault worker` runs it (on any host: it shares only Redis and PostgreSQL). */
  startSyncWorker(): WorkerHost<WorkerContext>;
  close(): Promise<void>;
};

const sourceMap = new Map(SOURCES.map((s) => [s.name, s]));

export async function createDashboardFixture(archiveDir: string): Promise<DashboardFixture> {
  const h = await createSyncHarness({
    sim: {
      seed: 11,
      variance: true,
      dataset: {
        deviations: 72,
        galleryFolders: 5,
        collectionFolders: 3,
        favourites: 24,
        notes: 24,
        messages: 30,
        trackedUsers: 2,
        trackedUserDeviations: 8,
        statuses: 4,
      },
    },
  });
  const prefix = h.services.config.redisPrefix;
  const admin = new QueueAdmin(h.services.queues);
  const producer = new Producer([...JOB_DEFINITIONS], h.services.queues);
  const sources: SourceName[] = ["profile", "gallery", "collections", "comments", "profile_posts", "notes", "messages"];
  for (const source of sources) await h.runSource(source);

  // The item of the story: the newest own image with tags and a description, edited upstream after the first sync.
  const { rows } = await h.pool.query<{ deviationid: string; tags: string[] }>(
    `SELECT d.deviationid, m.tags FROM deviations d JOIN deviation_metadata m ON m.deviationid = d.deviationid
     WHERE d.type = 'image' AND d.author_userid = $1 AND cardinality(m.tags) >= 2 AND m.description <> '' AND d.title !~ '[<"]'
     ORDER BY d.published_at DESC LIMIT 1`,
    [h.account.userId],
  );
  const item = rows[0]!;
  h.sim.activity({ kind: "edit_title", deviationid: item.deviationid, title: NEW_TITLE });
  h.sim.activity({
    kind: "edit_description",
    deviationid: item.deviationid,
    description: "<b>Harbor lights</b> at dusk, painted on location.<br />Prints on request.",
  });
  h.sim.clock.advance(3600_000);
  await h.runSource("gallery", { full: true });

  // Files in the archive for the newest images, as the downloads worker leaves them: originals, then a few kept
  // as free renditions (docs/service-behaviour.md#quota-weekly): the quota spent, or the work not downloadable.
  const images = await h.pool.query<{ deviationid: string }>(
    `SELECT deviationid FROM deviations WHERE type = 'image' AND removed_at IS NULL AND deviationid <> $1 ORDER BY published_at DESC NULLS LAST LIMIT 40`,
    [item.deviationid],
  );
  for (const [i, r] of images.rows.entries()) await archiveFile(h.pool, archiveDir, r.deviationid, artworkPng(i * 7 + 3));
  await archiveFile(h.pool, archiveDir, item.deviationid, artworkPng(4242, 720, 540));
  const renditions = images.rows.slice(2, 12).map((r) => r.deviationid);
  await h.pool.query(
    `UPDATE downloads SET status = 'degraded', rendition = 'content', degraded_reason = 'Free download limit reached.' WHERE deviationid = ANY($1::text[])`,
    [renditions.slice(0, 4)],
  );
  await h.pool.query(
    `UPDATE downloads SET status = 'not_downloadable', rendition = 'content', reason = 'the artist disabled downloads' WHERE deviationid = ANY($1::text[])`,
    [renditions.slice(4)],
  );

  // Downloads in other states, and the week's allowance partly used.
  await h.pool.query(
    `INSERT INTO downloads (deviationid, kind, status, reason)
     SELECT deviationid, 'original', 'wanted', 'favourite' FROM deviations d
     WHERE type = 'image' AND NOT EXISTS (SELECT 1 FROM downloads dl WHERE dl.deviationid = d.deviationid)
     ON CONFLICT DO NOTHING`,
  );
  await h.pool.query(`UPDATE downloads SET status = 'deferred_quota' WHERE id IN (SELECT id FROM downloads WHERE status = 'wanted' ORDER BY id LIMIT 4)`);
  const weekStart = serviceWeekStart(h.services.now()).toISOString().slice(0, 10);
  await h.pool.query(`INSERT INTO download_quota_usage (account_id, week_start, used) VALUES ($1, $2::date, 7) ON CONFLICT DO NOTHING`, [
    h.account.id,
    weekStart,
  ]);

  // A live worker heartbeat, and a job that fails in the real worker host (a payload the catalogue rejects).
  await h.services.coord.put(
    `${prefix}:heartbeat:${os.hostname()}:${process.pid}`,
    JSON.stringify({ id: `${os.hostname()}:${process.pid}`, at: new Date().toISOString() }),
    { ttlMs: 600_000 },
  );
  const startSyncWorker = () => {
    const host = new WorkerHost<WorkerContext>({
      entries: checkCatalogue<WorkerContext>(JOBS),
      backend: h.services.queues,
      log: h.services.log,
      queues: ["sync"],
      makeContext: (base) => ({ ...base, services: h.services, sources: sourceMap, producer, everyMs: {} }),
    });
    host.start();
    return host;
  };
  const host = startSyncWorker();
  await admin.queue("sync").add("sync.source", { accountId: h.account.id, source: "forums", key: "" }, { jobId: FAILING_JOB, attempts: 5 });
  await vi.waitFor(async () => expect(await admin.queue("sync").getJobState(FAILING_JOB), "the broken job's state").toBe("failed"), {
    timeout: 10_000,
    interval: 25,
  });
  // Stopped, so work queued later stays visible as waiting until a test starts a worker.
  await host.close();

  const actions = {
    syncNow: () => enqueueSyncNow({ services: h.services, producer, sources: sourceMap }),
    downloadNow: async () => ((await producer.enqueue("downloads.enqueue", { scope: "all" })) ? 1 : 0),
  };
  const dash = await startDashboard({ ...h.services, config: { ...h.services.config, archiveDir }, actions }, { port: 0 });
  return {
    h,
    admin,
    producer,
    item,
    dash,
    startSyncWorker,
    async close() {
      await dash.close();
      await producer.close();
      await admin.close();
      await h.close();
    },
  };
}
