// Tracking users named as a person writes them (`dvault track add`, the dashboard's "Track an artist" box): the
// same parser as `track import` (username.ts: names, ~name, profile, gallery and favourites URLs, old and new
// forms), the service asked that each user exists (user-on-service.ts), and nothing stored unless all do.
import type { DaClient } from "../api/client.ts";
import { distinctUsers } from "../db/mirror-rows.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { UserRepository } from "../db/user.repository.ts";
import { withTransaction } from "../db/with-transaction.ts";
import type { PgPool } from "../db/connect.ts";
import { UserError } from "../errors.ts";
import { quoted } from "./parse.ts";
import { userOnService } from "./user-on-service.ts";
import { userFromText } from "./username.ts";

/** The entries of a box: one a line or comma-separated (no username or URL holds a comma or a line break). */
export function splitUserInputs(text: string): string[] {
  return text
    .split(/[\r\n,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** The username each input names; a UserError naming the first that names nobody. */
export function usernamesOf(inputs: readonly string[]): string[] {
  if (inputs.length === 0) throw new UserError("no user given: give a username, ~name or a profile URL");
  return inputs.map((input) => {
    const named = userFromText(input);
    if (!("username" in named)) throw new UserError(`"${quoted(input)}" names no user (${named.unresolved}): give a username, ~name or a profile URL`);
    return named.username;
  });
}

export type TrackedNow = { username: string; userid: string };

/** The account that tracks: its own user is never tracked by it (its own sources archive that user already). */
export type TrackingAccount = { id: number; name: string; userId: string | null };

/** The line that refuses tracking the account's own user: its gallery would be synced twice, for nothing. */
function ownUserRefusal(username: string, account: { name: string }): string {
  return `${username} is account "${account.name}" itself: its gallery, favourites and journals are already archived by its own sources; nothing was added`;
}

/**
 * Asks the service for each user (a UserError for the first it does not know, or for the account's own user, before
 * anything is stored), then tracks them all and puts their profiles in the mirror (so the dashboard's artist page
 * exists before the first sync), in one transaction. Returns them in the service's spelling, each once.
 */
export async function trackUsers(args: {
  client: DaClient;
  pool: PgPool;
  account: TrackingAccount;
  usernames: readonly string[];
  at: Date;
}): Promise<TrackedNow[]> {
  const found = [];
  for (const name of args.usernames) {
    const user = await userOnService(args.client, name);
    if (user.userid === args.account.userId) throw new UserError(ownUserRefusal(user.username, args.account));
    found.push(user);
  }
  const users = distinctUsers(found.map((f) => f.user));
  const accountId = args.account.id;
  await withTransaction(args.pool, async (tx) => {
    await new UserRepository(tx).upsertUsers(users, args.at);
    const tracked = new TrackedUserRepository(tx);
    for (const u of users) await tracked.addTrackedUser({ accountId, username: u.username, userid: u.userid, tokenKind: "user", at: args.at });
  });
  return users.map((u) => ({ username: u.username, userid: u.userid }));
}

/**
 * Stops tracking users named as `trackUsers` takes them (a name, ~name, a profile URL: what a person copies from
 * where they added it), all or none: a UserError naming those the account does not track, before any is removed.
 * Returns the names as given.
 */
export async function untrackUsers(args: { pool: PgPool; account: { id: number; name: string }; usernames: readonly string[]; at: Date }): Promise<string[]> {
  const names = [...new Map(args.usernames.map((n) => [n.toLowerCase(), n])).values()];
  return withTransaction(args.pool, async (tx) => {
    const repo = new TrackedUserRepository(tx);
    const tracked = await repo.trackedAmong(
      args.account.id,
      names.map((n) => n.toLowerCase()),
    );
    const missing = names.filter((n) => !tracked.has(n.toLowerCase()));
    if (missing.length > 0) throw new UserError(`${args.account.name} does not track ${missing.join(", ")}: nothing was removed; see dvault track list`);
    for (const name of names) await repo.removeTrackedUser(args.account.id, name, args.at);
    return names;
  });
}
