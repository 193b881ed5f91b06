// The artists the archive holds work of (or that the account watches), and an artist's page: the profile, the works
// (newest first, paged by cursor), the gallery and collection folders, what could not be archived and why, their
// statuses, comments on the profile, and the feed of their new work.
import type { ArtistFolderRow, ArtistListRow, ArtistRow, NotArchivedRow, ShortfallRow, StatusRow } from "../../db/reading.repository.ts";
import { formatTime } from "../../status/units.ts";
import { html, type SafeHtml } from "../../text/html.ts";
import { NOT_ARCHIVABLE_WORDS } from "../../text/not-archivable.ts";
import { layout, type PageFeed, pill, plural, queryString, title } from "./layout.ts";
import { doneNotice, trackBox, type UrlBoxes } from "./track.ts";
import { artistHref, listPager, removedNotice, removedPill, serviceLink, statusBlock, type Works, workTiles } from "./reading.ts";

function artistState(a: ArtistRow): SafeHtml {
  return html`${a.isDeactivated ? html` ${pill("deactivated", "bad")}` : ""}${removedPill(a)}`;
}

export function artistsPage(v: {
  artists: ArtistListRow[];
  next: string | undefined;
  deep: boolean;
  boxes?: UrlBoxes | undefined;
  notice?: string | undefined;
}): string {
  const body = html`<div class="reading"><h1>Artists</h1>
${doneNotice(v.notice)}${v.boxes ? trackBox(v.boxes) : ""}
<p class="small muted">Whoever made a work in the archive, or whom an account watches; by name.</p>
${v.artists.length === 0 ? html`<p class="card muted">No artist yet: the first sync of a gallery, collections or the watch feed brings them.</p>` : ""}
<ol class="rlist artists" data-jk-list aria-label="Artists">${v.artists.map(
    (a) =>
      html`<li data-jk><a href="${artistHref(a.username)}"><b>${a.username}</b></a>${artistState(a)} <span class="small muted">${plural(a.works, "work")} archived${
        a.tagline ? ` · ${a.tagline}` : ""
      }</span></li>`,
  )}</ol>
${listPager("/artists", {}, v.next, v.deep, "Artist pages")}</div>`;
  return layout({ title: "Artists", nav: "artists", body });
}

/** Works listed under "Not archived in full", the newest first; the page says when more follow. */
export const NOT_ARCHIVED_SHOWN = 100;
/** Statuses shown, the newest first; the page says when older ones are archived too. */
export const STATUSES_SHOWN = 20;

export type ArtistView = {
  artist: ArtistRow;
  works: { ids: string[]; all: Works; next: string | undefined; deep: boolean };
  folders: ArtistFolderRow[];
  /** Up to NOT_ARCHIVED_SHOWN + 1 (one more says that more follow); statuses likewise with STATUSES_SHOWN. */
  notArchived: NotArchivedRow[];
  shortfalls: ShortfallRow[];
  statuses: StatusRow[];
  comments: SafeHtml;
  feeds: readonly PageFeed[];
  /** The notice of the box that led here (`?done=`). */
  notice?: string | undefined;
};

function folderList(folders: ArtistFolderRow[], kind: "gallery" | "collection"): SafeHtml {
  const mine = folders.filter((f) => f.kind === kind);
  if (mine.length === 0) return html`<p class="muted small">none archived</p>`;
  const param = kind === "gallery" ? "folder" : "collection";
  const children = new Map<string | null, ArtistFolderRow[]>();
  const ids = new Set(mine.map((f) => f.folderid));
  for (const f of mine) {
    const parent = f.parent && ids.has(f.parent) && f.parent !== f.folderid ? f.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), f]);
  }
  const branch = (parent: string | null, depth: number): SafeHtml => {
    const list = children.get(parent) ?? [];
    return depth > 12 || list.length === 0
      ? html``
      : html`<ul>${list.map(
          (f) =>
            html`<li><a href="/archive${queryString({ [param]: f.folderid })}">${f.name ?? "(unnamed)"}</a>${f.size !== null ? html` <span class="small muted">${f.size}</span>` : ""}${removedPill(
              f,
            )}${branch(f.folderid, depth + 1)}</li>`,
        )}</ul>`;
  };
  return branch(null, 0);
}

