// The folder walk's plan (which folders a run opens, and how), where a member stands in its folder, and how
// a folder's walk is closed: its size remembered, its gap recorded or cleared
// (docs/service-behaviour.md#offset-ceiling), its departed members marked removed, or the walk stopped when
// the owner is gone. The walking itself is folder-walk.ts.
import { isMissing, userStateOf } from "../../api/errors.ts";
import { DEFAULT_OFFSET_CEILING } from "../../api/paginate.ts";
import type { FolderMemberInput } from "../../db/folder.repository.ts";
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
  // Walked to its end (or the ceiling) without knowing its size: its positions are counted from the end now.
  if (entry.size === null && (how.complete || how.truncated) && run.folderStartedAt) {
    await repos.folders.countPositionsFromEnd(kind, entry.folderid, mirrored, new Date(run.folderStartedAt));
  }
  // A folder walked to its end: members not seen since its walk began have left it (on an incremental
  // run, asked about at its end unless listed elsewhere: freshness.ts).
  if (how.complete && run.folderStartedAt) {
    const left = await repos.folders.markMissingMembersRemoved(kind, entry.folderid, new Date(run.folderStartedAt), ctx.now());
    if (!run.full && left.length > 0) run.departed = [...(run.departed ?? []), ...left];
  }
}

/**
 * A member's position: where it stands counted from the folder's end, negative, so `ORDER BY position`
 * reads the folder in the service's order (its first member has -size, its last -1; docs/schema.md). Counted
 * from the end because new works arrive at the top: an incremental walk that stops at the first unchanged
 * page then leaves every older member's number as it was, and "unchanged" can be told from the positions.
 * While the folder's size is unknown, the ordinal from the top stands in (≥ 0) until the walk reaches the
 * end, where closeFolder counts those from the end too.
 */
export function memberPosition(size: number | null, ordinal: number): number {
  return size === null ? ordinal : ordinal - size;
}

/**
 * An early-stopping walk ends at a page the mirror holds unchanged: everything below it kept its place
 * (positions count from the end), so the members above it that this walk did not meet have left the
 * folder; on an incremental run they are asked about at its end (freshness.ts). Unknown sizes give no such page.
 */
export async function passedMembersLeft(
  ctx: SourceContext,
  repos: SyncRepos,
  args: { kind: FolderKind; run: Run; entry: PlanEntry; page: readonly FolderMemberInput[] },
): Promise<void> {
  const { kind, run, entry, page } = args;
  const boundary = page[0]?.position;
  if (entry.size === null || boundary === undefined || !run.folderStartedAt) return;
  const left = await repos.folders.markPassedMembersRemoved(kind, entry.folderid, boundary, new Date(run.folderStartedAt), ctx.now());
  if (left.length > 0) run.departed = [...(run.departed ?? []), ...left];
}
