// Original or rendition: decided by what the service says of the deviation (the original's
// download_filesize, the fullview's and the videos' sizes) and what gallery-dl wrote in the sidecar, never by
// asking /deviation/download (each call spends one of the week's originals: docs/service-behaviour.md#quota-weekly).
// Taking a rendition for the original would lose the original for good, so the rules lean the other way: a
// file is an original only when its size is the original's, or gallery-dl said so and nothing contradicts it,
// and then only when its bytes look like the work (judgeLook: the format its name gives, a picture that
// decodes, the announced proportions); a rendition never when it is larger than anything the work announces.
import type { ImportCandidate, ImportedRole } from "../../db/imported-file.repository.ts";
import { formatOfExtension, type NameFacts } from "./file-identity.ts";
import { DECODE_LIMIT, type FileLook } from "./file-look.ts";
import type { Sidecar } from "./sidecar.ts";

export type Classification = { role: ImportedRole; rendition: string | null; evidence: string } | { role: "skip"; reason: string };

/** Pages gallery-dl renders for journals and literature (its "journals" option): dvault keeps the text itself. */
const TEXT_PAGES = new Set(["htm", "html", "txt"]);

export function classifyFile(args: { size: number; ext: string; name: NameFacts; sidecar: Sidecar | undefined; deviation: ImportCandidate }): Classification {
  const { size, ext, name, sidecar, deviation: d } = args;
  if (TEXT_PAGES.has(ext) && d.type !== "image" && d.type !== "video") {
    return { role: "skip", reason: "a journal or literature page rendered by gallery-dl: dvault keeps the text the API gives (dvault download stores it)" };
  }
  const num = sidecar?.num ?? name.num;
  const indexFile = sidecar?.indexFile ?? name.indexFile;
  if ((num !== null && num !== undefined && num > 1) || (indexFile !== null && indexFile !== undefined && indexFile > 0)) {
    return {
      role: "extra_image",
      rendition: null,
      evidence: `image ${num ?? "?"} of a multi-image post (the API gives only the first: docs/service-behaviour.md#multi-image)`,
    };
  }
  const original = d.downloadFilesize;
  if (original !== null && size === original) return { role: "original", rendition: null, evidence: `its ${size} bytes are the original's download_filesize` };
  if (sidecar?.isOriginal === true) {
    if (original !== null) {
      return {
        role: "rendition",
        rendition: renditionBySize(size, d) ?? "unknown",
        evidence: `gallery-dl marked it original, but its ${size} bytes differ from the original's ${original}`,
      };
    }
    const bySize = renditionBySize(size, d);
    if (bySize) return { role: "rendition", rendition: bySize, evidence: `gallery-dl marked it original, but its ${size} bytes are the ${bySize} rendition's` };
    return {
      role: "original",
      rendition: null,
      evidence: "gallery-dl marked it original (is_original) and the service announces no original size to contradict it",
    };
  }
  const bySize = renditionBySize(size, d);
  if (bySize) return { role: "rendition", rendition: bySize, evidence: `its ${size} bytes are the ${bySize} rendition's` };
  if (sidecar?.targetPath?.includes("/v1/")) {
    return { role: "rendition", rendition: "unknown", evidence: "gallery-dl fetched it from a resized (/v1/) URL" };
  }
  const why = original !== null ? `its ${size} bytes are not the original's ${original}` : "the service announces no original size to compare with";
  return { role: "rendition", rendition: "unknown", evidence: `${why}, and gallery-dl did not mark it original` };
}

function renditionBySize(size: number, d: ImportCandidate): string | undefined {
  if (d.contentFilesize !== null && size === d.contentFilesize) return "content";
  const video = d.videos.find((v) => v.filesize === size);
  return video ? `video:${video.quality}` : undefined;
}

/** What a planned file turned out to be once its bytes were looked at. */
export type Judgement = { role: ImportedRole; rendition: string | null; evidence: string } | { refused: "notTheWork" | "oversized"; detail: string };

/** The largest file the service announces for the work (original, fullview, videos), or null when it announces none. */
export function largestAnnounced(d: ImportCandidate): number | null {
  const sizes = [d.downloadFilesize, d.contentFilesize, ...d.videos.map((v) => v.filesize)].filter((n): n is number => n !== null);
  return sizes.length ? Math.max(...sizes) : null;
}

/**
 * A rendition larger than anything the service announces for its work is none of its files (a sparse file of
 * gigabytes named for a small work): refused before a byte of it is read. Originals are sized by the service.
 */
