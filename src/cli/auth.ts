// `dvault auth`: log in (authorization code with PKCE, or implicit), client credentials, import a
// refresh token, status (with a placebo call per account) and logout (revoke).
import { spawn } from "node:child_process";
import { type Command, Option } from "commander";
import {
  compareScopes,
  DEFAULT_SCOPES,
  interactiveLogin,
  normaliseScopes,
  type OAuthClient,
  OAuthEndpointError,
  TokenResponseLostError,
  type ClientAuthMethod,
  type TokenGrant,
} from "../api/oauth.ts";
import { storeLogin, type StoreLoginArgs } from "../api/store-login.ts";
import { placebo } from "../api/account-calls.ts";
import { type AccountStatus, accountStatusOf, keyedStatus } from "../api/token-manager.ts";
import type { AccountRow } from "../db/account.repository.ts";
import { EXIT_NEEDS_LOGIN, explainPgRefusal, UserError } from "../errors.ts";
import { registerSecret, scrubString } from "../redact.ts";
import { assertReadyToSpend, type AuthContext, type KeylessContext, withContext, withExistingKey } from "./auth-context.ts";
import { printErr, printOut } from "./output/print.ts";
import { readLine } from "./output/prompt.ts";

const out = printOut;
const note = printErr;

function clientAuthOf(opts: { formAuth?: boolean; basicAuth?: boolean }, oauth: OAuthClient): ClientAuthMethod {
  if (oauth.isPublicClient) return "none";
  return opts.formAuth ? "form" : "basic";
}

/** Names and stores a new user grant (src/api/store-login.ts), its notes on stderr. */
function storeUserGrant(ctx: AuthContext, args: Omit<StoreLoginArgs, "tokens" | "accounts" | "transportFor" | "onNote">) {
  return storeLogin({ ...args, tokens: ctx.tokens, accounts: ctx.repo, transportFor: ctx.transportFor, onNote: (line) => note(`dvault: ${line}`) });
}

function reportScopes(requested: readonly string[], granted: readonly string[] | undefined): void {
  if (!granted) {
    out(`granted scopes: (not stated by the service; asked for ${requested.join(" ")})`);
    return;
  }
  out(`granted scopes: ${granted.join(" ")}`);
  const { missing, downgraded } = compareScopes(requested, granted);
  if (downgraded) {
    note(
      "dvault: warning: the service downgraded the grant to `basic`: it did not accept the scopes asked for (an unknown scope, or one your app may not use). Archiving needs at least browse and user.",
    );
  } else if (missing.length) {
    note(`dvault: warning: not granted: ${missing.join(" ")}`);
  }
}

/** `--timeout` as given, in ms: the wait and its messages use this number, never a floor or a default in its place. */
function loginTimeoutMs(value: string): number {
  const seconds = Number(value);
  if (!/^\d+$/.test(value.trim()) || seconds < 1 || seconds > 86_400) {
    throw new UserError(`--timeout expects a whole number of seconds from 1 to 86400, not "${value}"`);
  }
  return seconds * 1000;
}

