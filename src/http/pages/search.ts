// Search results (/archive?q=…), paged with totals, saying which words were ignored. Every hit links to the page of
// what it is: a work to its item page, a journal or literature to its reading view, a comment to the thread it is in
// (/comments/:id finds the page), a note to its thread, a message to its page. The snippet is text, escaped, its
// matched words in <mark>.
import type { StoredFileRef } from "../../db/archive-browser.repository.ts";
import { HIGHLIGHT_END, HIGHLIGHT_START, SEARCH_KINDS, type SearchHit } from "../../search/search.ts";
import { html, raw, type SafeHtml } from "../../text/html.ts";
import { badge, thumbUrl } from "./files.ts";
import { group, layout, pager, pill, plural, queryString, title } from "./layout.ts";

/** A snippet with its highlight markers turned into <mark>, everything else escaped. */
function snippetHtml(snippet: string): SafeHtml {
  const parts = snippet.split(new RegExp(`(${HIGHLIGHT_START}[^${HIGHLIGHT_END}]*${HIGHLIGHT_END})`));
  return html`${parts.map((p) => (p.startsWith(HIGHLIGHT_START) ? html`<mark>${p.slice(1, -1)}</mark>` : p))}`;
}

/** The page a hit opens. */
export function hitHref(h: Pick<SearchHit, "kind" | "id">): string {
  const id = encodeURIComponent(h.id);
  switch (h.kind) {
    case "journal":
    case "literature":
      return `/read/${id}`;
    case "comment":
      return `/comments/${id}`;
    case "note":
      return `/notes/${id}`;
    case "message":
      return `/messages/${id}`;
    default:
      return `/item/${id}`;
  }
}

export type SearchView = {
  query: string;
  type?: string | undefined;
  hits: SearchHit[];
  total: number;
  /** More hits match than `total`: the page ranks the newest `total` of them only. */
  more?: boolean;
  page: number;
  pageSize: number;
  ignored: string[];
  files: Map<string, StoredFileRef>;
};

export function searchPage(v: SearchView): string {
  const { query, type, hits, files } = v;
  const pages = Math.max(1, Math.ceil(v.total / v.pageSize));
  const from = (v.page - 1) * v.pageSize + 1;
  const body = html`
<h1>Search</h1>
<form class="filters" method="get" action="/archive">
  <label>Words<input type="search" name="q" value="${query}"></label>
  <label>Kind<select name="type"><option value="">everything</option>${SEARCH_KINDS.map((k) => html`<option value="${k}" ${k === type ? raw("selected") : ""}>${k}</option>`)}</select></label>
  <button type="submit">Search</button>
</form>
<p class="small muted">Words match their forms (paint, painted); "quoted words" match a phrase, -word excludes, "or" offers alternatives — as in <span class="fix">dvault search</span>.</p>
${v.ignored.length ? html`<div class="notice warn" role="status">Ignored ${v.ignored.length === 1 ? "a word that is" : "words that are"} too common to search for: ${v.ignored.map((w) => `“${w}”`).join(", ")}.</div>` : ""}
<div class="card"><p class="muted small" data-hits="${v.total}"${v.more ? raw(' data-more="true"') : ""}>${
    v.total === 0
      ? `No result for “${query}”`
      : hits.length === 0
        ? `${v.more ? `More than ${plural(v.total, "result")}` : plural(v.total, "result")} for “${query}”; this page is past the last`
        : v.more
          ? `${from}–${from + hits.length - 1} of more than ${plural(v.total, "result")} for “${query}”, ranked among the newest ${group(v.total)} (add words to narrow the search)`
          : `${from}–${from + hits.length - 1} of ${plural(v.total, "result")} for “${query}”`
  }</p>
<ol class="hits" data-jk-list>${hits.map((h) => {
    const file = h.deviationid ? files.get(h.deviationid) : undefined;
    const kindType = h.kind === "journal" || h.kind === "literature" ? h.kind : undefined;
    const mark = badge(file ?? null);
    const label = h.kind === "note" || h.kind === "message" || h.kind === "comment" ? h.title?.trim() || `(${h.kind})` : title(h.title);
    return html`<li class="hit" data-jk data-kind="${h.kind}"><div class="img">${h.deviationid ? html`<img loading="lazy" src="${thumbUrl(file, "s", kindType)}" alt="">` : ""}</div>
<div><div>${pill(h.kind)} <a href="${hitHref(h)}"><b>${label}</b></a>
<span class="muted small">${h.artist ? `by ${h.artist}` : ""}${h.date ? ` · ${h.date.slice(0, 10)}` : ""}</span>${mark ? html` ${pill(mark, "warn")}` : ""}</div>
<div class="small excerpt">${snippetHtml(h.snippet)}</div></div></li>`;
  })}</ol></div>
${pager(v.page, pages, (p) => `/archive${queryString({ q: query, type, page: p > 1 ? p : undefined })}`, "Result pages")}`;
  return layout({ title: `Search: ${query}`, nav: "archive", body, query });
}
