// The folder walk's plan (which folders a run opens, and how) and how a folder's walk is closed: its size
// remembered, its gap recorded or cleared (docs/service-behaviour.md#offset-ceiling), its departed members
// marked removed, or the walk stopped when the owner is gone. The walking itself is folder-walk.ts.
import { isMissing, userStateOf } from "../../api/errors.ts";
import { DEFAULT_OFFSET_CEILING } from "../../api/paginate.ts";
import type { FolderKind } from "../../db/mirror-rows.ts";
import type { SyncRepos } from "../repos.ts";
import type { SourceContext } from "../source.ts";
import { PAGE_SIZE, type AnyFolder, type FolderSpec, type FolderState, type PlanEntry, type Run } from "./folder-spec.ts";
import { checkUser, UserUnavailableError } from "./user-state.ts";

/** A walk longer than this many pages gets a fresh token first. */
export const LONG_WALK_PAGES = 3;
/** The plan entry of the "all" view (no folder has this id). */
const ALL_ENTRY = "@all";

/**
 * The folders a run opens: on a full run (or a folder never walked) every one to its end; otherwise those
 * whose size changed or is unknown (every one with `forceAll`), each stopping at its first unchanged page.
 */
export function planFolders(
  folders: readonly AnyFolder[],
  sizes: Readonly<Record<string, number>>,
  { full, forceAll }: { full: boolean; forceAll: boolean },
): PlanEntry[] {
  const plan: PlanEntry[] = [];
  for (const f of folders) {
    const size = typeof f.size === "number" ? f.size : null;
    const entry = { folderid: f.folderid, name: f.name ?? null, size };
    const last = sizes[f.folderid];
    if (full || last === undefined) plan.push({ ...entry, early: false });
    else if (forceAll || size === null || last !== size) plan.push({ ...entry, early: true });
  }
  // A sweep also walks the "all" view: what sits in no folder is listed only there.
  if (full) plan.push({ folderid: ALL_ENTRY, name: "All", size: null, early: false, all: true });
  return plan;
}

/** Pages a planned walk will likely take: an early-stopping one usually ends after one or two. */
export function estimatedPages(entry: PlanEntry): number {
  if (entry.size === 0) return 0;
  const full = Math.ceil((entry.size ?? PAGE_SIZE) / PAGE_SIZE);
  return entry.early ? Math.min(2, full) : full;
}

export type FolderEnd = { complete: boolean; truncated: boolean; vanished: boolean };

/**
 * A folder page was refused for good. The codes a folder page answers with are the owner's
 * (docs/service-behaviour.md#user-error-codes), so the owner is asked: if they are unavailable the
 * whole walk stops with that (UserUnavailableError); otherwise the folder itself is gone (true).
 */
export async function folderRefused(ctx: SourceContext, owner: FolderSpec["owner"], err: unknown): Promise<boolean> {
  if (!isMissing(err, { refusalMeansMissing: true }) && userStateOf(err) === undefined) return false;
  const username = owner.username;
  if (!username) return true;
  const check = await checkUser(ctx.client, username);
  if (!check.available) throw new UserUnavailableError(username, check.state, owner.userid);
  return true;
}

/**
 * Closes a folder's walk inside the transaction of its last page: its size, its gap (past the offset
 * ceiling, or a count its listing did not reach) or the gap cleared, and members that left it.
 */
export async function closeFolder(
  ctx: SourceContext,
  repos: SyncRepos,
  args: { kind: FolderKind; st: FolderState; run: Run; entry: PlanEntry; how: FolderEnd },
): Promise<void> {
  const { kind, st, run, entry, how } = args;
  const mirrored = run.ordinal;
  const name = `${kind} folder "${entry.name ?? entry.folderid}"`;
  if (!how.vanished && entry.size !== null) st.sizes[entry.folderid] = entry.size;
  if (how.truncated) {
    run.truncated = true;
    const expected = entry.size;
    const unreachable = expected === null ? "some" : String(Math.max(0, expected - mirrored));
    (run.folderIssues ??= []).push(`${unreachable} of ${expected ?? "?"} deviations in ${name} are past the offset ceiling`);
    await repos.syncState.recordGap(
      ctx.ref,
      entry.folderid,
      {
        expected,
        mirrored,
        reason: `offset ceiling: the service stops paging at offset ${run.ceiling ?? DEFAULT_OFFSET_CEILING}; ${unreachable} of ${expected ?? "?"} deviations in ${name} are unreachable`,
      },
      ctx.now(),
    );
  } else if (how.complete && entry.size !== null && mirrored !== entry.size) {
    // Recorded, but not missing work: a folder's size also counts what its listing may not show
    // (deleted works, works of unavailable artists, mature ones for a public token).
    await repos.syncState.recordGap(
      ctx.ref,
      entry.folderid,
      {
        expected: entry.size,
        mirrored,
        reason: `count mismatch: ${name} says ${entry.size} deviations, its listing returned ${mirrored} (hidden, locked or deleted items)`,
      },
      ctx.now(),
    );
  } else if (how.complete && ctx.state?.gaps[entry.folderid]) {
    await repos.syncState.clearGap(ctx.ref, entry.folderid, ctx.now());
  }
  // A folder walked to its end: members not seen since its walk began have left it.
  if (how.complete && run.folderStartedAt) {
    await repos.folders.markMissingMembersRemoved(kind, entry.folderid, new Date(run.folderStartedAt), ctx.now());
  }
}
