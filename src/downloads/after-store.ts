// What follows a stored file (the replaced one removed, the readable links marked due) and a deviation found gone.
import type { DownloadRepository, DownloadTarget } from "../db/download.repository.ts";
import type { Archive } from "../storage/archive.ts";
import { originalKeyOf } from "../storage/links.ts";
import type { DownloadDeps } from "./deps.ts";
import type { DownloadOutcome } from "./outcome.ts";

/** Set when a stored file changed; the links job rebuilds the readable tree when it finds it (readable-links.ts). */
export function linksDirtyKey(prefix: string): string {
  return `${prefix}:downloads:links-dirty`;
}

/**
 * A file a row no longer points at, that nothing else references, is removed from the blob store (a download's
 * upgrade, an import's better file). Only objects under originals/ are ever removed.
 */
export async function removeIfUnreferenced(args: {
  repo: Pick<DownloadRepository, "countPathReferences">;
  archive: Archive;
  oldPath: string | null;
  newPath: string;
}): Promise<void> {
  const { repo, archive, oldPath, newPath } = args;
  if (!oldPath || oldPath === newPath) return;
  const key = originalKeyOf(oldPath, archive.root);
  if (key && (await repo.countPathReferences(oldPath)) === 0) await archive.blobs.remove(key);
}

/** A replaced file nobody references any more is removed; the readable links are due for a rebuild. */
export async function afterStore(deps: DownloadDeps, oldPath: string | null, newPath: string): Promise<void> {
  await removeIfUnreferenced({ repo: deps.repo, archive: deps.archive, oldPath, newPath });
  await deps.services.coord.put(linksDirtyKey(deps.services.config.redisPrefix), "1");
}

/** The deviation no longer exists on the service: recorded, never retried. */
export async function gone(deps: DownloadDeps, t: DownloadTarget): Promise<DownloadOutcome> {
  const reason = "deleted on the service (not found)";
  await deps.repo.markDownloadNotDownloadable({ id: t.id, reason, at: new Date(deps.services.now()) });
  return { status: "not_downloadable", reason, rendition: null, bytes: 0, partial: false };
}
