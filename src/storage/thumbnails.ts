// Thumbnails of the archive's files: generated once per stored file and kept content-addressed beside the
// originals (thumbnails/ab/cd/<sha256>-<size>.<s|m>.webp), or, for a file that cannot be decoded, one
// placeholder tile (thumbnails/ab/cd/<sha256>-<size>.svg) so it is not tried again. Read and written through
// the BlobStore the originals are read through (blob-store.ts). A failure here never fails a download: callers
// on that path use ensure() through backfill(), which records and goes on.
import { ORIGINALS_DIR } from "./layout.ts";
import type { BlobInfo, BlobStore } from "./blob-store.ts";
import {
  firstLines,
  isReadableWebp,
  kindOfExtension,
  MAX_DECODE_BYTES,
  placeholderSvg,
  renderThumbnails,
  THUMB_VARIANTS,
  type ThumbVariant,
} from "./thumbnail-render.ts";

export const THUMBNAILS_DIR = "thumbnails";

export type ThumbVariantName = ThumbVariant;
export { THUMB_VARIANTS };

/** A stored original, as the blob store lists it. */
export type OriginalRef = { key: string; sha256: string; size: number; ext: string };

/** A thumbnail to serve: a WebP, or the placeholder SVG of a file that cannot be decoded. */
export type Thumb = { type: "webp" | "svg"; bytes: Buffer };

export type ThumbState = "present" | "placeholder" | "partial" | "none";
const NEEDS_MAKING: ReadonlySet<ThumbState> = new Set(["partial", "none"]);

/** present: made before (WebP or placeholder); generated: WebP made now; placeholder: placeholder made now. */
export type EnsureResult = "present" | "generated" | "placeholder";

const SHA256 = /^[0-9a-f]{64}$/;
const ORIGINAL_NAME = /^([0-9a-f]{64})\.([a-z0-9]{1,10})$/;

function shard(sha256: string): string {
  return `${sha256.slice(0, 2)}/${sha256.slice(2, 4)}`;
}

export function thumbKey(sha256: string, size: number, variant: ThumbVariant): string {
  return `${THUMBNAILS_DIR}/${shard(sha256)}/${sha256}-${size}.${variant}.webp`;
}

export function placeholderKey(sha256: string, size: number): string {
  return `${THUMBNAILS_DIR}/${shard(sha256)}/${sha256}-${size}.svg`;
}

export function isSha256(value: string): boolean {
  return SHA256.test(value);
}

/** The original behind a listed key, or undefined for anything else under originals/. */
export function originalOf(info: BlobInfo): OriginalRef | undefined {
  const m = ORIGINAL_NAME.exec(info.key.slice(info.key.lastIndexOf("/") + 1));
  if (!m?.[1] || !m[2] || !info.key.startsWith(`${ORIGINALS_DIR}/${shard(m[1])}/`)) return undefined;
  return { key: info.key, sha256: m[1], size: info.size, ext: m[2] };
}

export class Thumbnails {
  /** One generation per file at a time in this process (two requests for the same tile share it). */
  private readonly running = new Map<string, Promise<EnsureResult>>();
  /** Generations under way, and those waiting for a turn: a grid of 48 new tiles decodes a few at a time. */
  private active = 0;
  private readonly turns: Array<() => void> = [];

  constructor(
    readonly blobs: BlobStore,
    private readonly maxParallel = 2,
  ) {}

  /** The stored original with this sha256 (whatever its extension), if there is one. */
  async findOriginal(sha256: string): Promise<OriginalRef | undefined> {
    if (!isSha256(sha256)) return undefined;
    for await (const info of this.blobs.list(`${ORIGINALS_DIR}/${shard(sha256)}/${sha256}.`)) {
      const ref = originalOf(info);
      if (ref) return ref;
    }
    return undefined;
  }

  /** Every stored original, in key order. */
  async *originals(): AsyncIterable<OriginalRef> {
    for await (const info of this.blobs.list(`${ORIGINALS_DIR}/`)) {
      const ref = originalOf(info);
      if (ref) yield ref;
    }
  }

  /**
   * What is stored for `o`: both variants (present), the placeholder tile, part of the variants (partial: they were
   * made and a part is gone or empty), or nothing at all (none: never made, or every piece removed).
   */
  async state(o: OriginalRef): Promise<ThumbState> {
    const have = await Promise.all(THUMB_VARIANTS.map((v) => this.blobs.stat(thumbKey(o.sha256, o.size, v))));
    if (have.every((h) => h !== undefined && h.size > 0)) return "present";
    if (await this.blobs.stat(placeholderKey(o.sha256, o.size))) return "placeholder";
    return have.some((h) => h !== undefined) ? "partial" : "none";
  }

  /** Makes the thumbnails of `o` unless they are there; `force` makes them again (thumbnails --rebuild, an unreadable one). */
  ensure(o: OriginalRef, opts: { force?: boolean } = {}): Promise<EnsureResult> {
    const id = `${o.sha256}-${o.size}`;
    const running = this.running.get(id);
    if (running) return running;
    const work = this.inTurn(() => this.generate(o, opts.force ?? false)).finally(() => this.running.delete(id));
    this.running.set(id, work);
    return work;
  }

