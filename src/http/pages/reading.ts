// The pages of what the archive holds besides pictures: notes and their threads, messages and their stacks,
// comments as threads, statuses, the watch feed and a journal's or literature's reading view. Server-rendered with
// html`` (escaped); the service's HTML goes through the allow-list sanitizer (src/text/inert-html.ts) with its
// images rewritten: a picture dvault archived shows as its own thumbnail, any other becomes a link to where it was
// (the page's CSP loads only dvault's own images). Lists page by keyset cursors (src/http/reading-cursor.ts).
import type { StoredFileRef } from "../../db/archive-browser.repository.ts";
import type { CommentRow, MessageRow, NoteFolderRow, NoteRow, ReadingRow, Removal, StatusRow, WatchItemRow, WorkCard } from "../../db/reading.repository.ts";
import { formatTime } from "../../status/units.ts";
import { html, raw, type SafeHtml } from "../../text/html.ts";
import { neutralizeControls } from "../../text/controls.ts";
import { type ImgTransform, inertHtml } from "../../text/inert-html.ts";
import { thumbUrl } from "./files.ts";
import { layout, type NavKey, pill, queryString, title } from "./layout.ts";

// ---- shared pieces ---------------------------------------------------------------------------------------------

/** What each removed_reason means, in a reader's words. */
const REMOVED_WORDS: Record<string, string> = {
  deleted: "deleted on the service",
  deactivated: "the artist's account is deactivated",
  artist_deactivated: "the artist's account is deactivated",
  artist_suspended: "the artist's account is suspended",
  artist_not_found: "the artist's account is not found (deleted or renamed)",
  access_lost: "the account lost access to it",
  gone_from_listing: "no longer listed where it was",
  unavailable: "the service refuses it without saying it is gone",
};

/** "Removed upstream on … : why", with the service's own answer when it was kept (migration 20261128010000_gone_answers). */
export function removedNotice(r: Removal & { removedAnswer?: Record<string, unknown> | null }, what = "This"): SafeHtml {
  if (!r.removedAt) return html``;
  const reason = r.removedReason ?? "removed";
  const answer = r.removedAnswer;
  const said = answer
    ? [answer.status, answer.error, answer.error_description ?? (answer.is_deleted === true ? "is_deleted" : undefined)]
        .filter((x) => x !== undefined && x !== null)
        .join(" · ")
    : "";
  return html`<p class="gone" role="status" data-removed="${reason}">${pill("removed upstream", "bad")} ${what} was removed upstream on <time datetime="${r.removedAt.toISOString()}">${formatTime(r.removedAt.toISOString())}</time>: ${REMOVED_WORDS[reason] ?? reason}.${said ? html` The service answered: <span class="fix">${said}</span>.` : ""} The archive keeps what it had.</p>`;
}

/** In a list: " removed upstream" with why and when, in a few words. */
export function removedPill(r: Removal): SafeHtml {
  if (!r.removedAt) return html``;
  const reason = r.removedReason ?? "removed";
  return html` ${pill("removed upstream", "bad")} <span class="small muted">${REMOVED_WORDS[reason] ?? reason}, ${day(r.removedAt)}</span>`;
}

export const artistHref = (username: string) => `/artists/${encodeURIComponent(username)}`;
export const workHref = (w: { deviationid: string; type: string | null }) =>
  `${w.type === "journal" || w.type === "literature" ? "/read" : "/item"}/${encodeURIComponent(w.deviationid)}`;
const day = (d: Date | null) => (d ? d.toISOString().slice(0, 10) : "");
const when = (d: Date | null) =>
  d ? html`<time datetime="${d.toISOString()}">${formatTime(d.toISOString())}</time>` : html`<span class="muted">undated</span>`;
export const byline = (username: string | null) =>
  username ? html`<a href="${artistHref(username)}">${username}</a>` : html`<span class="muted">unknown</span>`;

/** Only http(s) links from the service become hrefs. */
export function serviceUrl(url: string | null | undefined): string | undefined {
  return url && /^https?:\/\//i.test(url) ? url : undefined;
}
export const serviceLink = (url: string | null | undefined, label = "on the service") => {
  const href = serviceUrl(url);
  return href ? html`<a href="${href}" rel="noopener noreferrer" class="out">${label} ↗</a>` : html``;
};

