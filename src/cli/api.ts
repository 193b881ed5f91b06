// `dvault api <operation>`: any operation of the service's catalogue (src/api/catalogue.ts), called with a stored
// account's token through the same client, pacer and error classification as the sync, its answer printed as JSON
// (like `gh api`); `--list` prints the catalogue. Writes ask first, and an operation whose scope the grant lacks
// is refused before any call.
import { type Command, Option } from "commander";
import { CATALOGUE, isOperationId, operation, pathParams, type Operation, type OperationId } from "../api/catalogue.ts";
import { isApiError } from "../api/errors.ts";
import type { AccountRow } from "../db/account.repository.ts";
import { UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";
import type { Services } from "../services.ts";
import { printAnswer, printErr, printOut } from "./output/print.ts";
import { readLine } from "./output/prompt.ts";
import { formatTable } from "./output/table.ts";
import { withServices } from "./with-services.ts";

type ApiOptions = { param?: string[]; data?: string[]; paginate?: boolean; account?: string; yes?: boolean; list?: boolean };

/** `k=v` pairs as parameters; a key given twice becomes a list (the service's `k[]=a&k[]=b`). */
export function parsePairs(pairs: readonly string[], flag: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UserError(`${flag} expects key=value, not "${pair}"`);
    const key = pair.slice(0, eq).replace(/\[\]$/, "");
    const value = pair.slice(eq + 1);
    const had = out[key];
    out[key] = had === undefined ? (pair.slice(0, eq).endsWith("[]") ? [value] : value) : [...(Array.isArray(had) ? had : [had]), value];
  }
  return out;
}

/** Who may call an operation: the token kind and the scopes beyond `basic`. */
function authOf(op: Operation): string {
  const kind = op.token === "any" ? "user or client" : op.token;
  return op.scopes.length ? `${kind}: ${op.scopes.join(" ")}` : kind;
}

/** The catalogue as `--list` prints it: one row per operation. */
export function catalogueTable(): string {
  const rows = CATALOGUE.map((op) => [
    op.id,
    op.method,
    op.path,
    authOf(op),
    op.write ? "write" : "read",
    op.removed ? `removed ${op.removed.since}` : op.deprecated ? `deprecated ${op.deprecated.since}` : "",
  ]);
  return formatTable(["operation", "method", "path", "auth", "kind", "status"], rows);
}

function named(id: string): Operation {
  if (isOperationId(id)) return operation(id);
  const close = CATALOGUE.filter((op) => op.id.startsWith(`${id.split(".")[0]}.`) || op.id === id.split(".")[0]).map((op) => op.id);
  throw new UserError(
    `no operation "${id}" in the catalogue${close.length ? ` (in that area: ${close.slice(0, 8).join(", ")})` : ""}: dvault api --list shows them all`,
  );
}

/** The account whose token is used: --account, else the only user account, else (for public operations) the client account. */
async function accountFor(services: Services, op: Operation, name: string | undefined): Promise<AccountRow> {
  const rows = await services.accounts.list();
  if (name) {
    const row = rows.find((r) => r.name === name);
    if (!row) throw new UserError(`no account named "${name}": see dvault auth status`);
    return row;
  }
  const users = rows.filter((r) => r.kind === "user");
  if (users.length === 1 && users[0]) return users[0];
  if (users.length > 1) throw new UserError(`several accounts exist (${users.map((u) => u.name).join(", ")}): choose one with --account <name>`);
  const client = op.token !== "user" ? rows.find((r) => r.kind === "client") : undefined;
  if (client) return client;
  throw new UserError("no accounts yet: log in first with dvault auth login");
}

/** Refused before any call: a user operation with a client token, or a scope the grant does not hold. */
function checkGrant(op: Operation, row: AccountRow): void {
  if (op.token === "user" && row.kind !== "user")
    throw new UserError(`${op.id} needs a user's token; "${row.name}" is a client-credentials account: give --account <user account>`);
  // A grant whose scopes the service did not state is left to the service to judge.
  if (row.kind !== "user" || row.scopes.length === 0) return;
  const missing = op.scopes.filter((s) => !row.scopes.includes(s));
  if (missing.length === 0) return;
  throw new UserError(
    `${op.id} needs the scope ${missing.join(" ")}, which account "${row.name}" was not granted: log in again asking for it with dvault auth login --account ${row.name} --scopes "${missing.join(" ")}"`,
  );
}

