// The "Track an artist" and "Archive one work" boxes (src/http/routes/track.ts): plain forms with the CSRF token,
// the account to use as a list when several are connected; and the page a refused request answers with.
import { html, type SafeHtml } from "../../text/html.ts";
import { layout } from "./layout.ts";

/** What the boxes need: the page's CSRF token and the user accounts' names (none: the boxes say to connect one). */
export type UrlBoxes = { csrf: string; accounts: readonly string[] };

function accountField(accounts: readonly string[], id: string): SafeHtml {
  if (accounts.length < 2) return html``;
  return html`<label for="${id}">Account</label> <select id="${id}" name="account">${accounts.map((a) => html`<option value="${a}">${a}</option>`)}</select> `;
}

export function trackBox(v: UrlBoxes): SafeHtml {
  if (v.accounts.length === 0)
    return html`<section class="card" aria-label="Track an artist"><h2>Track an artist</h2><p class="muted"><a href="/connect">Connect an account</a> first: tracking runs with its token.</p></section>`;
  return html`<section class="card" aria-label="Track an artist"><h2>Track an artist</h2>
<form method="post" action="/track"><input type="hidden" name="_csrf" value="${v.csrf}">
<p><label for="track-users">Usernames, ~name, or profile, gallery or favourites URLs, one a line or comma-separated</label></p>
<p><textarea id="track-users" name="users" rows="3" required></textarea></p>
<p>${accountField(v.accounts, "track-account")}<button type="submit">Track</button></p></form>
<p class="small muted">Each user is checked on DeviantArt; if one is unknown, nothing is added. Their gallery, collections and journals sync at once, then on the tracked schedule.</p></section>`;
}

export function addBox(v: UrlBoxes): SafeHtml {
  if (v.accounts.length === 0) return html``;
  return html`<section class="card" aria-label="Archive one work"><h2>Archive one work</h2>
<form method="post" action="/add"><input type="hidden" name="_csrf" value="${v.csrf}">
<p><label for="add-url">A deviation's URL (…/artist/art/title-123) or its id</label></p>
<p><input id="add-url" name="url" type="text" inputmode="url" required></p>
<p>${accountField(v.accounts, "add-account")}<button type="submit">Archive</button></p></form>
<p class="small muted">Its metadata is stored now and its file queued for the worker to download.</p></section>`;
}

/** A box's request refused: the one line of why, what to do, the way back. */
export function boxProblemPage(status: number, heading: string, line: string, back: string): string {
  const body = html`<div class="card"><h1>${heading}</h1><p>${line}</p>
<p><a href="${back}">Back</a> · <a href="/">Overview</a></p><p class="muted small">HTTP ${status}</p></div>`;
  return layout({ title: heading, body });
}

/** The notice a box's redirect carries (`?done=`), shown atop the page it lands on. */
export function doneNotice(notice: string | undefined): SafeHtml {
  return notice ? html`<div class="notice" role="status">${notice}</div>` : html``;
}
