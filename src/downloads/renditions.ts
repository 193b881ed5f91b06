// The best freely available rendition of a deviation (no quota): its `content` (fullview), else the
// largest of `thumbs`/`preview`, videos at their best quality — and whether what the service shows is
// only part of the work (first image of a multi-image post, a blurred mature or tier-locked rendition).
import type { Deviation } from "../api/types.ts";
import { isSignedUrlUsable, signedUrlExpiry } from "./signed-url.ts";

export type Rendition = {
  /** "content", "preview", "thumb", "video:<quality>". */
  name: string;
  src: string;
  width?: number | undefined;
  height?: number | undefined;
  filesize?: number | undefined;
};

export type Partiality = { partial: boolean; reason: string | null };

/** What to store when the original cannot be had; undefined when the service offers nothing. */
export function bestFreeRendition(d: Deviation): Rendition | undefined {
  const videos = (d.videos ?? []).filter((v) => typeof v.src === "string" && v.src !== "");
  if (videos.length > 0) {
    const best = [...videos].sort((a, b) => qualityOf(b.quality) - qualityOf(a.quality) || (b.filesize ?? 0) - (a.filesize ?? 0))[0];
    if (best) return { name: `video:${best.quality ?? "best"}`, src: best.src, filesize: best.filesize ?? undefined };
  }
  if (d.content?.src) {
    return {
      name: "content",
      src: d.content.src,
      width: d.content.width ?? undefined,
      height: d.content.height ?? undefined,
      filesize: d.content.filesize ?? undefined,
    };
  }
  const images: Rendition[] = [];
  for (const t of d.thumbs ?? []) if (t.src) images.push({ name: "thumb", src: t.src, width: t.width ?? undefined, height: t.height ?? undefined });
  if (d.preview?.src) images.push({ name: "preview", src: d.preview.src, width: d.preview.width ?? undefined, height: d.preview.height ?? undefined });
  return images.sort((a, b) => area(b) - area(a))[0];
}

/**
 * A listing's copy of a deviation (the mirror's raw JSON) when its best free rendition can be fetched as
 * listed: the signed URL still valid at `nowMs` (docs/service-behaviour.md#signed-url-expiry), and the work
 * not locked. What a locked work shows depends on the viewer's access (docs/service-behaviour.md#tier-locked),
 * and a listing may have been read with another token (a public one) than the account's: the account's own
 * view is asked for. A mature work's blurred rendition is taken as listed: a public token does not list mature
 * works at all (docs/service-behaviour.md#public-token-hides-mature), so a listing that shows one was read with
 * a user token, and /deviation/{id} would give the same blurred URL (docs/service-behaviour.md#mature-blur).
 * Otherwise undefined, and /deviation/{id} is asked.
 */
export function usableListing(listed: Deviation, nowMs: number): Deviation | undefined {
  if (listed.is_deleted === true) return undefined;
  if (listed.tier_access === "locked" || listed.premium_folder_data?.has_access === false) return undefined;
  const rendition = bestFreeRendition(listed);
  // Only a URL that states its expiry: one that states none may come from a listing read long ago, and a 404
  // from it would be taken for a removed file (a fresh /deviation/{id} is what may say "gone").
  return rendition && typeof signedUrlExpiry(rendition.src) === "number" && isSignedUrlUsable(rendition.src, nowMs) ? listed : undefined;
}

/**
 * Whether the stored file can only be part of the work. The API exposes only the first image of a
 * multi-image post (docs/service-behaviour.md#multi-image), and mature or tier-locked works come
 * blurred to viewers without access.
 */
export function partialityOf(d: Deviation, rendition: Rendition | "original"): Partiality {
  const raw = d as Record<string, unknown>;
  const reasons: string[] = [];
  if (raw.is_multi_media === true || Array.isArray(raw.additional_media) || Array.isArray(raw.additionalMedia)) {
    reasons.push("multi-image post: the API gives the first image only");
  }
  if (rendition !== "original") {
    if (d.tier_access === "locked") reasons.push("tier-locked: the service shows a blurred preview");
    else if (d.premium_folder_data && d.premium_folder_data.has_access === false) reasons.push("premium folder without access: a blurred preview");
    else if (/(^|[,/_])blur(_|%2C|,|\/|$)/i.test(safePath(rendition.src))) reasons.push("blurred rendition (mature or restricted)");
  }
  return reasons.length ? { partial: true, reason: reasons.join("; ") } : { partial: false, reason: null };
}

function qualityOf(q: string | null | undefined): number {
  const m = /(\d+)/.exec(q ?? "");
  return m ? Number(m[1]) : 0;
}

function area(r: Rendition): number {
  return (r.width ?? 0) * (r.height ?? 0);
}

/** The URL's path only: its query carries the signature and must not be searched or logged. */
function safePath(src: string): string {
  try {
    return new URL(src).pathname;
  } catch {
    return "";
  }
}
