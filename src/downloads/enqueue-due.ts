// Hands due rows of the downloads table to the downloads queue: what sync marked wanted, deferred or
// degraded rows whose quota window has come (their delayed jobs are promoted), and failed rows whose
// retry is due (src/downloads/retry.ts: their failed job is replaced by a new one). Every hour, and at worker
// start, it also re-adds the job of every row still marked queued: a lost queue is rebuilt from the table.
import { unusableAccount } from "../api/token-manager.ts";
import type { ClaimedDownload } from "../db/download.repository.ts";
import type { Services } from "../services.ts";
import { downloadDepsFor } from "./deps.ts";
import type { Producer } from "../queue/producer.ts";

export type EnqueueSummary = { claimed: number; added: number; promoted: number; rebuilt: boolean; checked: number };

/** Rows per claim: each claim ranks every due row, so fewer, larger claims for a big backlog. */
const BATCH = 5000;
const REBUILD_EVERY_S = 3600;

export async function enqueueDueDownloads(
  services: Services,
  producer: Producer,
  /** `only`: just these works' rows, claimed for this account (the dashboard's "Archive one work"); no rebuild. */
  opts: { rebuild?: boolean; only?: { accountId: number; deviationids: readonly string[] } } = {},
): Promise<EnqueueSummary> {
  const { repo } = downloadDepsFor(services);
  const classes = services.config.downloadPriority;
  const now = new Date(services.now());
  const summary: EnqueueSummary = { claimed: 0, added: 0, promoted: 0, rebuilt: false, checked: 0 };

  // A job parked until the quota window is promoted when the claim says the window has come.
  const ensure = async (row: ClaimedDownload, claimedNow: boolean) => {
    if (row.kind === "degraded") return;
    summary.checked++;
    const ranking = { rank: row.rank, publishedAt: row.publishedAt, now };
    const done = await producer.ensure("download.file", { deviationid: row.deviationid, kind: row.kind }, { promote: claimedNow, ranking });
    if (done === "added") summary.added++;
    if (done === "promoted") summary.promoted++;
  };

  // An account that must log in again claims nothing: its rows stay wanted instead of failing job by job.
  const key = services.installKey();
  const able = (await services.accounts.list()).filter((a) => a.kind === "user" && !unusableAccount(key, a));
  const accounts = able.filter((a) => !opts.only || a.id === opts.only.accountId);
  for (const account of accounts) {
    // Each account's own works are its own to pay for: another account's are left to it (claimDue's leaveTo).
    const leaveTo = able.filter((a) => a.id !== account.id).map((a) => a.id);
    for (;;) {
      const rows = await repo.claimDueDownloads({ accountId: account.id, now, classes, limit: BATCH, deviationids: opts.only?.deviationids, leaveTo });
      summary.claimed += rows.length;
      for (const row of rows) await ensure(row, true);
      if (rows.length < BATCH) break;
    }
  }

  if (opts.only) return summary;
  const rebuildKey = `${services.config.redisPrefix}:downloads:queue-rebuilt`;
  const every = { ttlMs: REBUILD_EVERY_S * 1000 };
  const rebuild = opts.rebuild === true || (await services.coord.putIfAbsent(rebuildKey, now.toISOString(), every));
  if (rebuild) {
    if (opts.rebuild) await services.coord.put(rebuildKey, now.toISOString(), every);
    summary.rebuilt = true;
    let afterId = "0";
    for (;;) {
      const rows = await repo.listQueuedDownloads({ classes, afterId, limit: BATCH });
      for (const row of rows) await ensure(row, false);
      const last = rows[rows.length - 1];
      if (!last || rows.length < BATCH) break;
      afterId = last.id;
    }
  }
  return summary;
}
