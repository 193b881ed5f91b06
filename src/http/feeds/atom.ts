// Atom 1.0 (RFC 4287) as text: a feed and its entries, every value XML-escaped and stripped of the characters
// XML 1.0 cannot carry (service text may hold control characters), with Media RSS thumbnails for readers
// that show a picture beside an entry.

export type AtomLink = { href: string; rel: "alternate" | "enclosure" | "self" | "related"; type?: string | null; length?: number | null; title?: string };

export type AtomEntry = {
  /** Never changes for the same item: readers key their "read" marks on it. */
  id: string;
  title: string;
  updated: Date;
  published?: Date | null;
  author: string;
  links: AtomLink[];
  /** Markup dvault wrote (src/text/html.ts), sent as escaped HTML content. */
  contentHtml: string;
  thumbnail?: { url: string } | null;
  categories?: string[];
};

export type AtomFeed = {
  id: string;
  title: string;
  subtitle?: string;
  /** The newest entry's time, or the clock's when there is none. */
  updated: Date;
  author: string;
  selfUrl: string;
  alternateUrl: string;
  entries: AtomEntry[];
};

// Tab, newline and carriage return are the only controls XML 1.0 allows; lone surrogates and U+FFFE/U+FFFF
// are not characters at all.
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };

/** Text for element content and double-quoted attributes. */
export function xmlText(value: string | number | null | undefined): string {
  return String(value ?? "")
    .replace(NOT_XML, "")
    .replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function link(l: AtomLink): string {
  const attrs = [`rel="${l.rel}"`, `href="${xmlText(l.href)}"`];
  if (l.type) attrs.push(`type="${xmlText(l.type)}"`);
  if (l.length !== null && l.length !== undefined && Number.isFinite(l.length) && l.length >= 0) attrs.push(`length="${Math.round(l.length)}"`);
  if (l.title) attrs.push(`title="${xmlText(l.title)}"`);
  return `<link ${attrs.join(" ")}/>`;
}

function entry(e: AtomEntry): string {
  const lines = [
    "<entry>",
    `<id>${xmlText(e.id)}</id>`,
    `<title type="text">${xmlText(e.title)}</title>`,
    `<updated>${e.updated.toISOString()}</updated>`,
    e.published ? `<published>${e.published.toISOString()}</published>` : "",
    `<author><name>${xmlText(e.author)}</name></author>`,
    ...e.links.map(link),
    ...(e.categories ?? []).map((c) => `<category term="${xmlText(c)}"/>`),
    e.thumbnail ? `<media:thumbnail url="${xmlText(e.thumbnail.url)}"/>` : "",
    `<content type="html">${xmlText(e.contentHtml)}</content>`,
    "</entry>",
  ];
  return lines.filter((l) => l !== "").join("\n");
}

export function renderAtom(feed: AtomFeed): string {
  return [
    '<?xml version="1.0" encoding="utf-8"?>',
    '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/">',
    `<id>${xmlText(feed.id)}</id>`,
    `<title type="text">${xmlText(feed.title)}</title>`,
    feed.subtitle ? `<subtitle type="text">${xmlText(feed.subtitle)}</subtitle>` : "",
    `<updated>${feed.updated.toISOString()}</updated>`,
    `<author><name>${xmlText(feed.author)}</name></author>`,
    "<generator>dvault</generator>",
    link({ rel: "self", href: feed.selfUrl, type: "application/atom+xml" }),
    link({ rel: "alternate", href: feed.alternateUrl, type: "text/html" }),
    ...feed.entries.map(entry),
    "</feed>",
    "",
  ]
    .filter((l) => l !== "")
    .join("\n");
}