  private async inTurn<T>(fn: () => Promise<T>): Promise<T> {
    // A finished generation hands its slot to the next waiter directly, so none can slip in between.
    if (this.active >= this.maxParallel) await new Promise<void>((resolve) => this.turns.push(resolve));
    else this.active += 1;
    try {
      return await fn();
    } finally {
      const next = this.turns.shift();
      if (next) next();
      else this.active -= 1;
    }
  }

  private async generate(o: OriginalRef, force: boolean): Promise<EnsureResult> {
    if (!force && !NEEDS_MAKING.has(await this.state(o))) return "present";
    const kind = kindOfExtension(o.ext);
    if (kind === "image" && o.size <= MAX_DECODE_BYTES) {
      const bytes = await this.blobs.read(o.key);
      if (!bytes) throw new Error(`${o.key} is not in the archive any more`);
      const rendered = await renderThumbnails(bytes).catch(() => undefined);
      if (rendered) {
        for (const v of THUMB_VARIANTS) await this.blobs.write(thumbKey(o.sha256, o.size, v), rendered[v]);
        await this.blobs.remove(placeholderKey(o.sha256, o.size));
        return "generated";
      }
    }
    const lines = kind === "text" && o.size <= 4 * 1024 * 1024 ? firstLines((await this.blobs.read(o.key)) ?? Buffer.alloc(0), o.ext) : [];
    await this.blobs.write(placeholderKey(o.sha256, o.size), Buffer.from(placeholderSvg({ ext: o.ext, kind: kind === "image" ? "other" : kind, lines })));
    return "placeholder";
  }

  /**
   * The thumbnail of the file with this sha256: stored, or generated now when the original is there; undefined
   * when neither the original nor a thumbnail of it is.
   */
  async get(sha256: string, variant: ThumbVariant): Promise<Thumb | undefined> {
    const o = await this.findOriginal(sha256);
    if (!o) return undefined;
    const stored = await this.read(o, variant);
    if (stored) return stored;
    await this.ensure(o);
    return this.read(o, variant);
  }

  /** What is stored for `o`, without generating anything. */
  async read(o: OriginalRef, variant: ThumbVariant): Promise<Thumb | undefined> {
    const webp = await this.blobs.read(thumbKey(o.sha256, o.size, variant));
    if (webp && webp.length > 0) return { type: "webp", bytes: webp };
    const svg = await this.blobs.read(placeholderKey(o.sha256, o.size));
    return svg ? { type: "svg", bytes: svg } : undefined;
  }

  /** A stored thumbnail that sharp cannot read back counts as missing (verify). */
  async readable(o: OriginalRef): Promise<boolean> {
    for (const v of THUMB_VARIANTS) {
      const bytes = await this.blobs.read(thumbKey(o.sha256, o.size, v));
      if (!bytes || !(await isReadableWebp(bytes))) return false;
    }
    return true;
  }
}

export type BackfillResult = {
  files: number;
  present: number;
  generated: number;
  placeholders: number;
  failed: number;
  failures: string[];
  /** Stopped at the time budget with files left to look at. */
  more: boolean;
  /** The key of the last file this run looked at: where its continuation goes on. */
  lastKey?: string;
};

/**
 * Thumbnails for every original that has none, until `budgetMs` has passed (then `more`). One file's failure
 * (a read error) is counted and reported, never thrown: thumbnails must not stop anything else. `parallel` files are
 * made at a time, in key order (a person waiting: `thumbnails --once`, the demo; the worker's background job makes
 * one at a time), and `lastKey` is only ever a key every file before which was looked at.
 */
export async function backfillThumbnails(
  thumbs: Thumbnails,
  opts: { signal?: AbortSignal; force?: boolean; budgetMs?: number; now?: () => number; after?: string; parallel?: number } = {},
): Promise<BackfillResult> {
  const r: BackfillResult = { files: 0, present: 0, generated: 0, placeholders: 0, failed: 0, failures: [], more: false };
  const now = opts.now ?? Date.now;
  const deadline = opts.budgetMs === undefined ? Number.POSITIVE_INFINITY : now() + opts.budgetMs;
  const parallel = Math.max(1, opts.parallel ?? 1);
  const one = async (o: OriginalRef) => {
    try {
      const outcome = await thumbs.ensure(o, { force: opts.force ?? false });
      if (outcome === "present") r.present += 1;
      else if (outcome === "generated") r.generated += 1;
      else r.placeholders += 1;
    } catch (err) {
      r.failed += 1;
      if (r.failures.length < 20) r.failures.push(`${o.key}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  let batch: OriginalRef[] = [];
  const runBatch = async () => {
    await Promise.all(batch.map(one));
    r.files += batch.length;
    r.lastKey = batch.at(-1)?.key ?? r.lastKey;
    batch = [];
  };
  for await (const o of thumbs.originals()) {
    if (opts.signal?.aborted) break;
    // A continuation goes on where its predecessor stopped (keys come in order), so a large archive on a slow
    // disk gets past the files already done instead of spending every budget on them again.
    if (opts.after !== undefined && o.key <= opts.after) continue;
    if (batch.length === 0 && now() >= deadline) {
      r.more = true;
      break;
    }
    batch.push(o);
    if (batch.length >= parallel) await runBatch();
  }
  if (batch.length > 0 && !opts.signal?.aborted) await runBatch();
  return r;
}
