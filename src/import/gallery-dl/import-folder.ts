// `dvault import gallery-dl <dir>`: adopts a gallery-dl download folder into the archive. Each file is tied to
// its deviation (sidecar, name, archive key and title), the deviations the mirror does not know are looked up
// in the cheapest listings, each file is told original or rendition without /deviation/download, and then
// copied (or hard-linked) under its content address and recorded. The user's files are only ever read; a
// re-run adds nothing; what cannot be matched is reported with the reason, never dropped silently.
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { DownloadRepository, type DownloadStatus } from "../../db/download.repository.ts";
import { GalleryDlArchiveRepository } from "../../db/gallery-dl-archive.repository.ts";
import { ImportedFileRepository, type DownloadState, type ImportCandidate, type RowFill } from "../../db/imported-file.repository.ts";
import { downloadLockKey, linksDirtyKey } from "../../downloads/download-file.ts";
import { UserError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { acquireLock } from "../../queue/lock.ts";
import type { Services } from "../../services.ts";
import { Archive, ContentMismatchError, extensionFor } from "../../storage/archive.ts";
import { parseArchiveKey, type ArchiveKey } from "./archive-keys.ts";
import { classifyFile } from "./classify.ts";
import { extensionOf, nameFacts, pathFacts, titleKey, type NameFacts, type PathFacts } from "./file-identity.ts";
import { indexOfUrl, resolveThroughListings, type ListingOutcome, type ListingWant } from "./resolve-listings.ts";
import { readSidecar, type Sidecar } from "./sidecar.ts";
import { walkFolder, type FolderEntry } from "./walk.ts";

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
  empty: "an empty file",
  orphanSidecar: "a metadata file whose file is not there",
  textPage: "a journal or literature page: dvault keeps the text itself",
  changed: "it changed while it was read: run the import again",
  unreadable: "it cannot be read (see the error): fix its permissions and run the import again",
  busy: "being downloaded by dvault right now: run the import again afterwards",
} as const;

type Scanned = { entry: FolderEntry; where: PathFacts; name: NameFacts; ext: string; sidecar: Sidecar | undefined; deviationid: string | null; index: number | null };
type Matched = Scanned & { deviation: ImportCandidate; how: string };
type Planned = Matched & { role: "original" | "rendition" | "extra_image"; rendition: string | null; evidence: string };

const DEFAULT_CONCURRENCY = 4;
const LOCK_TTL_MS = 60_000;

export async function importGalleryDl(opts: ImportOptions): Promise<ImportReport> {
  const started = Date.now();
  const { services } = opts;
  const root = path.resolve(opts.dir);
  const st = await fs.stat(root).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new UserError(`${opts.dir} is not a folder: give gallery-dl's download folder (the one holding deviantart/), or a user folder inside it`);
  }
  const archiveAbs = opts.archiveFile === undefined ? undefined : path.resolve(opts.archiveFile);
  const keys = archiveAbs === undefined ? undefined : await readArchiveKeys(archiveAbs);
  const account = await pickAccount(services, opts.account);
  const report: ImportReport = {
    dir: root,
    account: account?.name ?? null,
    filesSeen: 0,
    sidecars: 0,
    archiveEntries: keys?.length ?? null,
    originals: 0,
    renditions: 0,
    extraImages: 0,
    duplicates: 0,
    unmatched: [],
    unmatchedByReason: {},
    quotaSaved: 0,
    bytesCopied: 0,
    bytesLinked: 0,
    apiCalls: 0,
    listings: [],
    durationMs: 0,
    phasesMs: { scan: 0, resolve: 0, adopt: 0 },
  };
  const unmatched = (s: { entry: FolderEntry }, reason: string, detail?: string) => {
    report.unmatched.push({ file: s.entry.rel, reason, ...(detail ? { detail } : {}) });
    report.unmatchedByReason[reason] = (report.unmatchedByReason[reason] ?? 0) + 1;
  };

  let mark = Date.now();
  const lap = (phase: keyof ImportReport["phasesMs"]) => {
    report.phasesMs[phase] = Date.now() - mark;
    mark = Date.now();
  };
  const scanned = await scan({ root, archiveAbs, report, unmatched, onProgress: opts.onProgress });
  lap("scan");
  const repo = new ImportedFileRepository(services.pool);
  opts.onProgress?.({ phase: "resolving", done: 0, total: scanned.length, bytes: 0 });
  const resolved = await resolve({ opts, repo, scanned, keys: keys ?? [], account, report });
  const planned: Planned[] = [];
  for (const s of scanned) {
    const match = resolved.match(s);
    if ("reason" in match) {
      unmatched(s, match.reason, match.detail);
      continue;
    }
    const c = classifyFile({ size: s.entry.size, ext: s.ext, name: s.name, sidecar: s.sidecar, deviation: match.deviation });
    if (c.role === "skip") unmatched(s, UNMATCHED.textPage, c.reason);
    else planned.push({ ...s, ...match, role: c.role, rendition: c.rendition, evidence: `${match.how}; ${c.evidence}` });
  }

  lap("resolve");
  await adoptAll({ opts, repo, planned, report, unmatched });
  lap("adopt");
  report.durationMs = Date.now() - started;
  return report;
}

