// Where the service's OAuth endpoints are, and the two choices a client makes about them.

export type ClientAuthMethod = "basic" | "form" | "none";
export type OAuthVersion = "2.0" | "2.1";

export type OAuthEndpoints = { authorize: string; token: string; revoke: string };

export function oauthEndpoints(serviceBase: string): OAuthEndpoints {
  const base = serviceBase.replace(/\/+$/, "");
  return { authorize: `${base}/oauth2/authorize`, token: `${base}/oauth2/token`, revoke: `${base}/oauth2/revoke` };
}
