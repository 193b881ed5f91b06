// `dvault import gallery-dl <dir>`: adopts a gallery-dl download folder into the archive. Each file is tied to
// its deviation (sidecar, name, archive key and title), the deviations the mirror does not know are looked up
// in the cheapest listings, each file is told original or rendition without /deviation/download, and then
// copied (or hard-linked) under its content address and recorded. The user's files are only ever read; a
// re-run adds nothing; what cannot be matched is reported with the reason, never dropped silently.
import fs from "node:fs/promises";
import path from "node:path";
import { GalleryDlArchiveRepository } from "../../db/gallery-dl-archive.repository.ts";
import { ImportedFileRepository, type ImportCandidate } from "../../db/imported-file.repository.ts";
import { noUserAccountNamed, UserError } from "../../errors.ts";
import type { Services } from "../../services.ts";
import { formatBytes } from "../../text/bytes.ts";
import { adoptAll } from "./adopt.ts";
import { parseArchiveKey, type ArchiveKey } from "./archive-keys.ts";
import { classifyFile } from "./classify.ts";
import { extensionOf, nameFacts, pathFacts, titleKey } from "./file-identity.ts";
import { indexOfUrl, resolveThroughListings, type ListingWant } from "./resolve-listings.ts";
import { readSidecar, SIDECAR_MAX_BYTES } from "./sidecar.ts";
import { UNMATCHED, type ImportOptions, type ImportReport, type Planned, type Scanned } from "./types.ts";
import { walkFolder, type FolderEntry } from "./walk.ts";

export async function importGalleryDl(opts: ImportOptions): Promise<ImportReport> {
  const started = Date.now();
  const { services } = opts;
  const root = path.resolve(opts.dir);
  const st = await fs.stat(root).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new UserError(`${opts.dir} is not a folder: give gallery-dl's download folder (the one holding deviantart/), or a user folder inside it`);
  }
  const archiveAbs = opts.archiveFile === undefined ? undefined : path.resolve(opts.archiveFile);
  const keys = archiveAbs === undefined ? undefined : await readArchiveKeys(archiveAbs, opts.signal);
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
  const scanned = await scan({ root, archiveAbs, report, unmatched, onProgress: opts.onProgress, signal: opts.signal });
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