/** The works a page shows as tiles: their cards and best stored files. */
export type Works = { cards: Map<string, WorkCard>; files: Map<string, StoredFileRef> };

/** A work's tile; `jk` when it is a row of its own list for j/k (not inside another row). */
export function workTile(id: string, works: Works, jk = false): SafeHtml {
  const w = works.cards.get(id);
  const mark = jk ? raw(" data-jk") : "";
  if (!w) return html`<li class="rtile missing"${mark}><span class="muted small">a work the archive does not hold (${id})</span></li>`;
  const t = title(w.title);
  return html`<li class="rtile"${mark}><a href="${workHref(w)}"><img loading="lazy" decoding="async" width="160" height="160" src="${thumbUrl(works.files.get(id), "s", w.type)}" alt="">
<span class="t">${t}</span></a><span class="a small muted">${w.artist ?? "unknown"}${w.publishedAt ? ` · ${day(w.publishedAt)}` : ""}</span>${removedPill(w)}</li>`;
}

export function workTiles(ids: readonly string[], works: Works, label: string, jk = false): SafeHtml {
  return ids.length ? html`<ul class="rtiles" aria-label="${label}"${jk ? raw(" data-jk-list") : ""}>${ids.map((id) => workTile(id, works, jk))}</ul>` : html``;
}

/**
 * The service's HTML made inert, its pictures the archive's thumbnails (`local`: src → sha256) or links to where they
 * were, and its direction overrides made visible as html`` does for every other text (src/text/controls.ts).
 */
export function storedHtml(fragment: string | null | undefined, local: ReadonlyMap<string, string> = new Map()): SafeHtml {
  if (!fragment) return html``;
  return raw(
    neutralizeControls(
      inertHtml(fragment, (a): ReturnType<ImgTransform> => {
        const src = a.src ?? "";
        const sha = local.get(src.split("?")[0] ?? "");
        if (sha) return { tagName: "img", attribs: { src: `/thumb/m/${sha}.webp`, alt: a.alt ?? "", class: "embed" } };
        const href = serviceUrl(src);
        const label = `picture not archived${a.alt ? `: ${a.alt}` : ""}`;
        return href
          ? { tagName: "a", attribs: { href, class: "embed-missing", title: href }, text: label }
          : { tagName: "span", attribs: { class: "embed-missing" }, text: label };
      }),
    ),
  );
}

/** The http(s) pictures of a fragment, their query left off (the service's signatures), to look up in the archive. */
export function embeddedSrcs(fragment: string | null | undefined): string[] {
  if (!fragment) return [];
  const found = new Set<string>();
  inertHtml(fragment, (a) => {
    const src = serviceUrl(a.src);
    if (src) found.add(src.split("?")[0] ?? src);
    return { tagName: "img", attribs: a };
  });
  return [...found].slice(0, 100);
}

/** "Newest" and "Next page ›": the next page is read after this one's last row; Back returns to the same address. */
export function listPager(path: string, params: Record<string, string | undefined>, next: string | undefined, deep: boolean, label: string): SafeHtml {
  if (!next && !deep) return html``;
  return html`<nav class="pager" aria-label="${label}">${deep ? html`<a href="${path}${queryString(params)}" rel="first">« newest</a>` : ""}${
    next ? html`<a href="${path}${queryString({ ...params, after: next })}" rel="next">next page ›</a>` : html`<span class="muted small">end of the list</span>`
  }</nav>`;
}

function page(titleText: string, nav: NavKey | undefined, body: SafeHtml): string {
  return layout({ title: titleText, ...(nav ? { nav } : {}), body: html`<div class="reading">${body}</div>` });
}

// ---- notes -----------------------------------------------------------------------------------------------------

export type NotesView = {
  folders: NoteFolderRow[];
  folder: string | undefined;
  flag: "sent" | "received" | "unread" | "starred" | undefined;
  notes: NoteRow[];
  next: string | undefined;
  deep: boolean;
};

