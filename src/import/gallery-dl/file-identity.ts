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

/** A file format told by its first bytes; `picture` when sharp decodes it (its proportions can be checked). */
export type FileFormat = { name: string; picture: boolean };

/** Signatures at the start of the formats DeviantArt serves or takes as downloads; "?" matches any byte. */
const SIGNATURES: ReadonlyArray<{ name: string; picture: boolean; at: number; bytes: string | readonly number[] }> = [
  { name: "jpeg", picture: true, at: 0, bytes: [0xff, 0xd8, 0xff] },
  { name: "png", picture: true, at: 0, bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { name: "gif", picture: true, at: 0, bytes: "GIF87a" },
  { name: "gif", picture: true, at: 0, bytes: "GIF89a" },
  { name: "webp", picture: true, at: 0, bytes: "RIFF????WEBP" },
  { name: "tiff", picture: true, at: 0, bytes: [0x49, 0x49, 0x2a, 0x00] },
  { name: "tiff", picture: true, at: 0, bytes: [0x4d, 0x4d, 0x00, 0x2a] },
  { name: "avif", picture: true, at: 4, bytes: "ftypavif" },
  { name: "heic", picture: false, at: 4, bytes: "ftypheic" },
  { name: "heic", picture: false, at: 4, bytes: "ftypmif1" },
  { name: "bmp", picture: false, at: 0, bytes: "BM" },
  { name: "mp4", picture: false, at: 4, bytes: "ftyp" },
  { name: "webm", picture: false, at: 0, bytes: [0x1a, 0x45, 0xdf, 0xa3] },
  { name: "pdf", picture: false, at: 0, bytes: "%PDF-" },
  { name: "zip", picture: false, at: 0, bytes: [0x50, 0x4b, 0x03, 0x04] },
  { name: "rar", picture: false, at: 0, bytes: "Rar!" },
  { name: "7z", picture: false, at: 0, bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] },
  { name: "psd", picture: false, at: 0, bytes: "8BPS" },
  { name: "swf", picture: false, at: 0, bytes: "FWS" },
  { name: "swf", picture: false, at: 0, bytes: "CWS" },
  { name: "swf", picture: false, at: 0, bytes: "ZWS" },
  { name: "mp3", picture: false, at: 0, bytes: "ID3" },
];

/** The format each extension names (the extension gallery-dl gives a file is the original's). */
const EXTENSIONS: Record<string, string> = {
  jpg: "jpeg",
  jpeg: "jpeg",
  jpe: "jpeg",
  jfif: "jpeg",
  png: "png",
  gif: "gif",
  webp: "webp",
  tif: "tiff",
  tiff: "tiff",
  avif: "avif",
  heic: "heic",
  heif: "heic",
  bmp: "bmp",
  mp4: "mp4",
  m4v: "mp4",
  mov: "mp4",
  webm: "webm",
  mkv: "webm",
  pdf: "pdf",
  zip: "zip",
  rar: "rar",
  "7z": "7z",
  psd: "psd",
  swf: "swf",
  mp3: "mp3",
};

/** The format of a file's first bytes, or null when none of the known signatures is there. */
export function formatOfBytes(head: Uint8Array): FileFormat | null {
  for (const s of SIGNATURES) {
    const want = typeof s.bytes === "string" ? [...s.bytes].map((c) => (c === "?" ? -1 : c.charCodeAt(0))) : s.bytes;
    if (head.length < s.at + want.length) continue;
    if (want.every((b, i) => b === -1 || head[s.at + i] === b)) return { name: s.name, picture: s.picture };
  }
  return null;
}

/** The format a file's extension names, or null for an extension without a known signature. */
export function formatOfExtension(ext: string): string | null {
  return EXTENSIONS[ext.toLowerCase()] ?? null;
}