export function judgeSize(planned: { role: ImportedRole }, size: number, d: ImportCandidate): Extract<Judgement, { refused: string }> | undefined {
  const largest = largestAnnounced(d);
  if (planned.role !== "rendition" || largest === null || size <= largest) return undefined;
  return { refused: "oversized", detail: `its ${size} bytes are more than the ${largest} of the largest file the service announces for the work` };
}

/**
 * The same picture at another size: each side of either one rounded to a whole pixel (a resize by any factor
 * moves the cross product w₁·h₂ − h₁·w₂ by at most the sum of the four sides), plus 1% for a service that
 * rounds twice or to even sizes. Pictures of other proportions differ by far more: 4:3 and 3:2 by 12%, 16:9
 * and 16:10 by 11%, a square and 5:4 by 25%.
 */
export function sameProportions(a: { width: number; height: number }, b: { width: number; height: number }): boolean {
  const cross = Math.abs(a.width * b.height - a.height * b.width);
  return cross <= a.width + a.height + b.width + b.height + 0.01 * a.width * b.height;
}

/**
 * What a glance at a file's first and last bytes refuses, before it is hashed or decoded: zeros where a format
 * starts, no signature of the format its name gives, zeros where a picture ends.
 */
export function judgeGlance(ext: string, look: Pick<FileLook, "format" | "zeros" | "zeroTail">): Extract<Judgement, { refused: string }> | undefined {
  const refuse = (detail: string) => ({ refused: "notTheWork" as const, detail });
  if (look.zeros) return refuse("its first bytes are all zeros: no file format starts so (a sparse or wiped file)");
  const named = formatOfExtension(ext);
  if (named && !look.format) return refuse(`its bytes are not a ${named.toUpperCase()} file: no ${named.toUpperCase()} signature at its start`);
  // JPEG and WebP decoders take zeros for picture data: a cut shows only as the zeros where its end should be.
  if (look.zeroTail) return refuse("its last bytes are all zeros where a picture ends: cut short (a download preallocated to its size and never finished)");
  return undefined;
}

const size2 = (p: { width: number; height: number }) => `${p.width}×${p.height}`;

/**
 * What a planned file is once its bytes are seen. Its size is necessary, not sufficient: the format its bytes
 * show must be the one its name gives (gallery-dl names a file by its original's extension), a picture must
 * decode, and an original or rendition must have the proportions the service announces for the work (`content`,
 * else `preview`). A would-be original whose format is another but whose picture is the work's is kept as a
 * rendition (the original stays wanted); anything else that fails is refused with the reason.
 */
export function judgeLook(args: { planned: Exclude<Judgement, { refused: string }>; ext: string; look: FileLook; deviation: ImportCandidate }): Judgement {
  const { planned, ext, look, deviation: d } = args;
  const refuse = (detail: string): Judgement => ({ refused: "notTheWork", detail });
  const glanced = judgeGlance(ext, look);
  if (glanced) return glanced;
  const named = formatOfExtension(ext);
  const actual = look.format;
  const picture = look.picture;
  if (picture && "error" in picture) return refuse(`it does not decode as a ${actual?.name.toUpperCase()} picture (${picture.error})`);
  const checks: string[] = [];
  if (picture) {
    const announced = d.announced;
    if (planned.role !== "extra_image" && announced) {
      if (!sameProportions(picture, announced)) {
        return refuse(`its picture is ${size2(picture)}, not in the proportions of the ${size2(announced)} the service announces for the work`);
      }
      checks.push(`a ${actual?.name.toUpperCase()} of ${size2(picture)}, in the proportions of the announced ${size2(announced)}`);
    } else {
      checks.push(`a ${actual?.name.toUpperCase()} of ${size2(picture)}`);
    }
    if (!picture.decoded) {
      if (planned.role !== "original")
        return refuse(`at ${look.stat.size} bytes it is too large to decode here (over ${DECODE_LIMIT}), and only an original's size vouches for it`);
      checks.push("its header read (too large to decode here)");
    }
  } else if (actual) {
    checks.push(`a ${actual.name.toUpperCase()} file`);
  } else {
    checks.push(`no known signature for .${ext || "(none)"} to check its bytes against`);
  }
  const seen = `its bytes are ${checks.join(", ")}`;
  if (named && actual && actual.name !== named) {
    const other = `its bytes are a ${actual.name.toUpperCase()}, not the ${named.toUpperCase()} its name says`;
    if (planned.role !== "original") return picture ? { ...planned, evidence: `${planned.evidence}; ${other}` } : refuse(other);
    if (!picture) return refuse(`${other}: not the original`);
    return { role: "rendition", rendition: "unknown", evidence: `${planned.evidence}, but ${other}: not the original, kept as a rendition (${checks[0]})` };
  }
  return { ...planned, evidence: `${planned.evidence}; ${seen}` };
}