function noteFlags(n: NoteRow): SafeHtml {
  return html`${n.sent ? pill("sent") : pill("received")}${n.unread ? html` ${pill("unread", "warn")}` : ""}${n.starred ? html` ${pill("★ starred", "ok")}` : ""}${removedPill(n)}`;
}

const recipientsOf = (n: NoteRow) => (n.recipients ?? []).map((r) => r.username).filter((u): u is string => Boolean(u));

export function notesPage(v: NotesView): string {
  const params = { folder: v.folder, flag: v.flag };
  const chip = (label: string, p: Record<string, string | undefined>, on: boolean) =>
    html`<a href="/notes${queryString(p)}" class="${on ? "on" : ""}"${on ? raw(' aria-current="true"') : ""}>${label}</a>`;
  const body = html`<h1>Notes</h1>
<nav class="chips" aria-label="Note folders">${chip("all", {}, !v.folder && !v.flag)}${(["received", "sent", "unread", "starred"] as const).map((f) => chip(f, { flag: f }, v.flag === f))}
${v.folders.map((f) => chip(`${f.title ?? "(untitled folder)"}${f.count !== null ? ` (${f.count})` : ""}`, { folder: f.folderid }, v.folder === f.folderid))}</nav>
${v.notes.length === 0 ? html`<p class="card muted">No note here.</p>` : ""}
<ol class="rlist" data-jk-list aria-label="Notes">${v.notes.map(
    (
      n,
    ) => html`<li data-jk class="${n.unread ? "unread" : ""}"><a href="/notes/${encodeURIComponent(n.noteid)}"><b>${n.subject?.trim() || "(no subject)"}</b></a>
<div class="small muted">${n.sent ? html`to ${recipientsOf(n).join(", ") || "?"}` : html`from ${n.sender ?? "?"}`} · ${when(n.ts)} · ${n.account}</div>
<div class="small">${noteFlags(n)}</div>${n.preview ? html`<p class="excerpt">${n.preview}</p>` : ""}</li>`,
  )}</ol>
${listPager("/notes", params, v.next, v.deep, "Note pages")}`;
  return page("Notes", "notes", body);
}

/** A thread read top to bottom; `focus` is the note that was asked for. */
export function noteThreadPage(thread: NoteRow[], focus: string): string {
  const first = thread[0];
  const subject = first?.subject?.trim() || "(no subject)";
  const body = html`<p class="crumbs"><a href="/notes">Notes</a> ›</p><h1>${subject}</h1>
<p class="small muted">${thread.length === 1 ? "One note" : `${thread.length} notes`}, oldest first · ${first?.account ?? ""}</p>
<ol class="thread" data-jk-list aria-label="Notes of this thread">${thread.map(
    (n) => html`<li data-jk id="note-${n.noteid}" class="note ${n.noteid === focus ? "focus" : ""} ${n.sent ? "sent" : "received"}"><article>
<div class="head"><b>${n.sent ? "You" : byline(n.sender)}</b> ${n.sent ? html`<span class="muted">to ${recipientsOf(n).join(", ") || "?"}</span>` : ""} · ${when(n.ts)} ${noteFlags(n)}</div>
${removedNotice(n, "This note")}
<div class="body">${n.body ? storedHtml(n.body) : html`<p>${n.preview ?? ""}</p>`}</div></article></li>`,
  )}</ol>`;
  return page(subject, "notes", body);
}

// ---- messages ----------------------------------------------------------------------------------------------------

export const MESSAGE_KINDS = { feed: "notifications", feedback: "feedback", mentions: "mentions" } as const;
export type MessageBox = keyof typeof MESSAGE_KINDS;

function messageAbout(m: MessageRow): SafeHtml {
  const parts: SafeHtml[] = [];
  if (m.subjectDeviationid) parts.push(html`<a href="/item/${encodeURIComponent(m.subjectDeviationid)}">${title(m.subjectTitle)}</a>`);
  if (m.subjectStatusid) parts.push(html`<a href="/statuses/${encodeURIComponent(m.subjectStatusid)}">a status</a>`);
  if (m.subjectCommentid) parts.push(html`<a href="/comments/${encodeURIComponent(m.subjectCommentid)}">a comment</a>`);
  if (m.subjectUser) parts.push(byline(m.subjectUser));
  return parts.length ? html`<span class="small">about ${parts.map((p, i) => html`${i ? ", " : ""}${p}`)}</span>` : html``;
}