// ---- scanning -------------------------------------------------------------------------------------------

async function readArchiveKeys(file: string): Promise<ArchiveKey[]> {
  const archive = await GalleryDlArchiveRepository.open(file);
  try {
    return archive.listEntries().flatMap((e) => parseArchiveKey(e) ?? []);
  } finally {
    archive.close();
  }
}

async function scan(args: {
  root: string;
  archiveAbs: string | undefined;
  report: ImportReport;
  unmatched: (s: { entry: FolderEntry }, reason: string) => void;
  onProgress: ImportOptions["onProgress"];
}): Promise<Scanned[]> {
  const entries: FolderEntry[] = [];
  for await (const e of walkFolder(args.root)) if (e.abs !== args.archiveAbs) entries.push(e);
  const files = new Set(entries.filter((e) => e.kind === "file").map((e) => e.abs));
  const out: Scanned[] = [];
  for (const entry of entries) {
    if (entry.kind === "file" && entry.abs.endsWith(".json") && files.has(entry.abs.slice(0, -5))) {
      args.report.sidecars++;
      continue;
    }
    args.report.filesSeen++;
    if (entry.kind === "symlink") args.unmatched({ entry }, UNMATCHED.symlink);
    else if (entry.kind !== "file") args.unmatched({ entry }, UNMATCHED.notFile);
    else if (entry.abs.endsWith(".part")) args.unmatched({ entry }, UNMATCHED.partial);
    else if (entry.size === 0) args.unmatched({ entry }, UNMATCHED.empty);
    else if (entry.abs.endsWith(".json") && (await looksLikeSidecar(entry.abs))) args.unmatched({ entry }, UNMATCHED.orphanSidecar);
    else {
      const base = path.basename(entry.abs);
      const sidecar = await readSidecar(entry.abs);
      const name = nameFacts(base);
      out.push({
        entry,
        where: pathFacts(entry.abs),
        name,
        ext: extensionOf(base),
        sidecar,
        deviationid: sidecar?.deviationid ?? null,
        index: sidecar?.index ?? name.index,
      });
    }
    if (args.report.filesSeen % 500 === 0) args.onProgress?.({ phase: "scanning", done: args.report.filesSeen, total: 0, bytes: 0 });
  }
  return out;
}

async function looksLikeSidecar(file: string): Promise<boolean> {
  return (await readSidecar(file.slice(0, -5)).catch(() => undefined)) !== undefined;
}

// ---- resolving ------------------------------------------------------------------------------------------

type Resolution = { match(s: Scanned): { deviation: ImportCandidate; how: string } | { reason: string; detail?: string } };

type AccountRef = { id: number; name: string };

async function pickAccount(services: Services, name: string | undefined): Promise<AccountRef | undefined> {
  const users = (await services.accounts.list()).filter((a) => a.kind === "user");
  if (name !== undefined) {
    const hit = users.find((a) => a.name === name);
    if (!hit) throw new UserError(`no account named ${name}: dvault auth status lists them`);
    return { id: hit.id, name: hit.name };
  }
  if (users.length > 1) throw new UserError(`${users.length} accounts are logged in: pick the one whose token looks deviations up with --account <name>`);
  const only = users[0];
  return only ? { id: only.id, name: only.name } : undefined;
}

