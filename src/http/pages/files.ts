// How a stored file shows in the dashboard: which thumbnail stands for it (the grid never loads an original;
// thumbnails are served by /thumb/<size>/<sha256>.webp, a placeholder for what cannot be decoded), and what it
// is — the original, a free rendition or a preview — with why it is not the original.
import type { StoredFileRef } from "../../db/archive-browser.repository.ts";

export const PLACEHOLDER_URL = "/static/placeholder.svg";
export const TEXT_URL = "/static/text.svg";

/** The tile (s, ≤ 100 KB) or lightbox (m) picture of an item: its file's thumbnail, else a placeholder. */
export function thumbUrl(file: StoredFileRef | null | undefined, size: "s" | "m", type?: string | null): string {
  if (file?.sha256 && /^[0-9a-f]{64}$/.test(file.sha256)) return `/thumb/${size}/${file.sha256}.webp`;
  return type === "journal" || type === "literature" ? TEXT_URL : PLACEHOLDER_URL;
}

export type FileKind = { label: "original" | "free rendition" | "preview" | "text"; why: string | null; tone: "ok" | "warn" };

/**
 * What a stored file is (docs/service-behaviour.md#quota-weekly): the original (status done), or a rendition
 * kept because the weekly quota is spent (degraded) or the work is not downloadable (not_downloadable).
 */
export function fileKind(file: StoredFileRef): FileKind {
  if (file.kind === "text" || file.rendition === "html") return { label: "text", why: null, tone: "ok" };
  if (file.status === "done" && file.kind === "original") return { label: "original", why: null, tone: "ok" };
  const label = file.rendition === "preview" || file.rendition === "thumb" ? "preview" : "free rendition";
  const why = file.status === "degraded" ? "quota spent" : file.status === "not_downloadable" ? "not downloadable" : null;
  return { label, why: file.why ? `${why ?? "why"}: ${file.why}` : why, tone: "warn" };
}

/** The short badge of a tile: "free rendition · quota" — nothing for an original. */
export function badge(file: StoredFileRef | null): string | null {
  if (!file) return null;
  const k = fileKind(file);
  if (k.label === "original" || k.label === "text") return null;
  const why = file.status === "degraded" ? "quota" : file.status === "not_downloadable" ? "not downloadable" : null;
  return why ? `${k.label} · ${why}` : k.label;
}
