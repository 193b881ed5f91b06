// A deviation as the gallery-dl import sees it (ImportCandidate), for the unit tests of its decisions.
import type { ImportCandidate } from "../../src/db/imported-file.repository.ts";

export function importCandidate(over: Partial<ImportCandidate> = {}): ImportCandidate {
  return {
    deviationid: "D",
    index: 1,
    title: "t",
    type: "image",
    author: "a",
    isDeleted: false,
    isDownloadable: true,
    downloadFilesize: 1000,
    contentFilesize: 600,
    videos: [{ quality: "720p", filesize: 5000 }],
    isMultiMedia: false,
    announced: { width: 1600, height: 1200 },
    ...over,
  };
}
