// Journal and literature pages stored before pages were made inert (src/text/inert-html.ts) rewritten once: the
// page is taken apart, its body sanitized, and stored at its new content address; the row follows (path, sha256,
// size, a download_history line), the old file goes when nothing else references it, and the readable links are
// marked due so the tree points at the new file. A page whose bytes no longer match its row is left for `dvault
// verify`, never laundered into a fresh hash. The worker's maintenance role runs it a slice at a time until it has
// gone through every page once (inertTextsStep, from the downloads.enqueue job); `dvault verify --fix` runs it whole.
import { createHash } from "node:crypto";
import { StoredTextRepository } from "../db/stored-text.repository.ts";
import { originalKeyOf } from "../storage/links.ts";
import { ARCHIVE_PAGE_HEAD, inertStoredPage } from "../text/inert-html.ts";
import { afterStore, removeIfUnreferenced } from "./after-store.ts";
import type { DownloadDeps } from "./deps.ts";

export type InertTextsResult = {
  /** Stored pages looked at. */
  checked: number;
  /** Rewritten inert (with `dryRun`: that would be). */
  rewritten: number;
  /** Left as they are, with why: missing, or bytes that no longer match the row (dvault verify reports both). */
  skipped: { path: string; reason: string }[];
  /** The last row looked at, and whether rows are left after it (the budget or the signal ended the run). */
  lastId: string;
  more: boolean;
};

const PAGE = 200;
const NOTE = "made inert: the service's HTML sanitized, scripts and handlers dropped (the database keeps it as sent)";

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

export async function makeStoredTextsInert(args: {
  deps: DownloadDeps;
  afterId?: string;
  budgetMs?: number;
  signal?: AbortSignal;
  /** Count what would be rewritten, and write nothing (`dvault verify` without --fix). */
  dryRun?: boolean;
}): Promise<InertTextsResult> {
  const { deps } = args;
  const { archive, services } = deps;
  const texts = new StoredTextRepository(services.pool);
  const started = Date.now();
  const result: InertTextsResult = { checked: 0, rewritten: 0, skipped: [], lastId: args.afterId ?? "0", more: false };
  for (;;) {
    const rows = await texts.listStoredTexts({ afterId: result.lastId, limit: PAGE });
    for (const row of rows) {
      if (args.signal?.aborted || (args.budgetMs !== undefined && Date.now() - started >= args.budgetMs)) return { ...result, more: true };
      result.lastId = row.id;
      result.checked++;
      const key = originalKeyOf(row.path, archive.root);
      const bytes = key ? await archive.blobs.read(key) : undefined;
      if (!bytes) {
        result.skipped.push({ path: row.path, reason: "missing" });
        continue;
      }
      if (row.sha256 !== null && sha256(bytes) !== row.sha256) {
        result.skipped.push({ path: row.path, reason: "its bytes no longer match its sha256" });
        continue;
      }
      const page = inertStoredPage(bytes.toString("utf8"), row.title);
      if (page === undefined) continue;
      if (args.dryRun) {
        result.rewritten++;
        continue;
      }
      const next = Buffer.from(page, "utf8");
      await deps.guard.check(next.length);
      const stored = await archive.storeBytes({ bytes: next, ext: "html" });
      const replaced = await texts.replaceStoredText({
        id: row.id,
        oldPath: row.path,
        oldSha256: row.sha256,
        path: stored.relPath,
        sha256: stored.sha256,
        size: stored.size,
        note: NOTE,
        at: new Date(services.now()),
      });
      if (replaced) {
        result.rewritten++;
        await afterStore(deps, row.path, stored.relPath);
      } else if (!stored.deduplicated) {
        // A download stored another page meanwhile: the file written here is nobody's.
        await removeIfUnreferenced({ repo: deps.repo, archive, oldPath: stored.relPath, newPath: row.path });
      }
    }
    if (rows.length < PAGE) return result;
  }
}

/** The pages of this version: a new CSP or page head makes every page due once more. */
const VERSION = createHash("sha256").update(ARCHIVE_PAGE_HEAD).digest("hex").slice(0, 12);

/** The once-only rewrite's progress marker in the coordination store ("<version>:after:<id>" or "<version>:done"). */
export function inertTextsKey(prefix: string): string {
  return `${prefix}:texts:inert`;
}

/**
 * One slice of the once-only rewrite for the worker: goes on after the row the last slice reached, for at most
 * `budgetMs`, and once it has been through every page it is done for this version (a lost store only means one more
 * pass that finds every page inert). Undefined when there was nothing left to do.
 */
export async function inertTextsStep(deps: DownloadDeps, opts: { budgetMs: number; signal?: AbortSignal }): Promise<InertTextsResult | undefined> {
  const { coord, config } = deps.services;
  const key = inertTextsKey(config.redisPrefix);
  const state = (await coord.get(key)) ?? "";
  if (state === `${VERSION}:done`) return undefined;
  const afterId = state.startsWith(`${VERSION}:after:`) ? state.slice(`${VERSION}:after:`.length) : "0";
  const result = await makeStoredTextsInert({ deps, afterId, budgetMs: opts.budgetMs, ...(opts.signal ? { signal: opts.signal } : {}) });
  await coord.put(key, result.more ? `${VERSION}:after:${result.lastId}` : `${VERSION}:done`);
  return result;
}