async function resolve(args: { opts: ImportOptions; repo: ImportedFileRepository; scanned: Scanned[]; keys: ArchiveKey[]; account: AccountRef | undefined; report: ImportReport }): Promise<Resolution> {
  const { opts, repo, scanned, keys, account, report } = args;
  // Files named by neither sidecar nor index: the archive's entries of the same user and extension, matched by title.
  // An entry whose index another file's name or sidecar already gives is that file's, not this one's.
  const claimed = new Set(scanned.flatMap((s) => (s.index === null ? [] : [s.index])));
  const keysByOwner = new Map<string, ArchiveKey[]>();
  for (const k of keys) if (k.owner && !claimed.has(k.index)) keysByOwner.set(k.owner, [...(keysByOwner.get(k.owner) ?? []), k]);
  const titleCandidates = (s: Scanned): number[] =>
    s.deviationid === null && s.index === null && s.where.username
      ? (keysByOwner.get(s.where.username.toLowerCase()) ?? []).filter((k) => k.extension === s.ext || (k.extension === "jpeg" && s.ext === "jpg")).map((k) => k.index)
      : [];

  const wantedIndexes = new Set<number>();
  const wantedIds = new Set<string>();
  for (const s of scanned) {
    if (s.deviationid) wantedIds.add(s.deviationid);
    if (s.index !== null) wantedIndexes.add(s.index);
    for (const i of titleCandidates(s)) wantedIndexes.add(i);
  }
  const byIndex = new Map<number, ImportCandidate>();
  const byId = new Map<string, ImportCandidate>();
  const learn = (found: ImportCandidate[]) => {
    for (const c of found) {
      byId.set(c.deviationid, c);
      if (c.index !== null) byIndex.set(c.index, c);
    }
  };
  learn(await repo.findImportCandidates({ indexes: [...wantedIndexes], deviationids: [...wantedIds] }));

  // What the mirror lacks, from the listings of the folders' owners: one walk per (user, listing).
  const wants = new Map<string, ListingWant>();
  const want = (username: string, listing: ListingWant["listing"], index: number) => {
    const key = `${listing}:${username.toLowerCase()}`;
    const w = wants.get(key) ?? { username, listing, indexes: new Set<number>() };
    w.indexes.add(index);
    wants.set(key, w);
  };
  for (const s of scanned) {
    if (!s.where.username || (s.deviationid && byId.has(s.deviationid))) continue;
    const listing = s.where.section === "favourites" ? "favourites" : "gallery";
    const sidecarIndex = s.index ?? indexOfUrl(s.sidecar?.url);
    if (sidecarIndex !== null && !byIndex.has(sidecarIndex)) want(s.where.username, listing, sidecarIndex);
    for (const i of titleCandidates(s)) if (!byIndex.has(i)) want(s.where.username, listing, i);
  }
  if (account && wants.size > 0 && !opts.signal?.aborted) {
    const asked = [...wants.values()].flatMap((w) => [...w.indexes]);
    const api = await opts.services.apiFor(account.id);
    const before = callCount(api.transport.stats.calls);
    report.listings = await resolveThroughListings({ client: api.client, pool: opts.services.pool, wants: [...wants.values()], now: () => new Date(opts.services.now()), ...(opts.signal ? { signal: opts.signal } : {}) });
    report.apiCalls += callCount(api.transport.stats.calls) - before;
    learn(await repo.findImportCandidates({ indexes: asked, deviationids: [...wantedIds].filter((id) => !byId.has(id)) }));
  }
  const problems = new Map(report.listings.filter((l) => l.problem).map((l) => [`${l.listing}:${l.username.toLowerCase()}`, l.problem as string]));

  return {
    match(s) {
      const hit = (s.deviationid ? byId.get(s.deviationid) : undefined) ?? (s.index !== null ? byIndex.get(s.index) : undefined);
      if (hit) return { deviation: hit, how: s.deviationid && byId.has(s.deviationid) ? "the sidecar's deviationid" : s.sidecar?.index !== undefined ? "the sidecar's index" : `the index in its name (${s.name.via})` };
      const byTitle = matchByTitle(s, titleCandidates(s), byIndex);
      if (byTitle) return { deviation: byTitle, how: "an archive entry of its folder's user whose title its name carries" };
      if (s.deviationid === null && s.index === null) return { reason: UNMATCHED.noId };
      const listing = s.where.section === "favourites" ? "favourites" : "gallery";
      const problem = s.where.username ? problems.get(`${listing}:${s.where.username.toLowerCase()}`) : undefined;
      if (problem) return { reason: UNMATCHED.listingRefused, detail: problem };
      if (!account) return { reason: UNMATCHED.noAccount };
      const asked = s.where.username ? `${s.where.username}'s ${listing}` : "no listing (the file is in no deviantart/<user>/ folder)";
      return { reason: UNMATCHED.unknown, detail: `${s.deviationid ?? `index ${s.index}`}: the mirror and ${asked} do not have it` };
    },
  };
}

