// The archive browser: a folder tree (owner → gallery folders nested by parent, collections) beside a square
// grid of thumbnails, paged with totals (app.js appends the next page as the pager scrolls into view and opens
// tiles in a lightbox). Search results are src/http/pages/search.ts.
import type { FilterChoices, FolderChoice, ItemCard } from "../../db/archive-browser.repository.ts";
import { html, raw, type SafeHtml } from "../../text/html.ts";
import { badge, thumbUrl } from "./files.ts";
import { countLine, layout, type PageFeed, pager, plural, queryString, title } from "./layout.ts";

export type ArchiveFilter = { artist?: string | undefined; folder?: string | undefined; collection?: string | undefined; archived: boolean };

export type ArchiveView = {
  filter: ArchiveFilter;
  choices: FilterChoices;
  /** Items per month, newest first (null: no publication date), for the date scrubber. */
  months: Array<{ month: string | null; items: number }>;
  items: ItemCard[];
  page: number;
  pageSize: number;
  total: number;
  /** The feeds the page advertises: the arrivals, or the filtered artist's new work. */
  feeds?: readonly PageFeed[];
  /** The keyset cursor after this page's last item (src/http/browse-cursor.ts), for the link to the next page. */
  next?: string | undefined;
};

type TreeNode = { folder: FolderChoice; kind: "folder" | "collection"; children: TreeNode[] };

/** Gallery folders nested under their parent (a parent the mirror lacks puts the child at the top), per owner. */
function folderTree(choices: FilterChoices): Map<string, { galleries: TreeNode[]; collections: TreeNode[] }> {
  const byOwner = new Map<string, { galleries: TreeNode[]; collections: TreeNode[] }>();
  const ownerOf = (f: FolderChoice) => {
    const key = f.owner ?? "(unknown owner)";
    let entry = byOwner.get(key);
    if (!entry) byOwner.set(key, (entry = { galleries: [], collections: [] }));
    return entry;
  };
  const byName = (a: TreeNode, b: TreeNode) => a.folder.name.localeCompare(b.folder.name, "en", { sensitivity: "base" });
  const nodes = new Map(choices.galleries.map((f) => [f.folderid, { folder: f, kind: "folder" as const, children: [] as TreeNode[] }]));
  for (const node of nodes.values()) {
    const parent = node.folder.parent ? nodes.get(node.folder.parent) : undefined;
    if (parent && parent !== node) parent.children.push(node);
    else ownerOf(node.folder).galleries.push(node);
  }
  for (const f of choices.collections) ownerOf(f).collections.push({ folder: f, kind: "collection", children: [] });
  for (const entry of byOwner.values()) {
    entry.galleries.sort(byName);
    entry.collections.sort(byName);
    for (const n of nodes.values()) n.children.sort(byName);
  }
  return new Map([...byOwner].sort(([a], [b]) => a.localeCompare(b, "en", { sensitivity: "base" })));
}

function treeHtml(choices: FilterChoices, f: ArchiveFilter): SafeHtml {
  const selected = f.folder ?? f.collection;
  const branch = (nodes: TreeNode[], depth: number): SafeHtml =>
    depth > 12 || nodes.length === 0
      ? html``
      : html`<ul>${nodes.map(
          (n) =>
            html`<li><a href="/archive${queryString({ [n.kind]: n.folder.folderid, archived: f.archived })}" class="${n.folder.folderid === selected ? "on" : ""}">${n.folder.name}<span class="n">${n.folder.size}</span></a>${branch(n.children, depth + 1)}</li>`,
        )}</ul>`;
  const owners = [...folderTree(choices)];
  if (owners.length === 0) return html``;
  return html`<nav class="tree card" aria-label="Folders"><h2>Folders</h2>
<ul><li><a href="/archive${queryString({ archived: f.archived })}" class="${selected || f.artist ? "" : "on"}">Everything</a></li></ul>
${owners.map(([owner, { galleries, collections }]) => {
  const open = [...galleries, ...collections].some((n) => n.folder.folderid === selected) || owners.length <= 3;
  return html`<details ${open ? raw("open") : ""}><summary>${owner}</summary>
${galleries.length ? html`<div class="small muted">Gallery</div>${branch(galleries, 0)}` : ""}
${collections.length ? html`<div class="small muted">Collections</div>${branch(collections, 0)}` : ""}</details>`;
})}</nav>`;
}

/**
 * One tile: the small thumbnail, never the original; data-* for the lightbox (escaped like any attribute), with
 * `position` the item's place in the whole filtered listing (1 = the newest), not on its page.
 */
