// "Connect DeviantArt" from the dashboard: the authorization-code flow with PKCE and `state` (the same two
// halves as `dvault auth login`, src/api/oauth/login.ts) through the dashboard's own callback,
// DVAULT_PUBLIC_URL + /oauth/callback (or the address asked + /oauth/callback when it is unset).
//
// - GET /connect: the first-run page (what to register, which settings), the callback address, the button.
// - POST /connect (CSRF): a single-use state, kept in this process with its PKCE verifier (never in a page, a
//   cookie, Redis or a log), bound to this browser by a random cookie; 303 to the service's authorize page.
// - GET /oauth/callback: reachable from the service's redirect (a GET, behind the Host and token checks like
//   every page), it completes only a flow this browser started: the state taken once (a replay, a forgery, an
//   expired one or another browser's answered 400 with what to do), the code exchanged once, the grant named
//   and stored through the token manager the CLI uses (src/api/store-login.ts), the account's first sync
//   queued through the producer like "Sync now", then 303 to the overview, which says who and which scopes.
import { createHash, randomBytes } from "node:crypto";
import type express from "express";
import {
  beginLogin,
  DEFAULT_SCOPES,
  oauthEndpoints,
  explainAuthorizeError,
  finishLogin,
  OAuthEndpointError,
  type Pkce,
  readRedirectParams,
  type RetryWords,
  StateStore,
  TokenResponseLostError,
} from "../../api/oauth.ts";
import { storeLogin } from "../../api/store-login.ts";
import type { TokenProvider } from "../../api/token-provider.ts";
import { type DashboardContext, publicBase } from "../context.ts";
import { one, sendPage } from "../respond.ts";
import { readCookie, setCookie } from "../cookies.ts";
import { sameSecret } from "../guards.ts";
import { connectedPage, connectPage, connectProblemPage } from "../pages/connect.ts";

export const CALLBACK_PATH = "/oauth/callback";
/** Binds a flow to the browser that started it; sent only to the callback. */
const FLOW_COOKIE = "dvault_connect";
/** How long a person has between "Connect" and coming back. */
export const CONNECT_TTL_MS = 10 * 60_000;

type Flow = { pkce: Pkce | undefined; scopes: string[]; redirectUri: string; browser: string; account: string | undefined };

const RETRY: RetryWords = {
  again: "press Connect on the dashboard's Connect page again",
  redirect: "The callback address shown on the dashboard's Connect page must be registered with your application, character for character.",
};

const digest = (value: string) => createHash("sha256").update(value).digest("base64url");