function matchByTitle(s: Scanned, indexes: number[], byIndex: Map<number, ImportCandidate>): ImportCandidate | undefined {
  const stem = titleKey(path.basename(s.entry.abs, path.extname(s.entry.abs)));
  const hits = indexes.map((i) => byIndex.get(i)).filter((c): c is ImportCandidate => c !== undefined && c.title !== null && titleKey(c.title).length > 0 && stem.includes(titleKey(c.title)));
  // Only an unambiguous title: two works with the same title cannot be told apart by it.
  return hits.length === 1 ? hits[0] : undefined;
}

function callCount(calls: Record<string, Record<string, number>>): number {
  return Object.values(calls).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
}

// ---- adopting -------------------------------------------------------------------------------------------

const ROLE_ORDER = { original: 0, rendition: 1, extra_image: 2 } as const;

async function adoptAll(args: {
  opts: ImportOptions;
  repo: ImportedFileRepository;
  planned: Planned[];
  report: ImportReport;
  unmatched: (s: { entry: FolderEntry }, reason: string, detail?: string) => void;
}): Promise<void> {
  const { opts, repo, planned, report } = args;
  const { services } = opts;
  const archive = opts.archive ?? new Archive({ root: services.config.archiveDir, minFreeBytes: services.config.minFreeBytes });
  const targets = await repo.findImportTargets([...new Set(planned.map((p) => p.deviation.deviationid))]);
  const rows = new Map<string, DownloadState>(targets.rows.filter((r) => r.kind === "original").map((r) => [r.deviationid, r]));
  const known = new Set([...targets.imported.map((i) => `${i.deviationid}:${i.sha256}`), ...targets.rows.filter((r) => r.sha256).map((r) => `${r.deviationid}:${r.sha256}`)]);
  // Per deviation, originals first: a rendition then never takes the row an original of the same run fills.
  const groups = new Map<string, Planned[]>();
  for (const p of planned) groups.set(p.deviation.deviationid, [...(groups.get(p.deviation.deviationid) ?? []), p]);
  for (const g of groups.values()) g.sort((a, b) => ROLE_ORDER[a.role] - ROLE_ORDER[b.role] || a.entry.rel.localeCompare(b.entry.rel));
  const downloads = new DownloadRepository(services.pool);
  let done = 0;
  let bytes = 0;
  let filled = 0;
  const adoptOne = async (p: Planned): Promise<void> => {
    const id = p.deviation.deviationid;
    let hashed;
    try {
      hashed = await hashUnchanged(p.entry.abs);
    } catch (err) {
      // Gone since the walk, or not readable by this user: listed, and the rest goes on.
      const code = (err as { code?: string }).code;
      if (code === undefined) throw err;
      return args.unmatched(p, code === "ENOENT" ? UNMATCHED.changed : UNMATCHED.unreadable, code);
    }
    if (!hashed) return args.unmatched(p, UNMATCHED.changed);
    if (known.has(`${id}:${hashed.sha256}`)) {
      report.duplicates++;
      return;
    }
    known.add(`${id}:${hashed.sha256}`);
    const row = rows.get(id);
    const fill = rowFill(p, row, new Date(services.now()));
    // A row the downloader might be working on is filled only under its download lock.
    const lock = fill && row ? await acquireLock(services.redis, downloadLockKey(services.config.redisPrefix, id, "original"), LOCK_TTL_MS) : undefined;
    if (fill && row && !lock) return args.unmatched(p, UNMATCHED.busy);
    try {
      let stored;
      try {
        stored = await archive.adoptFile({
          from: p.entry.abs,
          ext: extensionFor({ filename: path.basename(p.entry.abs) }),
          expected: hashed,
          link: opts.link,
        });
      } catch (err) {
        if (err instanceof ContentMismatchError) return args.unmatched(p, UNMATCHED.changed);
        throw err;
      }
      const at = new Date(services.now());
      const result = await repo.adoptImportedFile(
        { deviationid: id, role: p.role, rendition: p.rendition, path: stored.relPath, sha256: stored.sha256, size: stored.size, sourcePath: p.entry.abs, linked: stored.linked, evidence: p.evidence, at },
        fill,
      );
      if (!result.recorded) {
        report.duplicates++;
        return;
      }
      if (!stored.deduplicated) {
        if (stored.linked) report.bytesLinked += stored.size;
        else report.bytesCopied += stored.size;
      }
      if (p.role === "original") report.originals++;
      else if (p.role === "rendition") report.renditions++;
      else report.extraImages++;
      if (result.filled) {
        filled++;
        const hadOriginal = result.old?.status === "done" && result.old.rendition === "original";
        if (p.role === "original" && !hadOriginal && p.deviation.isDownloadable !== false) report.quotaSaved++;
        rows.set(id, { deviationid: id, kind: "original", status: fill?.status ?? "done", rendition: p.rendition ?? "original", path: stored.relPath, sha256: stored.sha256 });
        await removeIfUnreferenced(downloads, archive, result.old?.path ?? null, stored.relPath);
      }
    } finally {
      await lock?.release();
    }
  };
  const queue = [...groups.values()];
  const worker = async () => {
    for (let g = queue.shift(); g; g = queue.shift()) {
      for (const p of g) {
        opts.signal?.throwIfAborted();
        await adoptOne(p);
        done++;
        bytes += p.entry.size;
        opts.onProgress?.({ phase: "importing", done, total: planned.length, bytes });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? DEFAULT_CONCURRENCY) }, worker));
  // The readable tree (by-user/…) is rebuilt by the next download run or the worker.
  if (filled > 0) await services.redis.set(linksDirtyKey(services.config.redisPrefix), "1");
}