async function readArchiveKeys(file: string, signal: AbortSignal | undefined): Promise<ArchiveKey[]> {
  const archive = await GalleryDlArchiveRepository.open(file, signal);
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
  unmatched: (s: { entry: FolderEntry }, reason: string, detail?: string) => void;
  onProgress: ImportOptions["onProgress"];
  signal: AbortSignal | undefined;
}): Promise<Scanned[]> {
  const { signal } = args;
  const entries: FolderEntry[] = [];
  for await (const e of walkFolder(args.root, signal)) if (e.abs !== args.archiveAbs) entries.push(e);
  const files = new Set(entries.filter((e) => e.kind === "file").map((e) => e.abs));
  const out: Scanned[] = [];
  for (const entry of entries) {
    signal?.throwIfAborted();
    const sidecar = entry.kind === "file" && entry.abs.endsWith(".json") && files.has(entry.abs.slice(0, -5));
    if (sidecar && entry.size <= SIDECAR_MAX_BYTES) {
      args.report.sidecars++;
      continue;
    }
    args.report.filesSeen++;
    if (sidecar) args.unmatched({ entry }, UNMATCHED.sidecarNotRead, `larger than ${formatBytes(SIDECAR_MAX_BYTES)}`);
    else if (entry.kind === "symlink") args.unmatched({ entry }, UNMATCHED.symlink);
    else if (entry.kind === "unreachable") unreachable(entry, args.unmatched);
    else if (entry.kind !== "file") args.unmatched({ entry }, UNMATCHED.notFile);
    else if (entry.abs.endsWith(".part")) args.unmatched({ entry }, UNMATCHED.partial);
    else if (entry.size === 0) args.unmatched({ entry }, UNMATCHED.empty);
    else if (entry.abs.endsWith(".json") && (await looksLikeSidecar(entry.abs, signal))) args.unmatched({ entry }, UNMATCHED.orphanSidecar);
    else {
      const base = path.basename(entry.abs);
      const sidecar = await readSidecar(entry.abs, signal);
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

async function looksLikeSidecar(file: string, signal: AbortSignal | undefined): Promise<boolean> {
  return (await readSidecar(file.slice(0, -5), signal)) !== undefined;
}

/** An entry the walk could not reach: past the system's path limit, or refused by its permissions. */
function unreachable(entry: FolderEntry, unmatched: (s: { entry: FolderEntry }, reason: string, detail?: string) => void): void {
  const what = entry.folder ? "a folder: none of its files were read" : undefined;
  if (entry.code === "ENAMETOOLONG") unmatched({ entry }, UNMATCHED.tooDeep, what);
  else if (entry.code === "EILSEQ") unmatched({ entry }, UNMATCHED.badName, what);
  else unmatched({ entry }, UNMATCHED.unreadable, what ? `${entry.code}; ${what}` : entry.code);
}

// ---- resolving ------------------------------------------------------------------------------------------

type Resolution = { match(s: Scanned): { deviation: ImportCandidate; how: string } | { reason: string; detail?: string } };

type AccountRef = { id: number; name: string };

async function pickAccount(services: Services, name: string | undefined): Promise<AccountRef | undefined> {
  const accounts = await services.accounts.list();
  const users = accounts.filter((a) => a.kind === "user");
  if (name !== undefined) {
    const hit = users.find((a) => a.name === name);
    if (!hit) throw noUserAccountNamed(name, accounts);
    return { id: hit.id, name: hit.name };
  }
  if (users.length > 1) throw new UserError(`${users.length} accounts are logged in: pick the one whose token looks deviations up with --account <name>`);
  const only = users[0];
  return only ? { id: only.id, name: only.name } : undefined;
}

async function resolve(args: {
  opts: ImportOptions;
  repo: ImportedFileRepository;
  scanned: Scanned[];
  keys: ArchiveKey[];
  account: AccountRef | undefined;
  report: ImportReport;
}): Promise<Resolution> {
  const { opts, repo, scanned, keys, account, report } = args;
  // Files named by neither sidecar nor index: the archive's entries of the same user and extension, matched by title.
  // An entry whose index another file's name or sidecar already gives is that file's, not this one's.
  const claimed = new Set(scanned.flatMap((s) => (s.index === null ? [] : [s.index])));
  const keysByOwner = new Map<string, ArchiveKey[]>();
  for (const k of keys) if (k.owner && !claimed.has(k.index)) keysByOwner.set(k.owner, [...(keysByOwner.get(k.owner) ?? []), k]);
  const titleCandidates = (s: Scanned): number[] =>
    s.deviationid === null && s.index === null && s.where.username
      ? (keysByOwner.get(s.where.username.toLowerCase()) ?? [])
          .filter((k) => k.extension === s.ext || (k.extension === "jpeg" && s.ext === "jpg"))
          .map((k) => k.index)
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
    report.listings = await resolveThroughListings({
      client: api.client,
      pool: opts.services.pool,
      wants: [...wants.values()],
      now: () => new Date(opts.services.now()),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    report.apiCalls += callCount(api.transport.stats.calls) - before;
    learn(await repo.findImportCandidates({ indexes: asked, deviationids: [...wantedIds].filter((id) => !byId.has(id)) }));
  }
  const problems = new Map(report.listings.filter((l) => l.problem).map((l) => [`${l.listing}:${l.username.toLowerCase()}`, l.problem as string]));

  return {
    match(s) {
      const hit = (s.deviationid ? byId.get(s.deviationid) : undefined) ?? (s.index !== null ? byIndex.get(s.index) : undefined);
      if (hit)
        return {
          deviation: hit,
          how:
            s.deviationid && byId.has(s.deviationid)
              ? "the sidecar's deviationid"
              : s.sidecar?.index !== undefined
                ? "the sidecar's index"
                : `the index in its name (${s.name.via})`,
        };
      const byTitle = matchByTitle(s, titleCandidates(s), byIndex);
      if (byTitle) return { deviation: byTitle, how: "an archive entry of its folder's user whose title its name carries" };
      if (s.deviationid === null && s.index === null) {
        // Named by title only: the archive's entries of its folder's user are the candidates.
        if (titleCandidates(s).length === 0) return { reason: UNMATCHED.noId };
        if (!account && titleCandidates(s).some((i) => !byIndex.has(i))) return { reason: UNMATCHED.noAccount };
        return {
          reason: UNMATCHED.noId,
          detail: `none of the ${titleCandidates(s).length} archive entries of ${s.where.username} with its extension has its title`,
        };
      }
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
  const hits = indexes
    .map((i) => byIndex.get(i))
    .filter((c): c is ImportCandidate => c !== undefined && c.title !== null && titleKey(c.title).length > 0 && stem.includes(titleKey(c.title)));
  // Only an unambiguous title: two works with the same title cannot be told apart by it.
  return hits.length === 1 ? hits[0] : undefined;
}

function callCount(calls: Record<string, Record<string, number>>): number {
  return Object.values(calls).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
}