function messageItem(m: MessageRow, inStack = false): SafeHtml {
  const stacked = !inStack && m.stackid && (m.stackCount ?? 0) > 1;
  return html`<li data-jk class="${m.isNew ? "unread" : ""}"><div>${pill(MESSAGE_KINDS[m.box as MessageBox] ?? m.box)} <a href="/messages/${encodeURIComponent(m.messageid)}"><b>${m.type ?? "message"}</b></a>
${m.originator ? html`from ${byline(m.originator)}` : ""} ${messageAbout(m)} <span class="small muted">· ${when(m.ts)}</span>${m.isNew ? html` ${pill("new", "warn")}` : ""}${removedPill(
    m,
  )}</div>
${m.html ? html`<div class="excerpt small">${storedHtml(m.html)}</div>` : ""}${stacked ? html`<a class="small" href="/messages/stack/${encodeURIComponent(m.stackid ?? "")}">open the stack of ${m.stackCount}</a>` : ""}</li>`;
}

export const MESSAGES_PAGE_SIZE = 200;

export function messagesPage(v: { box: MessageBox | undefined; messages: MessageRow[]; next: string | undefined; deep: boolean }): string {
  const chip = (label: string, kind: string | undefined) =>
    html`<a href="/messages${queryString({ kind })}" class="${v.box === kind ? "on" : ""}"${v.box === kind ? raw(' aria-current="true"') : ""}>${label}</a>`;
  const body = html`<h1>Messages</h1>
<nav class="chips" aria-label="Kinds of message">${chip("all", undefined)}${Object.entries(MESSAGE_KINDS).map(([k, label]) => chip(label, k))}</nav>
${v.messages.length === 0 ? html`<p class="card muted">No message here.</p>` : ""}
<ol class="rlist" data-jk-list aria-label="Messages">${v.messages.map((m) => messageItem(m))}</ol>
${listPager("/messages", { kind: v.box }, v.next, v.deep, "Message pages")}`;
  return page(v.box ? `Messages: ${MESSAGE_KINDS[v.box]}` : "Messages", "messages", body);
}

export function messagePageOne(m: MessageRow): string {
  const body = html`<p class="crumbs"><a href="/messages">Messages</a> ›</p><h1>${m.type ?? "message"}</h1>
${removedNotice(m, "This message")}
<dl class="meta"><dt>kind</dt><dd>${MESSAGE_KINDS[m.box as MessageBox] ?? m.box}</dd><dt>from</dt><dd>${byline(m.originator)}</dd><dt>when</dt><dd>${when(m.ts)}</dd>
<dt>about</dt><dd>${messageAbout(m)}</dd>${m.stackid && (m.stackCount ?? 0) > 1 ? html`<dt>stack</dt><dd><a href="/messages/stack/${encodeURIComponent(m.stackid)}">${m.stackCount} messages</a></dd>` : ""}</dl>
${m.html ? html`<div class="card body">${storedHtml(m.html)}</div>` : ""}`;
  return page(m.type ?? "Message", "messages", body);
}

/** A stack's page: its newest MESSAGES_PAGE_SIZE messages of the up to one more read (which says that more are archived). */
export function stackPage(stackid: string, read: MessageRow[]): string {
  const messages = read.slice(0, MESSAGES_PAGE_SIZE);
  const head = messages[0];
  const archived =
    read.length > MESSAGES_PAGE_SIZE ? `The newest ${MESSAGES_PAGE_SIZE} of more than ${MESSAGES_PAGE_SIZE} messages` : `${messages.length} messages`;
  const body = html`<p class="crumbs"><a href="/messages">Messages</a> ›</p><h1>Stack: ${head?.type ?? "messages"}${head?.subjectTitle ? ` on ${head.subjectTitle}` : ""}</h1>
<p class="small muted">${archived} archived in this stack${head?.stackCount ? ` (the service counted ${head.stackCount})` : ""}, newest first · <span class="fix">${stackid}</span></p>
<ol class="rlist" data-jk-list aria-label="Messages of this stack">${messages.map((m) => messageItem(m, true))}</ol>`;
  return page("Message stack", "messages", body);
}