/** How a file fills its deviation's downloads row, or null when it is kept beside the row. */
function rowFill(p: Planned, row: DownloadState | undefined, now: Date): RowFill | null {
  const note = `imported from ${p.entry.abs}`;
  const base = { sourceFilename: path.basename(p.entry.abs), note };
  const partial = p.deviation.isMultiMedia ? "multi-image post: the API gives the first image only" : null;
  if (p.role === "original") {
    if (row?.status === "done" && row.rendition === "original") return null;
    return { ...base, status: "done", degradedReason: null, nextAttemptAt: null, isPartial: partial !== null, partialReason: partial };
  }
  if (p.role !== "rendition" || row?.path) return null;
  const offered = p.deviation.isDownloadable !== false;
  const status: DownloadStatus & RowFill["status"] = offered ? "degraded" : "not_downloadable";
  const reason = offered
    ? `imported from a gallery-dl folder: a rendition (${p.rendition ?? "unknown"}), not the original; the original is wanted when the weekly allowance allows`
    : "the artist does not offer the original for download (is_downloadable is false)";
  return { ...base, status, degradedReason: reason, nextAttemptAt: offered ? now : null, isPartial: partial !== null, partialReason: partial };
}

/** sha256, size and identity of a file, or undefined when it changed while it was read (size or time moved). */
async function hashUnchanged(abs: string): Promise<{ sha256: string; size: number; ino: number; mtimeMs: number } | undefined> {
  const before = await fs.stat(abs);
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(abs, { highWaterMark: 1024 * 1024 })) {
    size += (chunk as Buffer).length;
    hash.update(chunk as Buffer);
  }
  const after = await fs.stat(abs);
  if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || size !== before.size) return undefined;
  return { sha256: hash.digest("hex"), size, ino: after.ino, mtimeMs: after.mtimeMs };
}

/** A file the row no longer points at, that nothing else references, is removed (as a download's upgrade does). */
async function removeIfUnreferenced(downloads: DownloadRepository, archive: Archive, oldPath: string | null, newPath: string): Promise<void> {
  if (!oldPath || oldPath === newPath) return;
  if ((await downloads.countPathReferences(oldPath)) === 0) await fs.rm(archive.resolveInside(oldPath), { force: true });
}
