// The seam between the API client and token storage: the client asks for a bearer token and, after a
// 401 invalid_token, for a refreshed one. The OAuth issue implements it over the encrypted token store.

/** Who a request is made as: the pacer keys its throttle on this, never on the token itself. */
export type TokenIdentity = {
  kind: "user" | "client";
  clientId: string;
  /** The service's userid for user tokens. */
  userId?: string;
  /** dvault's local account name, for logs and errors. */
  account?: string;
};

export type TokenProvider = {
  identity(): TokenIdentity;
  /** A currently valid access token (refreshed ahead of expiry by the implementation). */
  getAccessToken(): Promise<string>;
  /**
   * Called once after a 401 invalid_token with the token that failed. Returns a newer token: refreshed
   * single-flight, or the one another caller already refreshed. Throws when the grant is lost.
   */
  refreshAfterUnauthorized(failedToken: string): Promise<string>;
};

/** A fixed token, for tests and one-off calls; it cannot refresh. */
export function staticTokenProvider(token: string, identity: TokenIdentity): TokenProvider {
  return {
    identity: () => identity,
    getAccessToken: async () => token,
    refreshAfterUnauthorized: async () => {
      throw new Error(`the access token for ${identity.account ?? identity.clientId} expired and cannot be refreshed`);
    },
  };
}

/** The pacer key for an identity: (client id, user), or the client id alone for client-credentials tokens. */
export function pacerKey(identity: TokenIdentity): string {
  return identity.kind === "user" && identity.userId ? `${identity.clientId}:${identity.userId}` : `${identity.clientId}:client`;
}
