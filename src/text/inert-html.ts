// The pages dvault writes into the archive for people to open (a journal's or literature's text, the readable tree's
// index pages in a bucket): inert wherever they are opened, a file:// link of the readable tree included, where no
// server sends a Content-Security-Policy. The service's HTML goes through an allow-list sanitizer (sanitize-html:
// what is not listed is dropped, never patched with a regex), and every page carries its own CSP in a <meta>, so a
// hole in the sanitizer would still run nothing. The raw HTML stays in the database as the service sent it.
import sanitizeHtml from "sanitize-html";
import { decodeEntities } from "./html-to-text.ts";
import { html, raw } from "./html.ts";

/**
 * No script, frame, form, font or connection of any kind; images only from the archive itself or inline (data:),
 * styles only inline (the journal's own CSS and style attributes). A page opened from the archive makes no request:
 * the service's CDN images a journal links to stay blank (their signed URLs expire anyway).
 */
export const ARCHIVE_PAGE_CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'";

/** How every page dvault writes for people begins: the CSP comes before anything the service wrote. */
export const ARCHIVE_PAGE_HEAD = `<!doctype html>\n<html><head><meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="${ARCHIVE_PAGE_CSP}">\n`;

const SANITIZE: sanitizeHtml.IOptions = {
  // sanitize-html's defaults (text, lists, tables, links) less <bdo>, which overrides the text's direction, plus the
  // markup journals and literature use.
  allowedTags: [...sanitizeHtml.defaults.allowedTags.filter((t) => t !== "bdo"), "img", "del", "ins", "strike", "big", "tt", "center", "font"],
  allowedAttributes: {
    "*": ["class", "title", "lang", "dir", "style", "align"],
    a: ["href", "name"],
    img: ["src", "alt", "width", "height"],
    td: ["colspan", "rowspan"],
    th: ["colspan", "rowspan"],
    ol: ["start", "type"],
    font: ["color", "size", "face"],
  },
  allowedSchemes: ["http", "https", "mailto"],
  allowedSchemesByTag: { img: ["http", "https", "data"] },
  allowProtocolRelative: false,
  // Dropped with what they hold, not only their tags (the text of a <script> is no text of the work).
  nonTextTags: ["script", "style", "textarea", "option", "noscript", "iframe", "noembed", "noframes", "xmp", "title", "template", "object"],
};

/** A fragment of the service's HTML with nothing in it that runs or loads: scripts, handlers, frames, forms and javascript: links dropped. */
export function inertHtml(fragment: string, img?: ImgTransform): string {
  return sanitizeHtml(fragment, img ? { ...SANITIZE, transformTags: { img: (_tag, attribs) => img(attribs) } } : SANITIZE);
}

/**
 * What an <img> of the service's HTML becomes on a page that may load only its own images (the dashboard's reading
 * view): another element, whose attributes and text pass the same allow-list afterwards.
 */
export type ImgTransform = (attribs: Record<string, string>) => { tagName: string; attribs: Record<string, string>; text?: string };

export type TextPage = { title: string; css: string | null; body: string };

/** A journal's or literature's page as dvault stores it: its title, the service's CSS, and the body made inert. */
export function textPage(p: TextPage): string {
  // CSS cannot run code; "</" is broken so that it cannot close the <style> either.
  const css = p.css ? html`<style>${raw(p.css.replaceAll("</", "<\\/"))}</style>\n` : "";
  return html`${raw(ARCHIVE_PAGE_HEAD)}<title>${p.title}</title>\n${css}</head>\n<body>\n<h1>${p.title}</h1>\n${raw(inertHtml(p.body))}\n</body></html>\n`.text;
}

/** Whether a stored page is already one of textPage's (with this CSP): a body cannot forge it, the head comes first. */
export function isInertPage(text: string): boolean {
  return text.startsWith(ARCHIVE_PAGE_HEAD);
}

/** The head of the pages dvault stored before they were made inert (src/downloads/store-text.ts until issue 27). */
const OLD_HEAD = '<!doctype html>\n<html><head><meta charset="utf-8"><title>';
const OLD_TAIL = "\n</body></html>\n";

/**
 * A page stored before pages were inert, taken apart into what textPage needs, or undefined when it is not one of
 * dvault's own (then the whole file is the body). Read by position, in one pass: the title and the CSS were written
 * escaped, so their ends are the first `</title>` and `</style>`; the body runs to the tail dvault wrote last.
 */
export function readStoredTextPage(text: string): TextPage | undefined {
  if (!text.startsWith(OLD_HEAD) || !text.endsWith(OLD_TAIL)) return undefined;
  const titleEnd = text.indexOf("</title>\n", OLD_HEAD.length);
  if (titleEnd < 0) return undefined;
  const title = decodeEntities(text.slice(OLD_HEAD.length, titleEnd));
  let at = titleEnd + "</title>\n".length;
  let css: string | null = null;
  if (text.startsWith("<style>", at)) {
    const cssEnd = text.indexOf("</style>\n", at);
    if (cssEnd < 0) return undefined;
    css = text.slice(at + "<style>".length, cssEnd);
    at = cssEnd + "</style>\n".length;
  }
  if (!text.startsWith("</head>\n<body>\n<h1>", at)) return undefined;
  const h1End = text.indexOf("</h1>\n", at);
  if (h1End < 0 || h1End + "</h1>\n".length > text.length - OLD_TAIL.length) return undefined;
  return { title, css, body: text.slice(h1End + "</h1>\n".length, text.length - OLD_TAIL.length) };
}

/** A stored page made inert, or undefined when it already is. `fallbackTitle` names a page that is not one of dvault's own. */
export function inertStoredPage(text: string, fallbackTitle: string): string | undefined {
  if (isInertPage(text)) return undefined;
  return textPage(readStoredTextPage(text) ?? { title: fallbackTitle, css: null, body: text });
}
