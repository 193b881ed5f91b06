// One account's token provider, handed to the HTTP transport: it keeps the session in hand and asks the
// token manager (src/api/token-manager.ts) for a new one when it is stale or was refused.
import type { TokenIdentity, TokenProvider } from "./token-provider.ts";
import type { Session, Trigger } from "./token-session.ts";
import type { StoredAccount } from "./token-store.ts";

/** What a provider needs of the token manager. */
export type SessionSource = {
  readonly oauth: { readonly clientId: string };
  session(accountId: number, trigger: Trigger): Promise<Session>;
  isFresh(session: Session, minValidityMs: number): boolean;
};

/** A TokenProvider for one account (user or client), handed to the HTTP transport. */
export class AccountTokens implements TokenProvider {
  private cached: Session | undefined;
  private readonly ident: TokenIdentity;

  constructor(
    private readonly manager: SessionSource,
    readonly row: StoredAccount,
  ) {
    this.ident = {
      kind: row.kind,
      clientId: row.clientId ?? manager.oauth.clientId,
      ...(row.userId ? { userId: row.userId } : {}),
      account: row.name,
    };
  }

  get accountId(): number {
    return this.row.id;
  }

  get name(): string {
    return this.row.name;
  }

  identity(): TokenIdentity {
    return this.ident;
  }

  async getAccessToken(): Promise<string> {
    if (this.cached && this.manager.isFresh(this.cached, 0)) return this.cached.accessToken;
    return this.use(await this.manager.session(this.row.id, { kind: "expiry", minValidityMs: 0 }));
  }

  async refreshAfterUnauthorized(failedToken: string): Promise<string> {
    this.cached = undefined;
    return this.use(await this.manager.session(this.row.id, { kind: "unauthorized", failedToken }));
  }

  /** For long jobs: a token that stays valid at least `minValidityMs` (refreshing now if it would not). */
  async ensureValidFor(minValidityMs: number): Promise<string> {
    if (this.cached && this.manager.isFresh(this.cached, minValidityMs)) return this.cached.accessToken;
    return this.use(await this.manager.session(this.row.id, { kind: "expiry", minValidityMs }));
  }

  /** Refreshes now through the same single-flight path (the keep-alive job of idle accounts uses it). */
  async refreshNow(): Promise<string> {
    this.cached = undefined;
    return this.use(await this.manager.session(this.row.id, { kind: "forced" }));
  }

  /** When the token in hand expires (epoch ms), if one is held. */
  expiresAt(): number | undefined {
    return this.cached?.expiresAt;
  }

  private use(session: Session): string {
    this.cached = session;
    return session.accessToken;
  }
}

export function clientRowName(clientId: string): string {
  return `client:${clientId}`;
}