export function connectRoutes(app: express.Express, ctx: DashboardContext): void {
  const { deps, config, log, csrf } = ctx;
  const flows = new StateStore<Flow>(CONNECT_TTL_MS, ctx.now);
  const callbackOf = (req: express.Request) => `${publicBase(ctx, req)}${CALLBACK_PATH}`;
  const problem = problemPage;

  app.get("/connect", async (req, res) => {
    const users = (await deps.accounts.list()).filter((a) => a.kind === "user");
    sendPage(
      res,
      200,
      connectPage({
        callbackUrl: callbackOf(req),
        derived: !config.publicUrl,
        clientIdSet: !!config.clientId,
        clientSecretSet: !!config.clientSecret,
        scopes: DEFAULT_SCOPES,
        csrf: config.clientId && deps.tokens ? csrf.tokenFor(req, res) : undefined,
        firstRun: users.length === 0,
        account: one(req.query.account),
      }),
      // The button's POST answers with a redirect to the service's authorize page.
      [new URL(oauthEndpoints(config.apiBase).authorize).origin],
    );
  });

  app.post("/connect", ...csrf.guard, (req, res) => {
    if (!config.clientId || !deps.tokens)
      return problem(
        res,
        "Cannot connect yet",
        "DVAULT_CLIENT_ID is not set, so there is no application to connect through.",
        "Set it as the Connect page says.",
      );
    // Built now, so a missing key or setting shows here, before anyone is sent to the service.
    const tokens = deps.tokens();
    const browser = randomBytes(24).toString("base64url");
    const redirectUri = callbackOf(req);
    const account = one((req.body as Record<string, unknown>).account);
    const { url } = beginLogin({
      oauth: tokens.oauth,
      redirectUri,
      scopes: DEFAULT_SCOPES,
      mode: "code",
      states: flows,
      keep: ({ pkce, scopes }) => ({ pkce, scopes, redirectUri, browser: digest(browser), account }),
    });
    setCookie(res, FLOW_COOKIE, browser, {
      path: CALLBACK_PATH,
      httpOnly: true,
      // Lax: the service's redirect back is a top-level navigation from another site.
      sameSite: "lax",
      secure: redirectUri.startsWith("https:"),
      maxAge: CONNECT_TTL_MS / 1000,
    });
    log.info({ redirectUri }, "dashboard: connect started");
    return res.redirect(303, url);
  });

  app.get(CALLBACK_PATH, async (req, res) => {
    const query = new URLSearchParams(req.originalUrl.split("?")[1] ?? "");
    const taken = flows.take(query.get("state"));
    if (taken.check !== "ok") {
      log.warn({ check: taken.check }, "dashboard: connect callback refused");
      return flowRefused(res, taken.check);
    }
    const flow = taken.data;
    setCookie(res, FLOW_COOKIE, "", { path: CALLBACK_PATH, httpOnly: true, sameSite: "lax", maxAge: 0 });
    const cookie = readCookie(req, FLOW_COOKIE);
    if (!cookie || !sameSecret(digest(cookie), flow.browser)) {
      log.warn("dashboard: connect callback from another browser refused");
      return problem(
        res,
        "This sign-in was started in another browser",
        "The sign-in answer arrived in a browser that did not press Connect (or its cookie was cleared). Nothing was stored.",
        "Press Connect in the browser you approve in.",
      );
    }
    const read = readRedirectParams(query, "code");
    if (read.kind === "error") {
      const err = explainAuthorizeError(read.error, read.description, "code", RETRY);
      return problem(res, read.error === "access_denied" ? "Access was declined" : "The service refused the authorization", err.message, "Nothing was stored.");
    }
    if (read.kind !== "code") return problem(res, "No code came back", "The service's answer carries no code.", "Start again with Connect.");

    const tokens = deps.tokens?.();
    if (!tokens)
      return problem(res, "Cannot connect here", "This dashboard has no token store.", "Connect from the worker's dashboard (dvault worker --http).");
    if (!(await takesWrites(deps.accounts, log, res))) return;
    let login: Awaited<ReturnType<typeof finishLogin>>;
    try {
      login = await finishLogin({ oauth: tokens.oauth, result: read, redirectUri: flow.redirectUri, pkce: flow.pkce, scopes: flow.scopes, now: ctx.now });
    } catch (err) {
      if (err instanceof OAuthEndpointError || err instanceof TokenResponseLostError) {
        log.warn({ err }, "dashboard: connect code exchange failed");
        return problem(res, "The service refused the code", err.message, "Start again with Connect: each code works once and for a few minutes.");
      }
      throw err;
    }
    const { createHttpTransport } = await import("../../api/http.ts");
    const notes: string[] = [];
    const { row, who } = await storeLogin({
      tokens,
      accounts: deps.accounts,
      transportFor: (provider: TokenProvider) => createHttpTransport({ apiBase: config.apiBase, tokens: provider, pacer: deps.pacer, log }),
      grant: login.grant,
      grantType: login.grantType,
      clientAuth: tokens.oauth.defaultAuth(),
      requestedAt: login.requestedAt,
      requestedScopes: login.requestedScopes,
      requestedName: flow.account,
      onNote: (line) => notes.push(line),
    });
    const scopes = login.grant.scopes ?? login.requestedScopes;
    const queued = deps.actions ? await deps.actions.syncNow(row.id) : 0;
    log.info({ account: row.name, accountId: row.id, queued }, "dashboard: account connected");
    const line = [
      `Connected ${who?.username ?? "(unknown user)"} as account "${row.name}" with scopes ${scopes.join(" ")}.`,
      deps.actions ? `First sync queued: ${queued} source run${queued === 1 ? "" : "s"}.` : "The first sync starts with the worker's schedules.",
      ...notes,
    ].join(" ");
    if (!deps.actions) return sendPage(res, 200, connectedPage(line));
    return res.redirect(303, `/?${new URLSearchParams(csrf.notice(line)).toString()}`);
  });
}

const problemPage = (res: express.Response, heading: string, what: string, todo: string) => sendPage(res, 400, connectProblemPage(400, heading, what, todo));

/** The page for a callback whose state is not a live flow of this dashboard's: used, expired or unknown. */
function flowRefused(res: express.Response, check: "used" | "expired" | "unknown") {
  if (check === "used")
    return problemPage(
      res,
      "This sign-in was already used",
      "This address carries a sign-in answer that was already used once: its code is never sent to the service twice, and nothing was stored again.",
      "If the account shows on the overview, it is connected. Otherwise start again with Connect.",
    );
  if (check === "expired")
    return problemPage(
      res,
      "This sign-in expired",
      `The approval came back more than ${CONNECT_TTL_MS / 60_000} minutes after Connect was pressed.`,
      "Start again with Connect.",
    );
  return problemPage(
    res,
    "This sign-in was not started here",
    "The address's state does not match a sign-in this dashboard started (a stale, forged or mistyped address, or the worker restarted in between). Nothing was stored.",
    "Start again with Connect, in this browser.",
  );
}

/**
 * The code is single-use and its grant is stored in the accounts table: a database that refuses writes now (a
 * standby, read-only) is said with a 503 before the code is sent, while a new Connect can still work.
 */
async function takesWrites(accounts: { proveWritable(): Promise<void> }, log: DashboardContext["log"], res: express.Response): Promise<boolean> {
  try {
    await accounts.proveWritable();
    return true;
  } catch (err) {
    log.warn({ err }, "dashboard: connect refused before the code exchange: the database refuses writes");
    sendPage(
      res,
      503,
      connectProblemPage(
        503,
        "Cannot store a sign-in right now",
        err instanceof Error ? err.message : String(err),
        "Nothing was spent: once the database takes writes, start again with Connect.",
      ),
    );
    return false;
  }
}
