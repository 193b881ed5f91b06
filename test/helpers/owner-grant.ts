// The simulator's owner logged in: a user grant issued by the simulator and stored encrypted, as
// `dvault auth login` would store it. Shared by the sync harness, the fault suite and the benches.
import type { Services } from "../../src/services.ts";
import type { Simulator } from "../../src/simulator/server.ts";
import type { SyncAccount } from "../../src/sync/source.ts";

/** `issued`: a grant the test already holds (to spend its refresh token elsewhere, say); else a new one. */
export async function storeOwnerGrant(services: Services, sim: Simulator, issued = sim.issueUserToken({ userId: sim.truth.ownerId })): Promise<SyncAccount> {
  const ownerId = sim.truth.ownerId;
  return storeUserGrant(services, sim, { userId: ownerId, name: sim.truth.users.get(ownerId)?.username ?? "owner", issued });
}

/**
 * A grant of the simulator's user `userId`, stored as account `name` (a second account, or the same one logged in again);
 * with `named: false` without its user, as a login whose /user/whoami failed stores it (src/api/store-login.ts).
 */
export async function storeUserGrant(
  services: Services,
  sim: Simulator,
  {
    userId,
    name,
    issued = sim.issueUserToken({ userId }),
    named = true,
  }: { userId: string; name: string; issued?: ReturnType<Simulator["issueUserToken"]>; named?: boolean },
): Promise<SyncAccount> {
  const row = await services.tokens().storeGrant({
    name,
    kind: "user",
    grantType: "authorization_code",
    grant: {
      accessToken: issued.access_token,
      tokenType: "Bearer",
      expiresIn: issued.expires_in,
      refreshToken: issued.refresh_token,
      scopes: issued.scope.split(" "),
    },
    clientAuth: "basic",
    requestedAt: services.now(),
    userId: named ? userId : null,
    username: named ? name : null,
  });
  return { id: row.id, name: row.name, userId, username: name };
}
