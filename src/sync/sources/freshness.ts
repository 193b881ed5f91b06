// How an incremental run of a folder source finds out which works went (issue 26, "Freshness"), from what
// it reads anyway. A folder whose size changed is walked from its top until a page the mirror already
// holds unchanged (positions count from the folder's end, so everything below a change keeps its number):
// the members above that page that the walk no longer met have left the folder. The "all" view's first
// page, read on every run, shows which of its earlier works left it. Those works, unless listed elsewhere
// in the run, are asked about (vanished.ts). Only where no listing can say which works went, because the
// owner's profile count dropped by more than the works that left account for, or a folder left the folder
// list, is every work of the source asked about through /deviation/metadata, 50 a call (folder-settle.ts).
// Pure functions; folder-walk.ts acts on them.
import type { AnyFolder } from "./folder-spec.ts";

/**
 * The works of the "all" view's earlier first page (`before`) that left it, seen from its first page now:
 * a work missing above one still listed went (the view is in time order, new works arrive at the top); one
 * missing at the end went too when nothing new arrived to push it down, or the view ends on this page.
 */
export function leftTheTop(page: readonly string[], before: readonly string[], opts: { fresh: number; ended: boolean }): string[] {
  const listed = new Set(page);
  let lastListed = -1;
  before.forEach((id, i) => {
    if (listed.has(id)) lastListed = i;
  });
  const pushedDownPossible = opts.fresh > 0 && !opts.ended;
  return before.filter((id, i) => !listed.has(id) && (i < lastListed || !pushedDownPossible));
}

/** Why every work of the source must be asked about: no listing can say which went. Empty: none. */
export function fullCheckReasons(input: {
  folders: readonly AnyFolder[];
  sizes: Readonly<Record<string, number>>;
  profileCount: number | null | undefined;
  lastProfileCount: number | null | undefined;
}): { reasons: string[]; profileDrop: number } {
  const reasons: string[] = [];
  const listed = new Set(input.folders.map((f) => f.folderid));
  for (const id of Object.keys(input.sizes)) if (!listed.has(id)) reasons.push(`folder ${id} left the folder list`);
  const { profileCount: now, lastProfileCount: last } = input;
  const profileDrop = typeof now === "number" && typeof last === "number" && now < last ? last - now : 0;
  return { reasons, profileDrop };
}