// ---- comments ----------------------------------------------------------------------------------------------------

type CommentNode = { c: CommentRow; replies: CommentNode[] };

/** Where a page of comments stands in its subject's thread, and the links to its first and next page. */
export type CommentPaging = {
  total: number;
  /** The place of the page's first comment in the thread (1 = the oldest). */
  firstShown: number;
  first: string | undefined;
  next: string | undefined;
  /** The address's comments_from= was not one dvault wrote: the first page is shown instead. */
  badCursor: boolean;
};

/** Which of a thread's comments a page shows, and the links to the others: nothing when it shows them all. */
function commentPages(shown: number, p: CommentPaging | undefined): SafeHtml {
  if (!p) return html``;
  const bad = p.badCursor ? html`<p class="small warn">That comments_from= is not one dvault wrote: the oldest comments are shown.</p>` : html``;
  if (shown === p.total && !p.first) return bad;
  const range = shown === 0 ? "none" : `${p.firstShown.toLocaleString("en")}–${(p.firstShown + shown - 1).toLocaleString("en")}`;
  return html`${bad}<p class="small muted">Comments ${range} of ${p.total.toLocaleString("en")} archived, oldest first.${
    p.first ? html` <a href="${p.first}" rel="first">From the oldest</a>` : ""
  }${p.next ? html` <a href="${p.next}" data-comments-next>Newer comments (${Math.max(0, p.total - (p.firstShown + shown - 1)).toLocaleString("en")} more)</a>` : ""}</p>`;
}

/**
 * Comments as threads: each reply under its parent (one whose parent the archive lacks, or shows on another page,
 * starts a thread), oldest first; `paging` says which of a longer thread's comments these are.
 */
export function commentThread(comments: readonly CommentRow[], heading = "Comments", paging?: CommentPaging): SafeHtml {
  const nodes = new Map(comments.map((c) => [c.commentid, { c, replies: [] as CommentNode[] }]));
  const roots: CommentNode[] = [];
  for (const n of nodes.values()) {
    const parent = n.c.parentid ? nodes.get(n.c.parentid) : undefined;
    if (parent && parent !== n) parent.replies.push(n);
    else roots.push(n);
  }
  const seen = new Set<string>();
  const branch = (list: CommentNode[], depth: number): SafeHtml =>
    html`<ol class="${depth === 0 ? "comments" : "replies"}"${depth === 0 ? raw(" data-jk-list") : ""}>${list.map((n) => {
      if (seen.has(n.c.commentid)) return "";
      seen.add(n.c.commentid);
      const c = n.c;
      return html`<li id="c-${c.commentid}" data-depth="${depth}"><article class="comment" data-jk><div class="head">${byline(c.author)} · ${when(c.postedAt)}${c.likes ? html` · ♥ ${c.likes}` : ""}${
        c.hidden ? html` ${pill(c.hidden.replaceAll("_", " "), "warn")}` : ""
      }${removedPill(c)} <a class="small muted" href="#c-${c.commentid}" aria-label="link to this comment">#</a></div>
<div class="body">${storedHtml(c.body)}</div></article>${n.replies.length ? branch(n.replies, depth + 1) : ""}</li>`;
    })}</ol>`;
  const pages = commentPages(comments.length, paging);
  return html`<section class="card comment-thread" id="comments" aria-label="${heading}"><h2>${heading} <span class="muted small">${(paging?.total ?? comments.length).toLocaleString("en")}</span></h2>${pages}${
    comments.length ? branch(roots, 0) : html`<p class="muted">No comment archived.</p>`
  }${comments.length > 20 ? pages : ""}</section>`;
}

// ---- statuses ----------------------------------------------------------------------------------------------------