export function tile(it: ItemCard, position: number): SafeHtml {
  const t = title(it.title);
  const mark = badge(it.file) ?? (it.file || it.type === "journal" || it.type === "literature" ? null : "not archived yet");
  const meta = `${it.artist ?? "unknown artist"}${it.publishedAt ? ` · ${it.publishedAt.toISOString().slice(0, 10)}` : ""}`;
  return html`<a class="thumb" href="/item/${encodeURIComponent(it.deviationid)}" data-full="${thumbUrl(it.file, "m", it.type)}" data-title="${t}" data-meta="${meta}${mark ? ` · ${mark}` : ""}" data-pos="${position}">
<div class="img"><img loading="lazy" decoding="async" width="320" height="320" src="${thumbUrl(it.file, "s", it.type)}" alt="${t}">${mark ? html`<span class="badge">${mark}</span>` : ""}</div>
<div class="cap"><div class="t">${t}</div><div class="a">${meta}</div></div></a>`;
}

/** Short month names as toLocaleString("en") gives them, without an Intl formatter per month (25 ms a page at 200 000 works). */
const MONTH_NAMES = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** The date scrubber: each month links to the page its newest item is on (plain links, newest first). */
function datesHtml(v: ArchiveView, href: (page: number) => string): SafeHtml {
  if (v.months.length < 2) return html``;
  let before = 0;
  const years = new Map<string, SafeHtml[]>();
  for (const m of v.months) {
    const page = Math.floor(before / v.pageSize) + 1;
    before += m.items;
    const year = m.month?.slice(0, 4) ?? "undated";
    const label = m.month ? (MONTH_NAMES[Number(m.month.slice(5, 7)) - 1] ?? m.month) : "no date";
    const links = years.get(year) ?? [];
    links.push(html`<a href="${href(page)}" class="${page === v.page ? "on" : ""}" title="${m.month ?? "no date"}: ${plural(m.items, "item")}">${label}</a>`);
    years.set(year, links);
  }
  return html`<nav class="dates card" aria-label="Dates"><h2>Dates</h2>${[...years].map(([year, links]) => html`<div><b>${year}</b> ${links}</div>`)}</nav>`;
}

export function archivePage(v: ArchiveView): string {
  const f = v.filter;
  const option = (value: string, label: string, selected: boolean) => html`<option value="${value}" ${selected ? raw("selected") : ""}>${label}</option>`;
  const base = { artist: f.artist, folder: f.folder, collection: f.collection, archived: f.archived };
  const pages = Math.max(1, Math.ceil(v.total / v.pageSize));
  const from = (v.page - 1) * v.pageSize + 1;
  // The next page is read after this one's last item (keyset), so scrolling deep never walks past an offset.
  const pageHref = (p: number) => `/archive${queryString({ ...base, page: p > 1 ? p : undefined, after: p === v.page + 1 ? v.next : undefined })}`;
  const body = html`
<h1>Archive</h1>
<form class="filters" method="get" action="/archive">
  <label>Search<input type="search" name="q" placeholder="words, tags, text…"></label>
  <label>Artist<select name="artist">${option("", "all artists", !f.artist)}${v.choices.artists.map((a) => option(a.username, `${a.username} (${a.items})`, a.username.toLowerCase() === f.artist?.toLowerCase()))}</select></label>
  ${f.folder ? html`<input type="hidden" name="folder" value="${f.folder}">` : ""}${f.collection ? html`<input type="hidden" name="collection" value="${f.collection}">` : ""}
  <label class="check"><input type="checkbox" name="archived" value="1" ${f.archived ? raw("checked") : ""}> archived only</label>
  <button type="submit">Apply</button>
</form>
<div class="browse"><div class="side">${treeHtml(v.choices, f)}${datesHtml(v, pageHref)}</div>
<section aria-label="Items">
${
  v.items.length === 0
    ? html`<div class="card muted">${v.total > 0 ? html`${plural(v.total, "item")} match these filters; this page is past the last (<a href="${pageHref(pages)}">page ${pages}</a>).` : "Nothing matches these filters."}</div>`
    : countLine(from, from + v.items.length - 1, v.total)
}
<div class="thumbs">${v.items.map((it, i) => tile(it, from + i))}</div>
${pager(v.page, pages, pageHref, "Archive pages")}
</section></div>`;
  return layout({ title: v.page > 1 ? `Archive, page ${v.page}` : "Archive", nav: "archive", body, feeds: v.feeds ?? [] });
}
