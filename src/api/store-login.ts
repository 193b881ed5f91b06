// A new user grant, from whichever door it came (`dvault auth login`, `auth import`, the dashboard's Connect):
// who it belongs to (/user/whoami), the local name it is stored under, and the one write through the token
// manager (src/api/token-manager.ts), whose store is the accounts table (src/db/account-token-store.ts).
import { scrubString } from "../redact.ts";
import { type Whoami, whoami } from "./account-calls.ts";
import type { TokenManager } from "./token-manager.ts";
import { staticTokenProvider, type TokenProvider } from "./token-provider.ts";
import type { GrantType, ClientAuth, StoredAccount } from "./token-store.ts";
import type { ApiTransport } from "./transport.ts";
import type { TokenGrant } from "./oauth/token-endpoint.ts";

/** The two lookups naming a grant needs (src/db/account.repository.ts has them). */
export type AccountLookup = {
  findByUserId(userId: string): Promise<{ name: string } | null>;
  findByName(name: string): Promise<{ userId: string | null; username: string | null } | null>;
};

export type StoreLoginArgs = {
  tokens: Pick<TokenManager, "storeGrant" | "oauth">;
  accounts: AccountLookup;
  /** A transport for calls made as `provider` (whoami). */
  transportFor(provider: TokenProvider): ApiTransport;
  grant: TokenGrant;
  grantType: GrantType;
  clientAuth: ClientAuth;
  requestedAt: number;
  requestedScopes?: readonly string[];
  /** The local name asked for (--account, the dashboard's reconnect link). */
  requestedName?: string | undefined;
  /** Told each thing a person should know (a failed whoami, a name taken); one line each, without "dvault: ". */
  onNote(line: string): void;
};

/** Names and stores the grant; never throws before storing for want of a name (the grant may hold the only live refresh token). */
export async function storeLogin(args: StoreLoginArgs): Promise<{ row: StoredAccount; who: Whoami | undefined }> {
  const who = await identify(args);
  const name = await chooseAccountName(args, who);
  const row = await args.tokens.storeGrant({
    name,
    kind: "user",
    grantType: args.grantType,
    grant: args.grant,
    clientAuth: args.clientAuth,
    requestedAt: args.requestedAt,
    ...(args.requestedScopes ? { requestedScopes: args.requestedScopes } : {}),
    userId: who?.userid ?? null,
    username: who?.username ?? null,
  });
  return { row, who };
}

/** Who the new token belongs to, through the API transport; undefined (with a note) if the call fails. */
async function identify({ tokens, transportFor, grant, onNote }: StoreLoginArgs): Promise<Whoami | undefined> {
  const provider = staticTokenProvider(grant.accessToken, { kind: "user", clientId: tokens.oauth.clientId, account: "(new login)" });
  try {
    return await whoami(transportFor(provider));
  } catch (err) {
    onNote(`warning: /user/whoami failed (${scrubString(err instanceof Error ? err.message : String(err))}); storing the grant without the user's name`);
    return undefined;
  }
}

/** The local name for a grant: the one asked for, else the name the user already has here, else the username. */
async function chooseAccountName({ accounts, requestedName: requested, onNote }: StoreLoginArgs, who: Whoami | undefined): Promise<string> {
  const existing = who ? await accounts.findByUserId(who.userid) : null;
  if (existing && requested && existing.name !== requested) {
    onNote(`${who?.username} is already stored as account "${existing.name}"; updating that account instead of "${requested}"`);
    return existing.name;
  }
  if (existing) return existing.name;
  let name = requested ?? who?.username ?? "default";
  const taken = await accounts.findByName(name);
  if (taken && who && taken.userId && taken.userId !== who.userid) {
    const alternative = who.username !== name && !(await accounts.findByName(who.username)) ? who.username : `${name}-${who.userid.slice(0, 8)}`;
    onNote(`account "${name}" belongs to another user (${taken.username ?? taken.userId}); storing ${who.username} as "${alternative}"`);
    name = alternative;
  }
  return name;
}
