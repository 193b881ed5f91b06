// The archive browser: filters, the folder tree and a date scrubber (behind one button on a phone) beside a grid
// of justified rows, each tile at its picture's aspect ratio (from the stored file's width and height, so
// nothing moves as pictures load), under month or day headings, paged by keyset cursors in the URL (app.js
// appends the next page as the pager scrolls into view and keeps the place in the URL; it opens tiles in a
// lightbox). Search results are src/http/pages/search.ts.
import type { FilterChoices, FolderChoice, ItemCard, StoredFileRef } from "../../db/archive-browser.repository.ts";
import { html, raw, type SafeHtml } from "../../text/html.ts";
import { badge, PLACEHOLDER_URL, thumbUrl } from "./files.ts";
import { countLine, layout, type PageFeed, plural, queryString, title } from "./layout.ts";

/** The grid's filters as they travel in links (src/http/routes/archive.ts reads them back). */
export type ArchiveFilter = {
  artist?: string | undefined;
  folder?: string | undefined;
  collection?: string | undefined;
  archived: boolean;
  /** Only what is not archived in full (no original or text stored). */
  notFull?: boolean | undefined;
  type?: string | undefined;
  tag?: string | undefined;
  /** A date range as written in the URL: YYYY, YYYY-MM or YYYY-MM-DD, both ends included. */
  from?: string | undefined;
  to?: string | undefined;
};

/** The types the type filter offers (the mirror's deviation_type). */
export const ITEM_TYPES = ["image", "journal", "literature", "video", "other"] as const;

/** The query of a filter, for links that keep it (paging, the item page's previous/next); a checked box is "1", as the form sends it. */
export function filterQuery(f: ArchiveFilter): Record<string, string | undefined> {
  return {
    artist: f.artist,
    folder: f.folder,
    collection: f.collection,
    type: f.type,
    tag: f.tag,
    from: f.from,
    to: f.to,
    archived: f.archived ? "1" : undefined,
    notfull: f.notFull ? "1" : undefined,
  };
}

export type ArchiveView = {
  filter: ArchiveFilter;
  choices: FilterChoices;
  /** Items per month, newest first (null: no publication date), for the date scrubber (without the date range). */
  months: Array<{ month: string | null; items: number }>;
  /** False when the filter matched past the grid's count bound: `months` are the archive's, their counts not shown. */
  monthsCounted?: boolean;
  items: ItemCard[];
  /** The position of the page's first item in the filtered listing, when known (else from `page`). */
  first?: number | undefined;
  page: number;
  pageSize: number;
  total: number;
  /** More works match than `total` (the count bound): the page says "more than". */
  more?: boolean;
  /** The feeds the page advertises: the arrivals, or the filtered artist's new work. */
  feeds?: readonly PageFeed[];
  /** The keyset cursor after this page's last item (src/http/browse-cursor.ts), for the link to the next page. */
  next?: string | undefined;
  /** The keyset cursor before this page's first item, for the link to the previous page. */
  prev?: string | undefined;
  /** Why a filter was ignored (a date that does not read), one line each. */
  notices?: string[] | undefined;
};

type TreeNode = { folder: FolderChoice; kind: "folder" | "collection"; children: TreeNode[] };

/** Gallery folders nested under their parent (a parent the mirror lacks puts the child at the top), per owner. */
/** Names in the tree's order, case and accents aside: one collator, not one per comparison (localeCompare with options). */
const NAMES = new Intl.Collator("en", { sensitivity: "base" });

function folderTree(choices: FilterChoices): Map<string, { galleries: TreeNode[]; collections: TreeNode[] }> {
  const byOwner = new Map<string, { galleries: TreeNode[]; collections: TreeNode[] }>();
  const ownerOf = (f: FolderChoice) => {
    const key = f.owner ?? "(unknown owner)";
    let entry = byOwner.get(key);
    if (!entry) byOwner.set(key, (entry = { galleries: [], collections: [] }));
    return entry;
  };
  const byName = (a: TreeNode, b: TreeNode) => NAMES.compare(a.folder.name, b.folder.name);
  const nodes = new Map(choices.galleries.map((f) => [f.folderid, { folder: f, kind: "folder" as const, children: [] as TreeNode[] }]));
  for (const node of nodes.values()) {
    const parent = node.folder.parent ? nodes.get(node.folder.parent) : undefined;
    if (parent && parent !== node) parent.children.push(node);
    else ownerOf(node.folder).galleries.push(node);
  }
  for (const f of choices.collections) ownerOf(f).collections.push({ folder: f, kind: "collection", children: [] });
  // Each list sorted once: sorting every folder's children again per owner was quadratic (a thousand owners'
  // folders took a tenth of a second of each archive page, bench/archive-scale.ts).
  for (const entry of byOwner.values()) {
    entry.galleries.sort(byName);
    entry.collections.sort(byName);
  }
  for (const n of nodes.values()) n.children.sort(byName);
  return new Map([...byOwner].sort(([a], [b]) => NAMES.compare(a, b)));
}

