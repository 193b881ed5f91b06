// Original or rendition: decided by what the service says of the deviation (the original's
// download_filesize, the fullview's and the videos' sizes) and what gallery-dl wrote in the sidecar, never by
// asking /deviation/download (each call spends one of the week's originals: docs/service-behaviour.md#quota-weekly).
// Taking a rendition for the original would lose the original for good, so the rules lean the other way: a
// file is an original only when its size is the original's, or gallery-dl said so and nothing contradicts it.
import type { ImportCandidate, ImportedRole } from "../../db/imported-file.repository.ts";
import type { NameFacts } from "./file-identity.ts";
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
