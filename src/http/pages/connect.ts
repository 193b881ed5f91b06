// "Connect DeviantArt" (src/http/routes/connect.ts): what to register at the service and which settings to set
// (the first-run page when no account exists), the callback address to register, and the button that starts
// the authorization-code flow; and the pages a callback that cannot complete answers with.
import { html } from "../../text/html.ts";
import { layout } from "./layout.ts";

export type ConnectView = {
  /** DVAULT_PUBLIC_URL + /oauth/callback, or the address this page was asked at + /oauth/callback. */
  callbackUrl: string;
  /** True when DVAULT_PUBLIC_URL is unset and the callback was derived from the address asked. */
  derived: boolean;
  clientIdSet: boolean;
  clientSecretSet: boolean;
  scopes: readonly string[];
  /** The CSRF token of the Connect button (absent: no button, settings are missing). */
  csrf: string | undefined;
  /** No user account is stored yet. */
  firstRun: boolean;
  /** The account being connected again (the overview's "Reconnect" link). */
  account: string | undefined;
};

export function connectPage(v: ConnectView): string {
  const heading = v.account ? `Reconnect ${v.account}` : "Connect DeviantArt";
  const body = html`<div class="card connect"><h1>${heading}</h1>
${v.firstRun ? html`<p><b>No account is connected yet.</b> dvault archives what a DeviantArt account can see; connect one to start.</p>` : ""}
${v.account ? html`<p>The grant of <b>${v.account}</b> no longer works: approve dvault again and its archiving goes on where it stopped.</p>` : ""}
<h2>1. Register an application at the service</h2>
<p>On DeviantArt's developers / applications page, register an application (or open yours) and add this
<b>redirect URI</b> to its whitelist, character for character:</p>
<p><code class="fix" id="callback-url">${v.callbackUrl}</code></p>
${
  v.derived
    ? html`<p class="small muted">DVAULT_PUBLIC_URL is not set, so this address is derived from the one you opened this page at.
If people reach the dashboard at another address (a proxy, a host name), set DVAULT_PUBLIC_URL to it and restart the worker.</p>`
    : html`<p class="small muted">From DVAULT_PUBLIC_URL.</p>`
}
<h2>2. Give dvault the application's credentials</h2>
<p>Set <code class="fix">DVAULT_CLIENT_ID</code> (the application's client_id) ${v.clientIdSet ? "— set" : "— not set"} and
<code class="fix">DVAULT_CLIENT_SECRET</code> (its client_secret; leave it unset for an OAuth 2.1 public client) ${v.clientSecretSet ? "— set" : "— not set"}
in the worker's settings file (<code>.env</code> in the folder it runs in, or the one <code>--config</code> names; with docker compose, the <code>.env</code> beside <code>docker-compose.yml</code>) or its environment, then restart the worker.</p>
<h2>3. Connect</h2>
${
  v.csrf
    ? html`<p>dvault asks for: ${v.scopes.join(" ")}. You approve on DeviantArt's page and come back here; the account's first sync is queued at once.</p>
<form method="post" action="/connect"><input type="hidden" name="_csrf" value="${v.csrf}">${v.account ? html`<input type="hidden" name="account" value="${v.account}">` : ""}<button type="submit">Connect DeviantArt</button></form>`
    : html`<p class="notice warn">Set DVAULT_CLIENT_ID first (step 2): without it there is nothing to connect.</p>`
}
<p class="small muted">The command line does the same: <span class="fix">dvault auth login</span>.</p></div>`;
  return layout({ title: heading, nav: "overview", body });
}

/** A callback (or start) that cannot complete: what happened and what to do, with the way back. */
export function connectProblemPage(status: number, heading: string, what: string, todo: string): string {
  const body = html`<div class="card"><h1>${heading}</h1><p>${what}</p><p>${todo}</p>
<p><a href="/connect">Connect again</a> · <a href="/">Overview</a></p><p class="muted small">HTTP ${status}</p></div>`;
  return layout({ title: heading, body });
}

/** Who was connected, with which scopes, when the dashboard cannot hand on to the overview's notice. */
export function connectedPage(line: string): string {
  const body = html`<div class="card"><h1>Connected</h1><p>${line}</p><p><a href="/">Overview</a></p></div>`;
  return layout({ title: "Connected", body });
}