function treeHtml(choices: FilterChoices, f: ArchiveFilter): SafeHtml {
  const selected = f.folder ?? f.collection;
  const branch = (nodes: TreeNode[], depth: number): SafeHtml =>
    depth > 12 || nodes.length === 0
      ? html``
      : html`<ul>${nodes.map(
          (n) =>
            html`<li><a href="/archive${queryString({ [n.kind]: n.folder.folderid, archived: f.archived ? "1" : undefined })}" class="${n.folder.folderid === selected ? "on" : ""}">${n.folder.name}<span class="n">${n.folder.size}</span></a>${branch(n.children, depth + 1)}</li>`,
        )}</ul>`;
  const owners = [...folderTree(choices)];
  if (owners.length === 0) return html``;
  return html`<nav class="tree card" aria-label="Folders"><h2>Folders</h2>
<ul><li><a href="/archive${queryString({ archived: f.archived ? "1" : undefined })}" class="${selected || f.artist ? "" : "on"}">Everything</a></li></ul>
${owners.map(([owner, { galleries, collections }]) => {
  const open = [...galleries, ...collections].some((n) => n.folder.folderid === selected) || owners.length <= 3;
  return html`<details ${open ? raw("open") : ""}><summary>${owner}</summary>
${galleries.length ? html`<div class="small muted">Gallery</div>${branch(galleries, 0)}` : ""}
${collections.length ? html`<div class="small muted">Collections</div>${branch(collections, 0)}` : ""}</details>`;
})}</nav>`;
}

/** A picture's aspect ratio (width / height) for the layout: its stored file's, a square when unknown, kept within 1:5 and 5:1. */
export function aspectOf(file: StoredFileRef | null): number {
  const r = file?.width && file.height && file.width > 0 && file.height > 0 ? file.width / file.height : 1;
  return Math.min(5, Math.max(0.2, r));
}

/**
 * One tile: the small thumbnail, never the original, in a box at the picture's aspect ratio (`--r`: the tile
 * grows by it in its row, gallery.css); a themed placeholder when no thumbnail stands for it. The caption holds
 * the title, the artist and date, and what was stored when it is not the original, each on its own line, so
 * nothing overlaps. data-* feed the lightbox (escaped like any attribute), with `position` the item's place in
 * the whole filtered listing (1 = the newest), not on its page; `itemQuery` keeps the filter for the item
 * page's previous/next.
 */
export function tile(it: ItemCard, position: number, itemQuery = ""): SafeHtml {
  const t = title(it.title);
  const mark = badge(it.file) ?? (it.file || it.type === "journal" || it.type === "literature" ? null : "not archived yet");
  const date = it.publishedAt ? it.publishedAt.toISOString().slice(0, 10) : undefined;
  const meta = `${it.artist ?? "unknown artist"}${date ? ` · ${date}` : ""}`;
  const src = thumbUrl(it.file, "s", it.type);
  const r = aspectOf(it.file);
  const w = it.file?.width ?? 320;
  const h = it.file?.height ?? 320;
  const picture = src.startsWith("/static/")
    ? html`<div class="img ph${src === PLACEHOLDER_URL ? "" : " text"}" role="img" aria-label="${t}"><span>${src === PLACEHOLDER_URL ? "not archived yet" : (it.type ?? "text")}</span></div>`
    : html`<div class="img"><img loading="lazy" decoding="async" width="${w}" height="${h}" src="${src}" alt="${t}"></div>`;
  return html`<a class="thumb" href="/item/${encodeURIComponent(it.deviationid)}${itemQuery}" style="--r:${r.toFixed(4)}" data-jk data-full="${thumbUrl(it.file, "m", it.type)}" data-title="${t}" data-meta="${meta}${mark ? ` · ${mark}` : ""}" data-pos="${position}"${it.file ? html` data-original="/files/${it.file.downloadId}"` : ""}${date ? html` data-date="${date}"` : ""}>
${picture}<div class="cap"><div class="t">${t}</div><div class="a">${meta}</div>${mark ? html`<div class="b"><span class="badge">${mark}</span></div>` : ""}</div></a>`;
}

