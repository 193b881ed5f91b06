// What the token owner (src/api/token-manager.ts) needs from storage, declared here so the API layer knows
// nothing of the database (docs/ARCHITECTURE.md#what-each-folder-may-import). src/db/account-token-store.ts
// implements it; src/services.ts wires the two together.

export type AccountKind = "user" | "client";
export type GrantType = "authorization_code" | "implicit" | "client_credentials" | "imported";
/** How dvault authenticates the client at the token endpoint for a grant. */
export type ClientAuth = "basic" | "form" | "none";
export type TokenState = "ok" | "expiring" | "needs_reauth" | "revoked";

/** An account as the token owner reads it: identity, grant state and the sealed tokens. */
export type StoredAccount = {
  id: number;
  name: string;
  kind: AccountKind;
  userId: string | null;
  username: string | null;
  clientId: string | null;
  grantType: GrantType | null;
  clientAuth: ClientAuth;
  scopes: string[];
  state: TokenState;
  stateReason: string | null;
  stateChangedAt: Date;
  accessTokenEnc: Uint8Array | null;
  accessIssuedAt: Date | null;
  accessExpiresAt: Date | null;
  refreshTokenEnc: Uint8Array | null;
  /** A keyed hash of the refresh token: the compare-and-swap handle of a rotation, never the token. */
  refreshTokenFingerprint: string | null;
  refreshIssuedAt: Date | null;
  grantStartedAt: Date | null;
  lastRefreshAt: Date | null;
};

/** Token columns as written: ciphertexts (bound to the row id) and their metadata. */
export type SealedTokens = {
  accessTokenEnc: Uint8Array;
  accessIssuedAt: Date;
  accessExpiresAt: Date;
  /** null when the grant has no refresh token (implicit, client credentials). */
  refreshTokenEnc: Uint8Array | null;
  refreshTokenFingerprint: string | null;
  refreshIssuedAt: Date | null;
};

/** A new grant (login, import, client credentials); it replaces whatever the account held. */
export type GrantRecord = {
  name: string;
  kind: AccountKind;
  clientId: string;
  grantType: GrantType;
  clientAuth: ClientAuth;
  userId?: string | null;
  username?: string | null;
  scopes: string[];
  state: TokenState;
  stateReason: string | null;
  now: Date;
  /** Encrypts the tokens for the row's id, known only once the row exists. */
  seal: (accountId: number) => SealedTokens;
};

/** The service's answers to one rotation, sealed for the row. */
export type RotatedTokens = SealedTokens & { scopes: string[]; now: Date };

/** One method per thing the token owner does to an account; each is one statement (or one transaction). */
export type TokenStore = {
  findByName(name: string): Promise<StoredAccount | null>;
  /** Throws (a one-line UserError) unless the store takes a write now: checked before a refresh token is spent. */
  proveWritable(): Promise<void>;
  findById(id: number): Promise<StoredAccount | null>;
  createOrUpdateFromGrant(grant: GrantRecord): Promise<StoredAccount>;
  /** Compare-and-swap on the spent refresh token's fingerprint; false when another writer got there first. */
  saveRotatedToken(id: number, oldFingerprint: string, rotated: RotatedTokens): Promise<boolean>;
  saveClientToken(id: number, sealed: Pick<SealedTokens, "accessTokenEnc" | "accessIssuedAt" | "accessExpiresAt"> & { now: Date }): Promise<void>;
  /** With a fingerprint, only if the row still holds that refresh token; true when the row changed. */
  markNeedsReauth(args: { id: number; reason: string; now: Date; fingerprint?: string | null }): Promise<boolean>;
  /** Only a healthy row changes; true when it did. */
  markExpiring(args: { id: number; reason: string; now: Date }): Promise<boolean>;
  markRevoked(args: { id: number; reason: string; now: Date; refreshOnly: boolean }): Promise<void>;
};
