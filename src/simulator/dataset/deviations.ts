// Deviations of the simulated service: how one is drawn, by the generator and by writes and activity alike.
// The record (kind, file, text, stats, tier, rendering quirks) is dataset/model.ts's SimDeviation.
import type { Rng } from "../rng.ts";
import type { Dataset, DeviationKind, SimDeviation } from "./model.ts";
import { ADJECTIVES, cap, escapeHtml, isoAt, deviationSlug, LICENSES, NOUNS, TAGS, WORDS } from "./text.ts";

export type NewDeviationInput = {
  authorId: string;
  kind?: DeviationKind;
  title?: string;
  publishedTime?: number;
  isMature?: boolean;
};

/** Makes a deviation (not yet placed in any folder). Used by the generator and by writes/activity. */
export function makeDeviation(rng: Rng, dataset: Dataset, startMs: number, input: NewDeviationInput): SimDeviation {
  const kindRoll = rng.next();
  const kind: DeviationKind = input.kind ?? (kindRoll < 0.8 ? "image" : kindRoll < 0.9 ? "journal" : kindRoll < 0.96 ? "literature" : "video");
  const title = input.title ?? `${cap(rng.pick(ADJECTIVES))} ${cap(rng.pick(NOUNS))}${rng.chance(0.3) ? ` ${rng.int(2, 99)}` : ""}`;
  const isMature = input.isMature ?? rng.chance(0.12);
  const numericId = ++dataset.counters.numericId;
  const published = input.publishedTime ?? Math.floor(startMs / 1000) - rng.int(3600, 3 * 365 * 86400);
  const hasImage = kind === "image" || kind === "video";
  // One draw from ten: the JPEG and PNG works of the five-way draw this replaced stay what they were, and half of
  // its GIFs are WebP (docs/service-behaviour.md#original-formats).
  const ext = rng.pick(["jpg", "jpg", "jpg", "jpg", "jpg", "jpg", "png", "png", "gif", "webp"] as const);
  const width = rng.int(400, 4000);
  const height = rng.int(400, 4000);
  const isText = kind === "journal" || kind === "literature";
  const words = isText ? Array.from({ length: rng.int(20, 60) }, () => rng.pick(WORDS)) : [];
  const dev: SimDeviation = {
    deviationid: rng.uuid(),
    numericId,
    authorId: input.authorId,
    kind,
    title,
    slug: deviationSlug(title),
    publishedTime: published,
    isDeleted: false,
    isMature,
    matureLevel: isMature ? rng.pick(["strict", "moderate"] as const) : null,
    matureClassification: isMature ? rng.sample(["nudity", "sexual", "gore", "language", "ideology"], rng.int(1, 2)) : [],
    isDownloadable: hasImage && kind === "image" ? rng.chance(0.75) : false,
    allowsComments: rng.chance(0.95),
    isPinned: false,
    printid: kind === "image" && rng.chance(0.1) ? rng.uuid() : null,
    stats: {
      favourites: rng.int(0, 400),
      views: rng.int(10, 20000),
      viewsToday: rng.int(0, 30),
      downloads: rng.int(0, 300),
      downloadsToday: rng.int(0, 5),
    },
    description: rng.chance(0.8) ? `<b>${escapeHtml(title)}</b><br />Made with ${rng.pick(TAGS)}. <a href="https://example.com/${numericId}">ref</a>` : "",
    tags: rng.sample(TAGS, rng.int(0, 6)),
    license: rng.pick(LICENSES),
    image: hasImage ? { width, height, filesize: rng.int(30_000, 900_000), transparency: ext === "png" && rng.chance(0.5), ext } : null,
    videos: kind === "video" ? withLowerQuality({ quality: "720p", filesize: rng.int(1_000_000, 9_000_000), duration: rng.int(5, 300) }) : null,
    text: isText ? { html: `<p>${words.join(" ")}</p>`, excerpt: words.slice(0, 20).join(" "), apiHtmlEmpty: rng.chance(0.25) } : null,
    tier: rng.chance(0.05) ? { statsAsArray: rng.chance(0.5), state: "active" } : null,
    camera:
      kind === "image" && rng.chance(0.15)
        ? { make: "Canon", model: `EOS ${rng.int(5, 90)}D`, shutter_speed: "1/250", aperture: "F/5.6", iso: String(rng.pick([100, 200, 400, 800])) }
        : null,
    creationTime: isoAt(published * 1000 - rng.int(0, 3600) * 1000),
    version: 1,
    favedBy: [],
  };
  // Derived, not drawn: the random sequence (and so every other generated value) stays as it was.
  if (kind === "image" && numericId % 19 === 0) dev.isMultiMedia = true;
  dataset.deviations.set(dev.deviationid, dev);
  return dev;
}

/** A 360p rendition next to the drawn 720p one (no extra random draws), so "best quality" is a choice. */
function withLowerQuality(v: { quality: string; filesize: number; duration: number }): Array<{ quality: string; filesize: number; duration: number }> {
  return [{ quality: "360p", filesize: Math.floor(v.filesize * 0.35), duration: v.duration }, v];
}
