// The shapes `dvault import gallery-dl` passes between its steps (scan, resolve, adopt) and the report it ends with.
import type { ImportCandidate } from "../../db/imported-file.repository.ts";
import type { Logger } from "../../log.ts";
import type { Services } from "../../services.ts";
import type { Archive } from "../../storage/archive.ts";
import type { NameFacts, PathFacts } from "./file-identity.ts";
import type { ListingOutcome } from "./resolve-listings.ts";
import type { Sidecar } from "./sidecar.ts";
import type { FolderEntry } from "./walk.ts";

export type ImportProgress = { phase: "scanning" | "resolving" | "importing"; done: number; total: number; bytes: number };

export type ImportOptions = {
  services: Services;
  dir: string;
  /** gallery-dl's archive file (SQLite), a hint for files whose names carry no index. */
  archiveFile?: string | undefined;
  /** The account whose token asks the listings (default: the only user account). */
  account?: string | undefined;
  /** Hard-link into the archive instead of copying, where the filesystem allows. */
  link: boolean;
  log: Logger;
  signal?: AbortSignal | undefined;
  onProgress?: ((p: ImportProgress) => void) | undefined;
  /** Files hashed and stored at once (default 4). */
  concurrency?: number | undefined;
  /** The archive to write to (default: DVAULT_ARCHIVE_DIR with its configured free-space floor). */
  archive?: Archive | undefined;
};

export type UnmatchedFile = { file: string; reason: string; detail?: string };

export type ImportReport = {
  dir: string;
  account: string | null;
  filesSeen: number;
  sidecars: number;
  archiveEntries: number | null;
  /** Adopted as originals: the files of their deviations' downloads rows, or kept beside one already there. */
  originals: number;
  /** Adopted as renditions: stand-ins until the original comes, or kept beside it. */
  renditions: number;
  /** Further images of multi-image posts, which the API never gives. */
  extraImages: number;
  /** Files whose bytes the archive already held for their deviation (a re-run, or the same file twice). */
  duplicates: number;
  unmatched: UnmatchedFile[];
  unmatchedByReason: Record<string, number>;
  /** Originals that no longer need /deviation/download: one week's allowance each. */
  quotaSaved: number;
  bytesCopied: number;
  bytesLinked: number;
  /** Calls to the service (listings only: never /deviation/download). */
  apiCalls: number;
  listings: ListingOutcome[];
  durationMs: number;
  /** Where the time went: walking and reading sidecars, finding the deviations, storing the files. */
  phasesMs: { scan: number; resolve: number; adopt: number };
};

/** Unmatched reasons, as the report groups them. */
export const UNMATCHED = {
  noId: "no deviation id: no sidecar, no index in its name, no archive entry whose title it carries",
  unknown: "not in the mirror nor in the listings asked",
  noAccount: "not in the mirror, and no account is logged in to look it up (dvault auth login, then import again)",
  listingRefused: "its listing could not be read",
  partial: "an unfinished download (.part)",
  symlink: "a symbolic link (not followed)",
  notFile: "not a regular file",
  tooDeep: "its path is longer than the system allows (ENAMETOOLONG): move it nearer the folder's top and import again",
  badName: "its name is not UTF-8 text (shown with � where bytes are not): rename it and import again",
  sidecarNotRead: "a metadata file too large to be gallery-dl's: not read",
  empty: "an empty file",
  orphanSidecar: "a metadata file whose file is not there",
  textPage: "a journal or literature page: dvault keeps the text itself",
  changed: "it changed while it was read: run the import again",
  unreadable: "it cannot be read (see the error): fix its permissions and run the import again",
  busy: "being downloaded by dvault right now: run the import again afterwards",
  notTheWork: "its bytes do not look like its work (another format than its name says, a picture that does not decode, or not the work's proportions)",
  oversized: "larger than any file the service announces for its work",
} as const;

export type Scanned = {
  entry: FolderEntry;
  where: PathFacts;
  name: NameFacts;
  ext: string;
  sidecar: Sidecar | undefined;
  deviationid: string | null;
  index: number | null;
};
export type Matched = Scanned & { deviation: ImportCandidate; how: string };
export type Planned = Matched & { role: "original" | "rendition" | "extra_image"; rendition: string | null; evidence: string };