export function artistPage(v: ArtistView): string {
  const a = v.artist;
  const base = artistHref(a.username);
  const body = html`<div class="reading">
<p class="crumbs"><a href="/artists">Artists</a> ›</p>
<h1>${a.username}${artistState(a)}</h1>
${doneNotice(v.notice)}${removedNotice(a, "This account")}
<div class="card profile"><dl class="meta">
${a.realName ? html`<dt>name</dt><dd>${a.realName}</dd>` : ""}${a.tagline ? html`<dt>tagline</dt><dd>${a.tagline}</dd>` : ""}${a.country ? html`<dt>country</dt><dd>${a.country}</dd>` : ""}
${a.joinedAt ? html`<dt>joined</dt><dd>${formatTime(a.joinedAt.toISOString())}</dd>` : ""}${a.watchers !== null ? html`<dt>watchers</dt><dd>${a.watchers}</dd>` : ""}${
  a.deviations !== null ? html`<dt>works on the service</dt><dd>${a.deviations}</dd>` : ""
}</dl>
<p class="small links"><a href="/archive${queryString({ artist: a.username })}">their works in the archive browser</a>${v.feeds.map(
    (f) => html` · <a href="${f.href}" class="feed">feed of their new work</a>`,
  )} ${serviceLink(a.profileUrl, "profile on the service")}</p></div>
<section aria-label="Works"><h2>Works</h2>${v.works.ids.length ? workTiles(v.works.ids, v.works.all, "Works", true) : html`<p class="muted">No work archived.</p>`}
${listPager(base, {}, v.works.next, v.works.deep, "Work pages")}</section>
<div class="grid2"><section class="card"><h2>Gallery folders</h2>${folderList(v.folders, "gallery")}</section>
<section class="card"><h2>Collections</h2>${folderList(v.folders, "collection")}</section></div>
<section class="card" aria-label="Not archived in full"><h2>Not archived in full</h2>
${v.notArchived.length === 0 && v.shortfalls.length === 0 ? html`<p class="muted">Everything listed was archived.</p>` : ""}
${v.shortfalls.map(
  (s) =>
    html`<p>${pill(NOT_ARCHIVABLE_WORDS.hidden_mature.label, "warn")} ${s.expected - s.listed} of ${s.expected} works not shown by the ${s.source} listing: ${NOT_ARCHIVABLE_WORDS.hidden_mature.why}. <span class="small muted">${NOT_ARCHIVABLE_WORDS.hidden_mature.action}</span></p>`,
)}
${
  v.notArchived.length
    ? html`<ul class="rlist">${v.notArchived
        .slice(0, NOT_ARCHIVED_SHOWN)
        .map(
          (w) =>
            html`<li><a href="/item/${encodeURIComponent(w.deviationid)}">${title(w.title)}</a> ${
              w.reason ? html`${pill(NOT_ARCHIVABLE_WORDS[w.reason].label, "warn")} <span class="small">${NOT_ARCHIVABLE_WORDS[w.reason].why}</span>` : ""
            }${w.download ? html` ${pill("download", "bad")} <span class="small">${w.download}</span>` : ""}${removedPill(w)}</li>`,
        )}</ul>${
        v.notArchived.length > NOT_ARCHIVED_SHOWN
          ? html`<p class="small muted">The newest ${NOT_ARCHIVED_SHOWN} are listed, and more follow. <a href="/archive?artist=${encodeURIComponent(a.username)}&amp;notfull=1">Their works without an original</a> in the grid.</p>`
          : ""
      }`
    : ""
}</section>
<section aria-label="Statuses"><h2>Statuses</h2>${
    v.statuses.length
      ? html`<div data-jk-list>${v.statuses.slice(0, STATUSES_SHOWN).map((s) => statusBlock(s, v.works.all))}</div>${
          v.statuses.length > STATUSES_SHOWN
            ? html`<p class="small muted">The newest ${STATUSES_SHOWN} are shown; older ones are archived too (the statuses table).</p>`
            : ""
        }`
      : html`<p class="muted">No status archived.</p>`
  }</section>
${v.comments}</div>`;
  return layout({ title: a.username, nav: "artists", body, feeds: v.feeds });
}
