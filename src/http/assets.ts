// The dashboard's stylesheet and script (src/http/assets/), read once and served under a name that carries
// their content hash, so they can be cached for a year and a new version is fetched as soon as it changes.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

export type Asset = { url: string; type: string; body: string };

/** `name` (e.g. "app.css") made of `files` of src/http/assets/, one after the other. */
function asset(name: string, files: string[], type: string): Asset {
  const body = files.map((file) => readFileSync(new URL(`./assets/${file}`, import.meta.url), "utf8")).join("\n");
  const hash = createHash("sha256").update(body).digest("hex").slice(0, 12);
  const dot = name.lastIndexOf(".");
  return { url: `/assets/${name.slice(0, dot)}.${hash}${name.slice(dot)}`, type, body };
}

export const APP_CSS = asset("app.css", ["base.css", "gallery.css", "pages.css"], "text/css; charset=utf-8");
export const APP_JS = asset("app.js", ["app.js"], "text/javascript; charset=utf-8");

export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="24" viewBox="0 0 96 24">
<text x="0" y="18" font-family="system-ui,sans-serif" font-size="18" font-weight="700" fill="#94a3b8">d<tspan fill="#2dd4bf">vault</tspan></text></svg>`;
