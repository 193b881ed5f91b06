// What a file in a gallery-dl folder says about itself: whose folder it sits in, which deviation its name
// names (the numeric index, in decimal or base 36), and whether it is a further image of a multi-image post.
// The names and folders are gallery-dl's (docs/service-behaviour.md#gallery-dl-layout).
import path from "node:path";

/** The sub-folder of a user's folder a file sits in. */
export type Section = "gallery" | "favourites" | "scraps" | "journal" | "status" | "folder";

export type PathFacts = {
  /** The user folder's name (deviantart/<username>/…), or null outside that layout. */
  username: string | null;
  section: Section;
};

export type NameFacts = {
  /** The deviation's numeric index (the last number of its URL). */
  index: number | null;
  /** gallery-dl ≥ 1.29.3 names every image of a multi-image post: 0 for the first, the file id for the others. */
  indexFile: number | null;
  /** 1-based image number of a multi-image post. */
  num: number | null;
  /** How the index was read: "default name" (deviantart_<index>_…) or "base 36" (…-d<index in base 36>). */
  via: "default name" | "multi-image name" | "base 36" | null;
};

const SECTIONS: Record<string, Section> = { favourites: "favourites", scraps: "scraps", journal: "journal", status: "status" };

/** `abs` is the file's absolute path; the user folder is the one after the last "deviantart" folder. */
export function pathFacts(abs: string): PathFacts {
  const parts = abs.split(path.sep).filter(Boolean);
  const at = parts.lastIndexOf("deviantart");
  // The user folder must hold the file: deviantart/<user>/<file> at least.
  if (at < 0 || at + 2 >= parts.length) return { username: null, section: "gallery" };
  const username = parts[at + 1] as string;
  const sub = parts.slice(at + 2, -1);
  if (sub.length === 0) return { username, section: "gallery" };
  return { username, section: SECTIONS[(sub[0] as string).toLowerCase()] ?? "folder" };
}

/** gallery-dl ≥ 1.29.3 for multi-image posts: deviantart_{index}_{index_file}_{title}_{num:02}.{extension}. */
const MULTI_IMAGE = /^deviantart_(\d{1,15})_(\d{1,15})_.*_(\d{2,})\.[^.]+$/s;
/** The default name: deviantart_{index}_{title}.{extension}. */
const DEFAULT_NAME = /^deviantart_(\d{1,15})_/;
/** {filename}: title_by_author-d<index in base 36> (the name the service itself gives originals). */
const BASE36_NAME = /_by_[^/]*?-d([0-9a-z]{1,11})(?:\.[^.]*)?$/is;

export function nameFacts(name: string): NameFacts {
  const multi = MULTI_IMAGE.exec(name);
  if (multi) return { index: safeInt(multi[1]), indexFile: safeInt(multi[2]), num: safeInt(multi[3]), via: "multi-image name" };
  const plain = DEFAULT_NAME.exec(name);
  if (plain) return { index: safeInt(plain[1]), indexFile: null, num: null, via: "default name" };
  const b36 = BASE36_NAME.exec(name);
  if (b36) {
    const index = Number.parseInt((b36[1] as string).toLowerCase(), 36);
    return { index: Number.isSafeInteger(index) ? index : null, indexFile: null, num: null, via: "base 36" };
  }
  return { index: null, indexFile: null, num: null, via: null };
}

/** The lowercase extension of a file name, without the dot ("" when it has none). */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? "" : name.slice(dot + 1).toLowerCase();
}

/** Words of a title or file name, for telling whether a name carries a title: lowercase letters and digits only. */
export function titleKey(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, "");
}

function safeInt(s: string | undefined): number | null {
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : null;
}
