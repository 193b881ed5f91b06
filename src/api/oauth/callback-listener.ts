// The loopback listener that receives the authorize redirect (code in the query, or a token in the
// fragment, posted back by a small page).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { UserError } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import { html } from "../../text/html.ts";
import type { StateStore } from "./pkce-state.ts";
import type { AuthorizeResult } from "./redirect.ts";
import { readRedirectParams, explainAuthorizeError } from "./redirect.ts";

export type CallbackListener = {
  /** Where it listens (the redirect URI's host and port; port 0 picks one, for tests). */
  readonly port: number;
  /** Resolves with the first redirect whose state checks out; rejects on an authorize error. */
  readonly result: Promise<AuthorizeResult>;
  close(): Promise<void>;
};

export type CallbackListenerOptions = {
  redirectUri: string;
  mode: "code" | "token";
  states: StateStore;
  /** Overrides the redirect URI's port (0 = any free port); tests use it. */
  port?: number;
  /** Told about each rejected callback (wrong state, wrong path), so the CLI can say so. */
  onRejected?: (reason: string) => void;
  log?: Logger;
};

/**
 * Listens on the host and port of the redirect URI. For the code flow it reads `code` and `state` from
 * the query; for the implicit flow the token is in the fragment, which browsers never send, so the page
 * posts it back with a small script. Requests with a wrong state get a 400 page and the wait goes on.
 * An https redirect (the implicit grant requires one) needs a TLS-terminating proxy in front of it,
 * or `--paste`.
 */
export async function startCallbackListener(options: CallbackListenerOptions): Promise<CallbackListener> {
  const redirect = new URL(options.redirectUri);
  const host = redirect.hostname.replace(/^\[|\]$/g, "");
  const port = options.port ?? (redirect.port ? Number(redirect.port) : redirect.protocol === "https:" ? 443 : 80);
  let settle: { resolve: (r: AuthorizeResult) => void; reject: (e: Error) => void } | undefined;
  const result = new Promise<AuthorizeResult>((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => undefined);
  let done = false;

  const reject = (res: http.ServerResponse, status: number, reason: string, json = false) => {
    options.onRejected?.(reason);
    options.log?.warn({ reason }, "rejected an OAuth callback");
    page(res, status, "dvault: login not accepted", reason, json);
  };

  const accept = (params: URLSearchParams, res: http.ServerResponse, json: boolean) => {
    if (done) return page(res, 409, "dvault", "This login has already finished. You can close this window.", json);
    const read = readRedirectParams(params, options.mode);
    if (read.kind === "empty") return reject(res, 400, "The redirect carries neither a code nor a token.", json);
    if (read.kind === "error") {
      // An error redirect with someone else's state could be forged to abort the login: only ours, or
      // one without any state (some services drop it on errors), ends the wait.
      if (read.state !== undefined && options.states.consume(read.state) !== "ok")
        return reject(res, 400, "The redirect's state does not match this login.", json);
      done = true;
      const err = explainAuthorizeError(read.error, read.description, options.mode);
      page(res, 400, "dvault: login refused", err.message, json);
      settle?.reject(err);
      return;
    }
    const check = options.states.consume(read.state);
    if (check !== "ok") {
      return reject(
        res,
        400,
        check === "expired" ? "This login's state expired; start `dvault auth login` again." : "The redirect's state does not match this login.",
        json,
      );
    }
    done = true;
    page(res, 200, "dvault: logged in", "dvault received the authorization. You can close this window and return to the terminal.", json);
    settle?.resolve(read);
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://callback.invalid");
    // Browsers ask for /favicon.ico and the like: not worth a warning.
    if (url.pathname !== redirect.pathname) return page(res, 404, "dvault", "Not found.");
    if (req.method === "GET") {
      if (options.mode === "code" || url.searchParams.has("error") || url.searchParams.has("access_token")) {
        return accept(url.searchParams, res, false);
      }
      return fragmentPage(res);
    }
    if (req.method === "POST" && options.mode === "token") {
      // Only the page we served may post the fragment back (a browser sends Origin on a fetch POST).
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== "null" && origin !== redirect.origin && origin !== `http://${req.headers.host ?? ""}`) {
        return reject(res, 403, "Cross-origin post refused.", true);
      }
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => {
        body += chunk;
        if (body.length > 16_384) req.destroy();
      });
      req.on("end", () => accept(new URLSearchParams(body.replace(/^#/, "")), res, true));
      return;
    }
    res.writeHead(405, { allow: "GET, POST" }).end();
  });
  server.keepAliveTimeout = 1000;

  await new Promise<void>((resolve, rejectListen) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      rejectListen(
        new UserError(
          err.code === "EADDRINUSE"
            ? `cannot listen on ${host}:${port} for the OAuth redirect: the port is in use. Free it, set DVAULT_REDIRECT_URI to another registered URI, or use --paste`
            : `cannot listen on ${host}:${port} for the OAuth redirect (${err.code ?? err.message}). Use --paste instead`,
        ),
      );
    });
    server.listen(port, host, () => resolve());
  });
  const actualPort = (server.address() as AddressInfo).port;

  return {
    port: actualPort,
    result,
    close: () =>
      new Promise<void>((resolve) => {
        if (!done) settle?.reject(new UserError("the login was cancelled before the browser came back"));
        done = true;
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function page(res: http.ServerResponse, status: number, title: string, text: string, json = false): void {
  if (json) {
    res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify({ message: text }));
    return;
  }
  res
    .writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "referrer-policy": "no-referrer" })
    .end(html`<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><p>${text}</p>`.text);
}

/** The implicit grant's landing page: hands the fragment to the listener, then wipes it from the address bar. */
function fragmentPage(res: http.ServerResponse): void {
  const script = `(async()=>{const f=location.hash.slice(1);history.replaceState(null,"",location.pathname);
const p=document.getElementById("m");if(!f){p.textContent="No token in the address (#...). Use dvault auth login --paste.";return;}
try{const r=await fetch(location.pathname,{method:"POST",headers:{"content-type":"application/x-www-form-urlencoded"},body:f});
const j=await r.json();p.textContent=j.message;}catch(e){p.textContent="Could not reach dvault: "+e;}})();`;
  res
    .writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "content-security-policy": "default-src 'none'; script-src 'unsafe-inline'; connect-src 'self'",
    })
    .end(
      `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>dvault</title><h1>dvault</h1><p id="m">Handing the token to dvault…</p><script>${script}</script>`,
    );
}