/** A status with the works it shares; `jk` when it is a row of its own list for j/k. */
export function statusBlock(s: StatusRow, works: Works, link = true, jk = true): SafeHtml {
  return html`<article class="status"${jk ? raw(" data-jk") : ""}><div class="head">${byline(s.author)} · ${link ? html`<a href="/statuses/${encodeURIComponent(s.statusid)}">${when(s.postedAt)}</a>` : when(s.postedAt)}${
    s.commentsCount ? html` · ${s.commentsCount} comments` : ""
  }${s.removedAt ? removedPill(s) : s.isDeleted ? html` ${pill("deleted on the service", "bad")}` : ""}</div>
<div class="body">${storedHtml(s.body)}</div>${workTiles(s.sharedDeviationids, works, "Shared works")}</article>`;
}

export function statusPage(s: StatusRow, works: Works, comments: SafeHtml): string {
  const body = html`<p class="crumbs">${s.author ? html`<a href="${artistHref(s.author)}">${s.author}</a> › statuses` : "Status"}</p>
<h1>Status${s.author ? ` by ${s.author}` : ""}</h1>
${removedNotice(s, "This status")}${s.isDeleted && !s.removedAt ? html`<p class="gone" role="status">${pill("removed upstream", "bad")} The service marks this status deleted.</p>` : ""}
${statusBlock(s, works, false, false)}
<p class="small">${serviceLink(s.url)}</p>
${comments}`;
  return page(`Status${s.author ? ` by ${s.author}` : ""}`, undefined, body);
}

// ---- the watch feed ------------------------------------------------------------------------------------------------

export function watchPage(v: { items: WatchItemRow[]; works: Works; statuses: Map<string, StatusRow>; next: string | undefined; deep: boolean }): string {
  const body = html`<h1>Watch feed</h1>
<p class="small muted">What the artists you watch posted, newest first, as the service's watch feed gave it.</p>
${v.items.length === 0 ? html`<p class="card muted">The watch feed is empty (the watch_feed source fills it).</p>` : ""}
<ol class="rlist feed" data-jk-list aria-label="Watch feed">${v.items.map((it) => {
    const status = it.statusid ? v.statuses.get(it.statusid) : undefined;
    return html`<li data-jk><div>${byline(it.by)} <span class="muted">${(it.type ?? "posted").replaceAll("_", " ")}</span> · ${when(it.ts)}${
      it.bucketTotal && it.bucketTotal > it.deviationids.length ? html` <span class="small muted">(${it.bucketTotal} in all)</span>` : ""
    }</div>${workTiles(it.deviationids, v.works, "Works")}${status ? statusBlock(status, v.works, true, false) : it.statusid ? html`<a href="/statuses/${encodeURIComponent(it.statusid)}">the status</a>` : ""}</li>`;
  })}</ol>
${listPager("/watch", {}, v.next, v.deep, "Watch feed pages")}`;
  return page("Watch feed", "watch", body);
}

// ---- journals and literature -------------------------------------------------------------------------------------

export function readingPage(d: ReadingRow, local: ReadonlyMap<string, string>, comments: SafeHtml): string {
  const t = title(d.title);
  const body = html`<article class="read">
<p class="crumbs">${d.artist ? html`<a href="${artistHref(d.artist)}">${d.artist}</a> › ` : ""}${d.type ?? "text"}</p>
<h1>${t}</h1>
<p class="small muted">${byline(d.artist)} · ${when(d.publishedAt)}${d.bodyFetchedAt ? html` · text archived ${formatTime(d.bodyFetchedAt.toISOString())}` : ""}</p>
${removedNotice(d, `This ${d.type ?? "work"}`)}
<p class="small links">${d.textDownloadId ? html`<a href="/files/${d.textDownloadId}">the stored page</a> · ` : ""}<a href="/item/${encodeURIComponent(d.deviationid)}">details and history</a>${d.url ? html` · ${serviceLink(d.url)}` : ""}</p>
<div class="text-body">${d.html ? storedHtml(d.html, local) : d.excerpt ? html`<p>${d.excerpt}</p><p class="muted small">Only the excerpt is archived: the service gave no body.</p>` : html`<p class="muted">No text archived.</p>`}</div>
</article>${comments}`;
  return page(t, undefined, body);
}