/** Month names as toLocaleString("en") gives them, without an Intl formatter per month (25 ms a page at 200 000 works). */
const MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const monthName = (month: string) => MONTH_NAMES[Number(month.slice(5, 7)) - 1] ?? month;

/** Whether a date range is at most a month: the grid is headed by day then, by month otherwise. */
function byDay(f: ArchiveFilter): boolean {
  return Boolean(f.from && f.to && f.from.slice(0, 7) === f.to.slice(0, 7) && f.from.length >= 7);
}

/** The tiles under a heading for each month (or day) they span; a filler ends each group's last row, so it is not stretched. */
function gridHtml(v: ArchiveView, from: number, itemQuery: string): SafeHtml {
  const day = byDay(v.filter);
  const parts: SafeHtml[] = [];
  let group: string | undefined;
  v.items.forEach((it, i) => {
    const iso = it.publishedAt?.toISOString() ?? "";
    const key = iso ? iso.slice(0, day ? 10 : 7) : "undated";
    if (key !== group) {
      if (group !== undefined) parts.push(html`<i class="fill" aria-hidden="true"></i>`);
      group = key;
      const label =
        key === "undated" ? "No date" : day ? `${Number(key.slice(8, 10))} ${monthName(key)} ${key.slice(0, 4)}` : `${monthName(key)} ${key.slice(0, 4)}`;
      parts.push(html`<h2 class="group" data-group="${key}">${label}</h2>`);
    }
    parts.push(tile(it, from + i, itemQuery));
  });
  if (parts.length) parts.push(html`<i class="fill" aria-hidden="true"></i>`);
  return html`${parts}`;
}

/** The date scrubber: each month (and year) filters the grid to its dates; the month shown is marked. */
function datesHtml(v: ArchiveView): SafeHtml {
  if (v.months.length < 2 && !v.filter.from && !v.filter.to) return html``;
  const f = v.filter;
  const hrefFor = (from: string | undefined, to: string | undefined) => `/archive${queryString({ ...filterQuery(f), from, to })}`;
  const years = new Map<string, { items: number; links: SafeHtml[] }>();
  for (const m of v.months) {
    if (!m.month) continue;
    const year = m.month.slice(0, 4);
    const entry = years.get(year) ?? { items: 0, links: [] };
    entry.items += m.items;
    const on = f.from === m.month && f.to === m.month;
    entry.links.push(
      html`<a href="${hrefFor(m.month, m.month)}" class="${on ? "on" : ""}"${on ? raw(' aria-current="true"') : ""} title="${v.monthsCounted === false ? m.month : `${m.month}: ${plural(m.items, "item")}`}">${monthName(m.month).slice(0, 3)}</a>`,
    );
    years.set(year, entry);
  }
  return html`<nav class="dates card" aria-label="Dates"><h2>Dates</h2>
${f.from || f.to ? html`<p class="small">Showing ${f.from ?? "the start"} to ${f.to ?? "now"} · <a href="${hrefFor(undefined, undefined)}">all dates</a></p>` : ""}
${[...years].map(([year, y]) => html`<div><a href="${hrefFor(year, year)}" class="y${f.from === year && f.to === year ? " on" : ""}" title="${v.monthsCounted === false ? year : `${year}: ${plural(y.items, "item")}`}">${year}</a> ${y.links}</div>`)}
<form method="get" action="/archive" class="range">${Object.entries(filterQuery(f)).map(([k, val]) =>
    k === "from" || k === "to" || val === undefined ? "" : html`<input type="hidden" name="${k}" value="${val}">`,
  )}<label>From<input type="text" name="from" value="${f.from ?? ""}" placeholder="2024-03"></label><label>To<input type="text" name="to" value="${f.to ?? ""}" placeholder="2024-06-30"></label><button type="submit">Show</button></form></nav>`;
}

