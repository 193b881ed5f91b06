// What the downloads need beyond the shared services: the archive, their repositories, the quota budget
// and the disk guard — built once per Services (the worker, a CLI run, a test).
import { DownloadQuotaRepository } from "../db/download-quota.repository.ts";
import { DownloadRepository } from "../db/download.repository.ts";
import { thisWriterTag } from "../queue/holder.ts";
import type { AccountApi, Services } from "../services.ts";
import type { Archive } from "../storage/archive.ts";
import { openArchive } from "../storage/store.ts";
import { DiskGuard } from "./disk-guard.ts";
import { GroupCommit, type GroupCommitOptions } from "./group-commit.ts";
import { PlacedJournals } from "./placed-journal.ts";
import { DownloadQuota } from "./quota.ts";
import type { TransferLimits, TransferRetry, TransferTimeouts } from "./transfer.ts";

export type DownloadTuning = {
  retry?: Partial<TransferRetry>;
  timeouts?: Partial<TransferTimeouts>;
  /** Bounds of a transfer beyond the configuration's (tests shorten the floor's grace and window). */
  limits?: Partial<TransferLimits>;
  /** Per-deviation lock in the coordination store, renewed while held: frees itself within this long if its holder dies. */
  lockTtlMs?: number;
  /** Archive permissions (default owner-only). */
  fileMode?: number;
  dirMode?: number;
  /** How stored files are batched before their rows commit (group-commit.ts). */
  storeBatch?: Pick<GroupCommitOptions, "maxFiles" | "maxInFlight" | "beforeRowsCommit">;
};

export type DownloadDeps = {
  services: Services;
  archive: Archive;
  repo: DownloadRepository;
  quotaRepo: DownloadQuotaRepository;
  quota: DownloadQuota;
  guard: DiskGuard;
  /** Stored files made durable and their rows committed, batch by batch (group-commit.ts). */
  commits: GroupCommit;
  tuning: DownloadTuning;
  /** The account's API client, reused across downloads (its token stays cached in memory until stale). */
  apiFor(accountId: number): Promise<AccountApi>;
};

/** A cached client is rebuilt after this long, so an account's re-login is picked up. */
const API_CACHE_MS = 10 * 60_000;

const cache = new WeakMap<Services, DownloadDeps>();

export function downloadDepsFor(services: Services, tuning: DownloadTuning = {}): DownloadDeps {
  const known = cache.get(services);
  if (known) return known;
  const deps = createDownloadDeps(services, tuning);
  cache.set(services, deps);
  return deps;
}

/** Tests and the bench set their tuning before the worker's handlers first ask for the deps. */
export function setDownloadTuning(services: Services, tuning: DownloadTuning): DownloadDeps {
  const deps = createDownloadDeps(services, tuning);
  cache.set(services, deps);
  return deps;
}

function createDownloadDeps(services: Services, tuning: DownloadTuning): DownloadDeps {
  const { config, pool, coord, log } = services;
  const archive = openArchive(config, {
    writer: thisWriterTag(),
    ...(tuning.fileMode !== undefined ? { fileMode: tuning.fileMode } : {}),
    ...(tuning.dirMode !== undefined ? { dirMode: tuning.dirMode } : {}),
  });
  const quotaRepo = new DownloadQuotaRepository(pool);
  const repo = new DownloadRepository(pool);
  const apis = new Map<number, { at: number; api: Promise<AccountApi> }>();
  return {
    services,
    archive,
    repo,
    quotaRepo,
    quota: new DownloadQuota({ repo: quotaRepo, defaultAllowance: config.downloadQuota, now: services.now }),
    guard: new DiskGuard({ archive, coord, prefix: config.redisPrefix, minFreeBytes: config.minFreeBytes, log, now: services.now }),
    commits: new GroupCommit({ archive, repo, journal: new PlacedJournals(archive), ...tuning.storeBatch }),
    tuning,
    apiFor(accountId) {
      const hit = apis.get(accountId);
      if (hit && Date.now() - hit.at < API_CACHE_MS) return hit.api;
      const api = services.apiFor(accountId);
      apis.set(accountId, { at: Date.now(), api });
      api.catch(() => apis.delete(accountId));
      return api;
    },
  };
}
