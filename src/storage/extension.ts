// The extension a stored file gets: from its name, its URL or its MIME type (mime-types), never one a file
// manager would run, whatever the service says (docs/service-behaviour.md#hostile-answers).
import mime from "mime-types";
import { safeExtension } from "./sanitize.ts";

/**
 * Where mime-types answers otherwise than dvault always has for a type the service (or its simulator)
 * serves, today's answer stays, so files already archived and files archived from now on agree:
 * mime-types has no entry for "image/jpg", and says "jfif", "qt" and "mpga" for the others. `undefined`
 * means "no information": an octet-stream says nothing of the file, and the fallback decides.
 */
const KEPT_MIME_EXTENSIONS: ReadonlyMap<string, string | undefined> = new Map([
  ["image/jpg", "jpg"],
  ["image/pjpeg", "jpg"],
  ["video/quicktime", "mov"],
  ["audio/mpeg", "mp3"],
  ["application/octet-stream", undefined],
]);

/** Extensions a file manager would run: a name from the service never gets to pick one ("gnp.exe" tricks). */
const EXECUTABLE_EXTENSIONS = new Set([
  "exe",
  "com",
  "bat",
  "cmd",
  "scr",
  "pif",
  "msi",
  "msp",
  "cpl",
  "dll",
  "sys",
  "lnk",
  "url",
  "reg",
  "hta",
  "jar",
  "js",
  "jse",
  "vbs",
  "vbe",
  "wsf",
  "wsh",
  "ps1",
  "psm1",
  "sh",
  "bash",
  "zsh",
  "csh",
  "command",
  "app",
  "apk",
  "deb",
  "rpm",
  "desktop",
]);

/** A safe extension that is not an executable one, or undefined. */
function harmless(ext: string | undefined): string | undefined {
  const safe = safeExtension(ext);
  return safe === undefined || EXECUTABLE_EXTENSIONS.has(safe) ? undefined : safe;
}

function extFromName(name: string | undefined): string | undefined {
  if (!name) return undefined;
  const base = name.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  if (dot <= 0 || dot === base.length - 1) return undefined;
  const ext = harmless(base.slice(dot + 1));
  return ext === "jpeg" || ext === "jpe" ? "jpg" : ext;
}

function extFromMime(type: string | undefined): string | undefined {
  const essence = type?.split(";")[0]?.trim().toLowerCase();
  if (!essence) return undefined;
  if (KEPT_MIME_EXTENSIONS.has(essence)) return KEPT_MIME_EXTENSIONS.get(essence);
  // A MIME type may name an executable too (application/x-msdownload is "exe"): never used either.
  return harmless(mime.extension(essence) || undefined);
}

/**
 * A safe lowercase extension: from the filename, else the URL's last path segment, else the MIME type,
 * else the fallback ("bin"). Executable extensions are never used.
 */
export function extensionFor(args: { filename?: string; mime?: string; url?: string; fallback?: string }): string {
  const fromFilename = extFromName(args.filename);
  if (fromFilename) return fromFilename;
  if (args.url) {
    try {
      const segment = new URL(args.url).pathname.split("/").filter(Boolean).pop();
      const fromUrl = extFromName(segment === undefined ? undefined : decodeURIComponent(segment));
      if (fromUrl) return fromUrl;
    } catch {
      // Not a URL: fall through to the MIME type.
    }
  }
  return extFromMime(args.mime) ?? safeExtension(args.fallback) ?? "bin";
}