/** Newer/older links by cursor; `data-next` lets app.js append the next page instead. */
function cursorPager(v: ArchiveView, base: Record<string, string | undefined>): SafeHtml {
  if (!v.prev && !v.next) return html``;
  const prev = v.prev ? `/archive${queryString({ ...base, before: v.prev })}` : undefined;
  const next = v.next ? `/archive${queryString({ ...base, after: v.next })}` : undefined;
  return html`<nav class="pager" aria-label="Archive pages"${next ? html` data-next="${next}"` : ""}${prev ? html` data-prev="${prev}"` : ""}>${
    prev ? html`<a href="${prev}" rel="prev">‹ newer</a>` : ""
  }${v.first === undefined ? "" : html`<a href="/archive${queryString(base)}">newest</a>`}${next ? html`<a href="${next}" rel="next">older ›</a>` : ""}</nav>`;
}

export function archivePage(v: ArchiveView): string {
  const f = v.filter;
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}" ${selected ? raw("selected") : ""}>${label}</option>`;
  const base = filterQuery(f);
  const from = v.first ?? (v.page - 1) * v.pageSize + 1;
  const pages = Math.max(1, Math.ceil(v.total / v.pageSize));
  const itemQuery = queryString(base);
  const filtered = Boolean(f.artist || f.folder || f.collection || f.archived || f.notFull || f.type || f.tag || f.from || f.to);
  const body = html`
<h1>Archive</h1>
${(v.notices ?? []).map((n) => html`<div class="notice warn" role="status">${n}</div>`)}
<div class="browse"><details class="side"${filtered ? raw(" open") : ""}><summary class="button">Filters, folders and dates${filtered ? " (filtered)" : ""}</summary>
<form class="filters card" method="get" action="/archive">
  <label>Artist<select name="artist">${option("", "all artists", !f.artist)}${v.choices.artists.map((a) => option(a.username, `${a.username} (${a.items})`, a.username.toLowerCase() === f.artist?.toLowerCase()))}</select></label>
  <label>Type<select name="type">${option("", "every type", !f.type)}${ITEM_TYPES.map((t) => option(t, t, t === f.type))}</select></label>
  <label>Tag<input type="text" name="tag" value="${f.tag ?? ""}" placeholder="landscape"></label>
  ${f.folder ? html`<input type="hidden" name="folder" value="${f.folder}">` : ""}${f.collection ? html`<input type="hidden" name="collection" value="${f.collection}">` : ""}${f.from ? html`<input type="hidden" name="from" value="${f.from}">` : ""}${f.to ? html`<input type="hidden" name="to" value="${f.to}">` : ""}
  <label class="check"><input type="checkbox" name="archived" value="1" ${f.archived ? raw("checked") : ""}> archived only</label>
  <label class="check"><input type="checkbox" name="notfull" value="1" ${f.notFull ? raw("checked") : ""}> not archived in full</label>
  <button type="submit" class="apply">Apply</button>${filtered ? html` <a href="/archive">clear</a>` : ""}
</form>
${treeHtml(v.choices, f)}${datesHtml(v)}</details>
<section aria-label="Items" id="grid" tabindex="-1">
${
  v.items.length === 0
    ? html`<div class="card muted">${
        v.more
          ? `More than ${plural(v.total, "item")} match these filters; this page is past the last.`
          : v.total > 0
            ? html`${plural(v.total, "item")} match these filters; this page is past the last (<a href="/archive${queryString({ ...base, page: pages > 1 ? pages : undefined })}">page ${pages}</a>).`
            : "Nothing matches these filters."
      }</div>`
    : countLine(from, from + v.items.length - 1, v.total, v.more)
}
${v.prev ? html`<p class="newer"><a href="/archive${queryString({ ...base, before: v.prev })}" rel="prev">‹ newer items</a></p>` : ""}
<div class="thumbs" data-jk-list>${gridHtml(v, from, itemQuery)}</div>
${cursorPager(v, base)}
</section></div>`;
  return layout({ title: v.first && v.first > 1 ? `Archive, from item ${v.first}` : "Archive", nav: "archive", body, feeds: v.feeds ?? [] });
}