function openBrowser(url: string): void {
  const opener = process.platform === "darwin" ? "open" : process.platform === "win32" ? "explorer" : "xdg-open";
  if (process.platform === "linux" && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return;
  try {
    const child = spawn(opener, [url], { stdio: "ignore", detached: true });
    child.on("error", () => undefined);
    child.unref();
  } catch {
    /* no browser: the URL is printed */
  }
}

async function readSecretArg(value: string, what: string): Promise<string> {
  const token = value === "-" ? (await readLine(`${what}: `)).trim() : value.trim();
  if (!token) throw new UserError(`${what} is empty`);
  registerSecret(token);
  return token;
}

function formatAge(days: number | null): string {
  return days === null ? "-" : `${days} d`;
}

function printStatusTable(rows: Array<AccountStatus & { placebo: string }>, noKeyFile?: string): void {
  if (rows.length === 0) {
    out("no accounts yet: run `dvault auth login` (or `dvault auth import --refresh-token <token>`)");
    // Said as it is: the key is made with the first grant stored, not by a status.
    if (noKeyFile) out(`no key yet: the first login makes ${noKeyFile} (or set DVAULT_SECRET_KEY)`);
    return;
  }
  for (const r of rows) {
    out(`${r.name}${r.kind === "client" ? " (client credentials)" : ""}`);
    if (r.kind === "user") out(`  user:           ${r.username ?? "?"}${r.userId ? ` (${r.userId})` : ""}`);
    out(`  state:          ${r.state}${r.stateReason ? ` — ${r.stateReason}` : ""}`);
    out(`  scopes:         ${r.scopes.join(" ") || "-"}`);
    out(`  access expires: ${r.accessExpiresAt ?? "-"}`);
    if (r.kind === "user") out(`  refresh token:  ${r.hasRefreshToken ? `${formatAge(r.refreshTokenAgeDays)} old` : "none"}`);
    out(`  placebo:        ${r.placebo}`);
  }
}

/** At least one account must log in again (scripts can test for it). */
const NEEDS_ATTENTION = EXIT_NEEDS_LOGIN;

export function registerAuthCommand(program: Command): void {
  const auth = program
    .command("auth")
    .description("authorize dvault with the service and manage the stored grants")
    .addHelpText(
      "after",
      "\nNeeds DVAULT_CLIENT_ID and DVAULT_CLIENT_SECRET (from your app's page on the service) and a migrated database (npx dvault migrate).\nTokens are stored encrypted under DVAULT_SECRET_KEY or the key file in the config directory.",
    );

  auth
    .command("login")
    .description("log in through the browser (authorization code with PKCE; --implicit for the implicit grant)")
    .option("--account <name>", "local name for the account (default: the service username)")
    .option("--scopes <scopes>", `extra scopes to ask for, space- or comma-separated (always asked: ${DEFAULT_SCOPES.join(" ")})`)
    .option("--paste", "don't listen for the redirect: paste the URL the browser ends up on (servers, containers)")
    .option("--implicit", "use the implicit grant (OAuth 2.0 apps with an https redirect only; no refresh token)")
    .addOption(new Option("--basic-auth", "send the client credentials with HTTP Basic (default)").conflicts("formAuth"))
    .addOption(new Option("--form-auth", "send the client credentials as form parameters").conflicts("basicAuth"))
    .option("--no-browser", "only print the URL; don't try to open a browser")
    .option("--timeout <seconds>", "how long to wait for the browser, in whole seconds (1 to 86400)", "600")
    .addHelpText(
      "after",
      "\nThe redirect goes to DVAULT_REDIRECT_URI (default http://127.0.0.1:8788/callback), which must be registered with your app;\ndvault listens on its host and port. With --paste nothing listens: open the URL anywhere, approve, then paste the address you land on.",
    )
    .action(
      async (opts: {
        account?: string;
        scopes?: string;
        paste?: boolean;
        implicit?: boolean;
        basicAuth?: boolean;
        formAuth?: boolean;
        browser: boolean;
        timeout: string;
      }) => {
        const timeoutMs = loginTimeoutMs(opts.timeout);
        await withContext(async (ctx) => {
          await assertReadyToSpend(ctx);
          const mode = opts.implicit ? "token" : "code";
          const scopes = normaliseScopes(DEFAULT_SCOPES, opts.scopes);
          const clientAuth = clientAuthOf(opts, ctx.oauth);
          const login = await interactiveLogin({
            oauth: ctx.oauth,
            redirectUri: ctx.config.redirectUri,
            scopes,
            mode,
            auth: clientAuth,
            oauthVersion: ctx.config.oauthVersion,
            timeoutMs,
            log: ctx.log,
            onRejected: (reason) => {
              note(`dvault: rejected a redirect: ${reason}`);
            },
            onAuthorizeUrl: (url) => {
              note("Open this URL in a browser and approve dvault:");
              note("");
              note(`  ${url}`);
              note("");
              if (opts.paste) note(`After approving, paste the URL your browser ends up on (it starts with ${ctx.config.redirectUri}):`);
              else note(`Waiting for the redirect to ${ctx.config.redirectUri} (up to ${timeoutMs / 1000} s, --timeout) ...`);
              if (opts.browser) openBrowser(url);
            },
            ...(opts.paste ? { readPastedUrl: () => readLine("> ") } : {}),
          });
          const { row, who } = await storeUserGrant(ctx, {
            grantType: login.grantType,
            grant: login.grant,
            clientAuth,
            requestedAt: login.requestedAt,
            requestedScopes: scopes,
            requestedName: opts.account,
          });
          out(`logged in as ${who?.username ?? "(unknown user)"}; stored as account "${row.name}"`);
          reportScopes(scopes, login.grant.scopes);
          if (login.grantType === "implicit") {
            note(`dvault: the implicit grant has no refresh token: this account stops working at ${row.accessExpiresAt?.toISOString()} (log in again then)`);
          }
        });
      },
    );

  auth
    .command("client")
    .description("get a client-credentials token (public endpoints only, no user) and store it")
    .addOption(new Option("--form-auth", "send the client credentials as form parameters instead of HTTP Basic"))
    .action(async (opts: { formAuth?: boolean }) => {
      await withContext(async (ctx) => {
        await assertReadyToSpend(ctx);
        const row = await ctx.tokens.requestClientToken({ auth: opts.formAuth ? "form" : "basic" });
        const provider = await ctx.tokens.forAccount(row.name);
        await placebo(ctx.transportFor(provider));
        out(
          `stored a client-credentials token for client ${ctx.oauth.clientId} as account "${row.name}" (expires ${row.accessExpiresAt?.toISOString()}; renewed automatically)`,
        );
        if (row.scopes.length) out(`granted scopes: ${row.scopes.join(" ")}`);
      });
    });

  auth
    .command("import")
    .description("store a grant from a refresh token obtained elsewhere (headless servers); it is exchanged at once")
    .requiredOption("--refresh-token <token>", "the refresh token; `-` reads it from stdin (keeps it out of shell history)")
    .option("--account <name>", "local name for the account (default: the service username)")
    .addOption(new Option("--basic-auth", "send the client credentials with HTTP Basic (default)").conflicts("formAuth"))
    .addOption(new Option("--form-auth", "send the client credentials as form parameters").conflicts("basicAuth"))
    .addHelpText(
      "after",
      "\nRefresh tokens are single-use and bound to the client that obtained them: the token must come from the same\nDVAULT_CLIENT_ID, and after the import only dvault holds the live one (the one you pasted is spent).",
    )
    .action(async (opts: { refreshToken: string; account?: string; basicAuth?: boolean; formAuth?: boolean }) => {
      await withContext(async (ctx) => {
        await assertReadyToSpend(ctx);
        const token = await readSecretArg(opts.refreshToken, "refresh token");
        const clientAuth = clientAuthOf(opts, ctx.oauth);
        const requestedAt = Date.now();
        let grant: TokenGrant;
        try {
          grant = await ctx.oauth.refresh(token, clientAuth);
        } catch (err) {
          if (err instanceof OAuthEndpointError && err.refreshTokenDead) {
            throw new UserError(
              "the service rejected that refresh token (used, revoked, expired, or from another client_id); get a new one, or log in with `dvault auth login`",
            );
          }
          if (err instanceof TokenResponseLostError) {
            throw new UserError(`${err.message}; the token is probably spent: get a new one, or log in with \`dvault auth login\``);
          }
          throw err;
        }
        const { row, who } = await storeUserGrant(ctx, { grantType: "imported", grant, clientAuth, requestedAt, requestedName: opts.account });
        out(`imported ${who?.username ?? "(unknown user)"} as account "${row.name}"; the refresh token you gave is now spent, dvault holds its successor`);
        reportScopes(grant.scopes ?? [], grant.scopes);
      });
    });

  auth
    .command("status")
    .description("per account: user, scopes, access-token expiry, refresh-token age, state; checks each with the placebo call")
    .option("--json", "print JSON")
    .option("--no-check", "don't call the placebo (and so don't refresh)")
    .addHelpText("after", "\nExit code 4 when an account needs to be authorized again.")
    .action(async (opts: { json?: boolean; check: boolean }) => {
      // A status makes no key (src/cli/auth-context.ts withExistingKey): with none, no token is read or made.
      await withExistingKey(async (ctx) => {
        const report = "noKey" in ctx ? await keylessStatus(ctx) : await statusOf(ctx, opts.check);
        if (opts.json) out(JSON.stringify(report, null, 2));
        else printStatusTable(report, "noKey" in ctx ? ctx.keyFile : undefined);
        if (report.some((r) => r.kind === "user" && (r.state === "needs_reauth" || r.state === "revoked"))) process.exitCode = NEEDS_ATTENTION;
      });
    });

  auth
    .command("logout")
    .description("log this install out: revoke the account's refresh token at the service and forget its tokens (--everywhere: every grant of the user)")
    .option("--account <name>", "which account (default: the only user account)")
    .option("--everywhere", "revoke every grant of the user for this application: every other install logged in as them stops working too")
    .option("--yes", "with --everywhere: don't ask (needed when standard input is not a terminal)")
    .addHelpText(
      "after",
      "\nBy default only this install's refresh token is revoked (revoke_refresh_only=true); another dvault logged in as the\nsame user with the same application keeps working (docs/service-behaviour.md#revoke-scope).",
    )
    .action(async (opts: { account?: string; everywhere?: boolean; yes?: boolean }) => {
      await withExistingKey(async (opened) => {
        const row = await pickAccount(opened, opts.account);
        const ctx = keyToRevokeWith(opened);
        const everywhere = opts.everywhere === true;
        if (everywhere) await confirmEverywhere(row, ctx.oauth.clientId, opts.yes === true);
        const outcome = await revokeOrExplain(ctx, row, everywhere);
        const what = everywhere
          ? `every grant of ${row.username ?? "its user"} for this application was revoked`
          : "this install's refresh token was revoked (other installs stay logged in)";
        if (outcome === "revoked") out(`logged out of account "${row.name}": ${what}`);
        else if (outcome === "already_invalid") out(`logged out of account "${row.name}": the service already considered its token invalid`);
        else out(`logged out of account "${row.name}": its tokens were forgotten`);
      });
    });
}

/** `--everywhere` says what it ends before it does: asked on a terminal, refused without --yes elsewhere. */
async function confirmEverywhere(row: AccountRow, clientId: string, yes: boolean): Promise<void> {
  const who = row.username ?? row.name;
  note(
    `dvault: --everywhere revokes every token and authorization of ${who} for application ${clientId}: every install logged in as ${who} with it (this one included) must log in again`,
  );
  if (yes) return;
  if (!process.stdin.isTTY) throw new UserError("--everywhere asks before it revokes: add --yes to confirm (standard input is not a terminal)");
  // Standard input closed (Ctrl-D) is a no.
  const answer = (await readLine(`Revoke every grant of ${who}? [y/N] `).catch(() => "")).trim().toLowerCase();
  if (answer !== "y" && answer !== "yes") throw new UserError("nothing was revoked");
}

/** A logout reads the stored tokens to revoke them: with no key, nothing can be, and none is made for it. */
function keyToRevokeWith(ctx: AuthContext | KeylessContext): AuthContext {
  if (!("noKey" in ctx)) return ctx;
  throw new UserError(
    `no key was found in DVAULT_SECRET_KEY or the key file ${ctx.keyFile}: the stored tokens cannot be read, so nothing can be revoked. Restore the key and run this again (or log in again: dvault auth login)`,
  );
}

/**
 * The logout's revoke. A revoke the service does not settle (a lost answer, a refusal) changes nothing here: the
 * account stays stored and logged in, and the one line says so and what to run (the run's failure, src/cli/program.ts).
 */
async function revokeOrExplain(ctx: AuthContext, row: AccountRow, everywhere: boolean): Promise<"revoked" | "already_invalid" | "local_only"> {
  try {
    return await ctx.tokens.logout(row, { refreshOnly: !everywhere });
  } catch (err) {
    const kept = `account "${row.name}" stays logged in here`;
    const again = `dvault auth logout --account ${row.name}${everywhere ? " --everywhere" : ""}`;
    if (err instanceof TokenResponseLostError)
      throw new UserError(`${err.message}: whether the service revoked it is not known, and ${kept}; run ${again} again`);
    if (err instanceof OAuthEndpointError) throw new UserError(`${err.message}: ${kept}${err.transient ? `; run ${again} again later` : ""}`);
    throw err;
  }
}

type StatusRow = AccountStatus & { placebo: string };

/** Each account as the token manager reports it, after its placebo call when `check` asks for one. */
async function statusOf(ctx: AuthContext, check: boolean): Promise<StatusRow[]> {
  const report: StatusRow[] = [];
  for (const row of await ctx.repo.list()) {
    const placebo = check ? await checkAccount(ctx, row) : "not checked";
    const fresh = (await ctx.repo.findById(row.id)) ?? row;
    report.push({ ...(await ctx.tokens.status(fresh)), placebo });
  }
  return report;
}

/** Each account on an install with no key: its stored tokens cannot be read (needs a login, or the key back), none is checked. */
async function keylessStatus(ctx: KeylessContext): Promise<StatusRow[]> {
  const now = Date.now();
  return (await ctx.repo.list()).map((row) => ({
    ...keyedStatus(accountStatusOf(row, now), row, { none: ctx.noKey }),
    placebo: "skipped (no key to read its tokens with)",
  }));
}

async function checkAccount(ctx: AuthContext, row: AccountRow): Promise<string> {
  // Not tried: dvault uses no token of such an account, whatever the service would still accept.
  if (row.state === "needs_reauth" || row.state === "revoked") return `skipped (no usable grant: dvault auth login --account ${row.name})`;
  try {
    const provider = await ctx.tokens.forAccount(row.name);
    await placebo(ctx.transportFor(provider));
    return "ok";
  } catch (err) {
    // A read-only database met before the call (the pace's row on PostgreSQL alone) is said as itself.
    const said = explainPgRefusal(err) ?? err;
    return `failed: ${scrubString(said instanceof Error ? said.message : String(said))}`;
  }
}

async function pickAccount(ctx: Pick<AuthContext, "repo">, name: string | undefined): Promise<AccountRow> {
  if (name) {
    const row = await ctx.repo.findByName(name);
    if (!row) throw new UserError(`no account named "${name}"; see them with: dvault auth status`);
    return row;
  }
  const users = (await ctx.repo.list()).filter((r) => r.kind === "user");
  if (users.length === 1 && users[0]) return users[0];
  if (users.length === 0) throw new UserError("there are no accounts to log out of");
  throw new UserError(`several accounts are stored (${users.map((u) => u.name).join(", ")}); choose one with --account <name>`);
}
