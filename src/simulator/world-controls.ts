// The Simulator handle's levers on the world, beside the HTTP server: tokens issued without the OAuth
// dance, activity, the CDN's files and settings, and the weekly download quota.
import { applyActivity } from "./activity.ts";
import { deviationBytes } from "./cdn.ts";
import { positiveOrNull } from "./create-world.ts";
import type { SimDeviation } from "./dataset.ts";
import { fileSha256, simFile } from "./files.ts";
import type { Simulator } from "./options.ts";
import { CLIENT_TOKEN_SCOPES, KNOWN_SCOPES } from "./tokens.ts";
import type { SimWorld } from "./world.ts";

export type WorldControls = Pick<
  Simulator,
  | "issueUserToken"
  | "issueClientToken"
  | "expireAccessTokens"
  | "activity"
  | "fileBytes"
  | "fileSha256"
  | "fileSize"
  | "quotaUsed"
  | "quotaStatus"
  | "setDownloadQuota"
  | "setCdn"
  | "setVelocity"
  | "velocity"
>;

/** Userids are uppercase UUIDs; "client:<id>" keys (client-token downloads) are kept as given. */
function quotaKeyOf(userId: string): string {
  return userId.startsWith("client:") ? userId : userId.toUpperCase();
}

export function worldControls(world: SimWorld): WorldControls {
  const { data, clock } = world;

  function issueUserToken(opts: { clientId?: string; userId?: string; scopes?: string[] } = {}) {
    const clientId = opts.clientId ?? "1001";
    if (!world.tokens.clients.has(clientId)) throw new Error(`no simulated client ${clientId}`);
    const userId = opts.userId ?? data.ownerId;
    if (!data.users.has(userId)) throw new Error(`no simulated user ${userId}`);
    const scopes = opts.scopes ?? [...KNOWN_SCOPES];
    const grantId = world.tokens.newGrantId();
    const access = world.tokens.issueAccess({ kind: "user", clientId, userId, scopes, grantId });
    const refresh = world.tokens.issueRefresh({ clientId, userId, scopes, grantId });
    return { access_token: access.token, refresh_token: refresh.token, expires_in: world.tokens.accessLifetimeS, scope: scopes.join(" ") };
  }

  function issueClientToken(opts: { clientId?: string } = {}) {
    const clientId = opts.clientId ?? "1001";
    if (!world.tokens.clients.has(clientId)) throw new Error(`no simulated client ${clientId}`);
    const access = world.tokens.issueAccess({ kind: "client", clientId, scopes: CLIENT_TOKEN_SCOPES });
    return { access_token: access.token, expires_in: world.tokens.accessLifetimeS };
  }

  function deviationById(id: string): SimDeviation {
    const d = data.deviations.get(id.toUpperCase());
    if (!d) throw new Error(`no simulated deviation ${id}`);
    return d;
  }

  return {
    issueUserToken,
    issueClientToken,
    expireAccessTokens: () => world.tokens.expireAllAccess(),
    activity: (input) => applyActivity(world, input),
    fileBytes: (id) => deviationBytes(deviationById(id), "original"),
    fileSha256: (id) => {
      const file = simFile(deviationById(id), "original", "", "");
      if (!file) return Promise.reject(new Error(`simulated deviation ${id} has no original file`));
      return fileSha256(file);
    },
    fileSize: (id) => {
      const file = simFile(deviationById(id), "original", "", "");
      if (!file) throw new Error(`simulated deviation ${id} has no original file`);
      return file.size;
    },
    quotaUsed: (userId) => world.quota.used(quotaKeyOf(userId), clock.nowMs()),
    quotaStatus: (userId) => world.quota.status(quotaKeyOf(userId), clock.nowMs()),
    setDownloadQuota: ({ userId, allowance }) => world.quota.setAllowance(allowance, userId === undefined ? undefined : quotaKeyOf(userId)),
    setCdn: (settings) => {
      if (settings.bytesPerSecond !== undefined) world.cdn.bytesPerSecond = positiveOrNull(settings.bytesPerSecond ?? undefined);
      if (settings.ranges !== undefined) world.cdn.ranges = settings.ranges;
      if (settings.etagOnPartial !== undefined) world.cdn.etagOnPartial = settings.etagOnPartial;
      if (settings.weakEtags !== undefined) world.cdn.weakEtags = settings.weakEtags;
      return { ...world.cdn };
    },
    setVelocity: (settings) => world.velocity.set(settings),
    velocity: () => ({ settings: world.velocity.get(), keys: world.velocity.state(clock.nowMs()) }),
  };
}
