// Whether the service knows a user, asked before `dvault track add` stores them: a name nobody has would
// otherwise sit in the track list failing every run. The profile lookup answers a missing user with an
// error code (docs/service-behaviour.md#user-error-codes).
import type { DaClient } from "../api/client.ts";
import type { User } from "../api/types.ts";
import { isApiError, userStateOf } from "../api/errors.ts";
import { UserError } from "../errors.ts";
import { scrubString } from "../redact.ts";

/** The service could not be asked (unreachable, a server error): nothing is known about the user or work. */
export class LookupFailedError extends UserError {}

/** The service's spelling of `username`, its id and user object; a UserError when it has no such user or could not be asked. */
export async function userOnService(client: DaClient, username: string): Promise<{ username: string; userid: string; user: User }> {
  try {
    const profile = await client.profile(username);
    return { username: profile.user.username, userid: profile.user.userid, user: profile.user };
  } catch (err) {
    const state = userStateOf(err);
    if (state === "not_found") throw new UserError(`the service has no user "${username}": nothing was added (check the spelling)`);
    if (state) throw new UserError(`${username} is ${state} on the service: nothing was added`);
    if (!isApiError(err)) throw err;
    throw new LookupFailedError(`could not check that ${username} exists (${scrubString(err.message)}): nothing was added; try again`);
  }
}