/** A write changes things on the service: it is asked for on a terminal, and needs --yes elsewhere. */
async function confirmWrite(op: Operation, row: AccountRow, yes: boolean): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY)
    throw new UserError(`${op.id} changes things on the service as ${row.name}: add --yes to send it (standard input is not a terminal)`);
  // Standard input closed (Ctrl-D) is a no.
  const answer = (await readLine(`${op.id} (${op.method} ${op.path}) changes things on the service as ${row.name}. Send it? [y/N] `).catch(() => ""))
    .trim()
    .toLowerCase();
  if (answer !== "y" && answer !== "yes") throw new UserError("nothing was sent");
}

/** The service's refusal in one line: status, its error and error_code, and what it said. */
function refusal(op: Operation, err: unknown): unknown {
  if (!isApiError(err)) return err;
  if (err.status === undefined) return new UserError(`${op.id}: ${scrubString(err.message)}`);
  const parts = [`${op.id}: HTTP ${err.status}`, err.error ?? "", err.errorCode !== undefined ? `error_code ${err.errorCode}` : ""].filter(Boolean);
  const said = err.errorDescription ? `: ${err.errorDescription}` : err.requiredScope ? `: needs the scope ${err.requiredScope}` : "";
  return new UserError(`${parts.join(" ")}${said}`);
}

export function registerApiCommand(program: Command): void {
  program
    .command("api [operation]")
    .description("call any operation of the service's API with a stored token and print its JSON answer (--list shows them)")
    .option("--param <key=value>", "a path or query parameter (repeat it; a key given twice is sent as a list)", (v: string, all: string[] = []) => [...all, v])
    .option("--data <key=value>", "a form field of a POST (repeat it)", (v: string, all: string[] = []) => [...all, v])
    .option("--paginate", "follow the listing's pages (has_more/next_offset or the cursor) and print every item as one JSON array")
    .option("--account <name>", "the account whose token is used (default: the only user account)")
    .option("--yes", "send a write without asking (needed when standard input is not a terminal)")
    .addOption(new Option("--list", "print the catalogue: each operation's method, path, token and scopes, and whether the service removed it"))
    .addHelpText(
      "after",
      "\nThe answer is printed as the service sent it: indented in a terminal, one line in a pipe. A refusal is one line with the\nservice's error and error_code, and exit code 1 (4 when the account must log in again).\nExample: dvault api gallery.folders --param username=someone --paginate",
    )
    .action(async (id: string | undefined, opts: ApiOptions) => {
      if (opts.list) return printOut(catalogueTable());
      if (!id) throw new UserError("name an operation (dvault api --list shows them)");
      const op = named(id);
      const params = { ...parsePairs(opts.param ?? [], "--param"), ...parsePairs(opts.data ?? [], "--data") };
      if (opts.data?.length && op.method === "GET") throw new UserError(`${op.id} is a GET: give its parameters with --param`);
      if (opts.paginate && op.paging === "none") throw new UserError(`${op.id} is not a listing: leave out --paginate`);
      const unfilled = pathParams(op.path).filter((name) => !params[name]);
      if (unfilled.length) throw new UserError(`${op.id} (${op.path}) needs ${unfilled.map((name) => `--param ${name}=…`).join(" and ")}`);
      const dotted = pathParams(op.path).find((name) => params[name] === "." || params[name] === "..");
      if (dotted) throw new UserError(`${op.id} (${op.path}): --param ${dotted}=${String(params[dotted])} names no ${dotted}; give its value`);
      await withServices(async (services) => {
        const row = await accountFor(services, op, opts.account);
        checkGrant(op, row);
        if (op.removed) printErr(`dvault: note: the service removed ${op.id} (${op.removed.since}); it is called anyway`);
        if (op.write) await confirmWrite(op, row, opts.yes === true);
        const { client } = await services.apiFor(row.id);
        try {
          printAnswer(opts.paginate ? await client.rawItems(op.id as OperationId, params) : await client.raw(op.id as OperationId, params));
        } catch (err) {
          throw refusal(op, err);
        }
      });
    });
}
