// What a source hands the folder walk (folder-walk.ts) and what it gets back: where the walk's state is
// kept, which walk to make, and what the walk found (a sweep's witnesses, gaps, parts the service removed).
import type { SyncRepos } from "../repos.ts";
import type { FolderState } from "./folder-spec.ts";

export type FolderSyncIO = {
  state: FolderState;
  /** Writes the source's whole cursor with this state in it (inside the caller's transaction). */
  save(repos: SyncRepos, state: FolderState, withKnown: boolean): Promise<void>;
};

export type FolderSyncOptions = {
  full: boolean;
  /** Check the newest pages of the "all" view before deciding which folders to open. */
  newestCheck: boolean;
  /** Open every folder (with early stop) even where the size did not change. */
  forceAll?: boolean;
  /**
   * Skip the folder list when the newest check found nothing new (a tracked user whose profile counts
   * did not change): the quiet run costs the newest page only.
   */
  foldersOnlyIfNew?: boolean;
  /**
   * The owner's profile count of what this source lists (a gallery's user_deviations, the favourites'
   * user_favourites), read by whoever owns the profile: when it drops, an incremental run finds out which
   * works went (freshness.ts). Undefined or null: not known.
   */
  profileCount?: number | null;
  /**
   * Leave the walk's last metadata batch of fewer than 50 ids (and texts under their batch) pending, committed
   * in the state, for the caller to fetch with its other walks' (tracked.ts: an artist's gallery and
   * favourites are often a few works each, and a call for a few ids would be spent on each).
   */
  keepPendingTail?: boolean;
};

export type FolderSyncResult = {
  /** Every folder was walked to its end (a sweep; the first run is one). */
  sweep: boolean;
  /** The sweep went on from an interrupted one: what it saw before the interruption is not in `seen`. */
  resumed: boolean;
  truncated: boolean;
  /** Distinct live deviations listed in this run by any witness (complete only on a sweep that was not resumed). */
  seen: number;
  /** On a sweep: the live deviations the "all" view listed, and whether it was walked to its end (null when it is gone). */
  all: { listed: number; complete: boolean } | null;
  /** Folders whose listing stopped at the offset ceiling: members past it are unreachable, in words. */
  folderIssues: string[];
  /** Optional parts whose endpoint the service removed (the walk went on without them). */
  gone: string[];
  /** Works that may be gone upstream but could not be asked about yet (vanished.ts), and why: asked again next run. */
  unsettled: { count: number; cause?: string };
  /** The freshness check of an incremental run (freshness.ts): why it ran, how many works it asked about, how many were gone. */
  checked?: { reasons: string[]; asked: number; gone: number };
};
