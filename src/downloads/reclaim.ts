// Work held by a dead process comes back soon, never twice (docs/RELIABILITY.md#work-held-by-a-dead-process).
// One pass, run by the worker at start and every few seconds and by `dvault download --once` at start:
// for every holder proven dead (src/queue/holder.ts),
//   - a downloads job it had active goes back to wait at once. BullMQ's own stalled check would take
//     30–60 s, and only sees a lock that lapsed, which a slow or cut-off worker's lock also does;
//   - rows it had claimed outside the queue (a `--once` run) go back to wanted, for the caller to hand out;
//   - then it is forgotten.
// (An active job of a live worker that never reached it is the worker's own to find: worker-host.ts.)
// What it was downloading is not fetched twice: its per-file lock is broken by the next taker
// (download-file.ts), which resumes the partial file with the signed URL the dead process paid for
// (paid-downloads.ts) and never calls /deviation/download again for it.
import type { DownloadKind } from "../db/download.repository.ts";
import type { Logger } from "../log.ts";
import { forgetHolder, heldItemsKey, isHolderDead, registeredHolders, thisHolder } from "../queue/holder.ts";
import type { ActiveJobs } from "../queue/requeue.ts";
import type { DownloadDeps } from "./deps.ts";

export type ReclaimResult = { holders: string[]; jobs: number; rows: number };

/** How `--once` names a row it holds: the downloads job id's parts (one row per deviation and kind). */
export function heldRowItem(row: { deviationid: string; kind: string }): string {
  return `${row.deviationid}:${row.kind}`;
}

/** `downloadsJobs`: the downloads queue's active jobs (QueueAdmin.active), read before the holders are judged. */
export async function reclaimDeadHolders(args: { deps: DownloadDeps; log: Logger; downloadsJobs?: ActiveJobs }): Promise<ReclaimResult> {
  const { coord, config } = args.deps.services;
  const prefix = config.redisPrefix;
  const holders = new Set([...(await registeredHolders(coord, prefix)), ...(args.downloadsJobs?.holders ?? [])]);
  const result: ReclaimResult = { holders: [], jobs: 0, rows: 0 };
  for (const holder of holders) {
    if (holder === thisHolder() || !(await isHolderDead(coord, prefix, holder))) continue;
    result.holders.push(holder);
    const jobs = (await args.downloadsJobs?.requeueOf(holder)) ?? 0;
    const rows = await releaseRows(args.deps, holder);
    await forgetHolder(coord, prefix, holder);
    result.jobs += jobs;
    result.rows += rows;
    args.log.warn({ holder, jobs, rows }, "took back the downloads of a process that died");
  }
  return result;
}

/** Rows a dead `--once` run had claimed and not finished go back to wanted. */
async function releaseRows(deps: DownloadDeps, holder: string): Promise<number> {
  const { coord, config } = deps.services;
  let released = 0;
  for (const item of await coord.setMembers(heldItemsKey(config.redisPrefix, holder))) {
    const cut = item.lastIndexOf(":");
    const kind = item.slice(cut + 1) as DownloadKind;
    if (cut <= 0 || !["original", "text", "degraded"].includes(kind)) continue;
    const row = await deps.repo.findDownloadTarget(item.slice(0, cut), kind);
    if (!row || row.status === "done" || row.status === "not_downloadable" || row.status === "failed") continue;
    await deps.repo.releaseDownload(row.id, new Date(deps.services.now()));
    released++;
  }
  return released;
}
