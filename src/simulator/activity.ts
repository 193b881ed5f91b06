// Changes to the simulated world between syncs ("someone posted", "a deviation was deleted"), driven by
// tests and the demo through Simulator.activity() or POST /_sim/activity.
import { addGeneratedMessage, findUser, isGone, makeDeviation, owner, simIso, type DeletedLookup, type DeviationKind, type SimNote } from "./dataset.ts";
import type { SimWorld } from "./world.ts";
import { commentKey, touch } from "./world.ts";

export type ActivityInput =
  | { kind: "add_deviation"; username?: string; title?: string; deviationKind?: DeviationKind; folderid?: string; isMature?: boolean }
  | { kind: "edit_title"; deviationid: string; title: string }
  | { kind: "edit_description"; deviationid: string; description: string }
  /** `lookup` pins what /deviation/{deviationid} answers afterwards (default: variance.ts#deletedLookupOf). */
  | { kind: "delete_deviation"; deviationid: string; lookup?: DeletedLookup }
  /** A notification for the owner; `from`, `deviationid` (its subject) and `body` (a comment's text) pin what is random otherwise. */
  | { kind: "new_message"; type?: string; from?: string; deviationid?: string; body?: string }
  | { kind: "new_note"; from?: string; subject?: string; body?: string }
  | { kind: "new_comment"; deviationid: string; body?: string; from?: string }
  | { kind: "new_watcher"; username?: string }
  /** The user deactivates their account: error_code 1 everywhere (docs/service-behaviour.md#user-error-codes). */
  | { kind: "deactivate_user"; username: string }
  /** Staff suspend the account: error_code 0. */
  | { kind: "suspend_user"; username: string }
  /** Back to active, from either. */
  | { kind: "reactivate_user"; username: string }
  /** The user takes another name: the old one then answers "not found" (docs/service-behaviour.md#user-error-codes). */
  | { kind: "rename_user"; username: string; to: string };

export const ACTIVITY_KINDS = [
  "add_deviation",
  "edit_title",
  "edit_description",
  "delete_deviation",
  "new_message",
  "new_note",
  "new_comment",
  "new_watcher",
  "deactivate_user",
  "suspend_user",
  "reactivate_user",
  "rename_user",
] as const;

export class ActivityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ActivityError";
  }
}

function mustDeviation(world: SimWorld, id: string) {
  const d = world.data.deviations.get(String(id).toUpperCase());
  if (!d) throw new ActivityError(`no deviation ${id}`);
  return d;
}

/** A lookup answer as POST /_sim/activity may send it: {kind: "stub"} or {kind: "refusal", errorCode: <integer> | null}. */
function checkedLookup(lookup: DeletedLookup): DeletedLookup {
  if (lookup?.kind === "stub") return { kind: "stub" };
  if (lookup?.kind === "refusal" && (lookup.errorCode === null || Number.isInteger(lookup.errorCode))) return { kind: "refusal", errorCode: lookup.errorCode };
  throw new ActivityError('lookup is {"kind":"stub"} or {"kind":"refusal","errorCode":<integer>|null}');
}

function mustUser(world: SimWorld, name: string | undefined) {
  const u = findUser(world.data, name);
  if (!u) throw new ActivityError(`no user ${name}`);
  return u;
}

function others(world: SimWorld) {
  return [...world.data.users.values()].filter((u) => u.userid !== world.data.ownerId && !isGone(u));
}

type UserActivity = Extract<ActivityInput, { kind: "deactivate_user" | "suspend_user" | "reactivate_user" | "rename_user" }>;

/** What happens to a user's account: deactivated, suspended, back again, or another name. */
function userActivity(world: SimWorld, input: UserActivity): Record<string, unknown> {
  const u = mustUser(world, input.username);
  if (input.kind === "rename_user") {
    if (findUser(world.data, input.to)) throw new ActivityError(`the name ${input.to} is taken`);
    world.data.usersByName.delete(u.username.toLowerCase());
    u.username = input.to;
    world.data.usersByName.set(input.to.toLowerCase(), u);
    return { userid: u.userid, username: u.username };
  }
  u.isDeactivated = input.kind === "deactivate_user";
  if (input.kind === "suspend_user") u.isSuspended = true;
  else if (u.isSuspended !== undefined) u.isSuspended = false;
  // A gone account's grants die with it (the service then answers its tokens with 401).
  if (isGone(u)) world.tokens.revokeAllForUser(u.userid);
  return { userid: u.userid, isDeactivated: u.isDeactivated, ...(u.isSuspended !== undefined ? { isSuspended: u.isSuspended } : {}) };
}

export function applyActivity(world: SimWorld, input: ActivityInput): Record<string, unknown> {
  const data = world.data;
  const me = owner(data);
  const nowMs = world.clock.nowMs();
  touch(world);
  switch (input.kind) {
    case "add_deviation": {
      const author = input.username ? mustUser(world, input.username) : me;
      const folders = data.galleryFolders.filter((f) => f.ownerId === author.userid);
      const wanted = input.folderid?.toUpperCase();
      const target = wanted ? folders.find((f) => f.folderid === wanted) : (folders[1] ?? folders[0]);
      if (!target) throw new ActivityError(`${author.username} has no gallery folder ${input.folderid ?? ""}`.trim());
      const d = makeDeviation(world.rng, data, nowMs, {
        authorId: author.userid,
        publishedTime: Math.floor(nowMs / 1000),
        ...(input.title !== undefined ? { title: input.title } : {}),
        ...(input.deviationKind !== undefined ? { kind: input.deviationKind } : {}),
        ...(input.isMature !== undefined ? { isMature: input.isMature } : {}),
      });
      target.deviationIds.unshift(d.deviationid);
      if (author.userid !== me.userid) {
        data.feed.push({
          seq: ++data.counters.feedSeq,
          ts: simIso(nowMs),
          type: d.kind === "journal" ? "journal_submitted" : "deviation_submitted",
          byUserId: author.userid,
          bucketid: world.rng.hex(16),
          deviationIds: [d.deviationid],
          statusId: null,
          collectionFolderId: null,
        });
      }
      return { deviationid: d.deviationid, folderid: target.folderid };
    }
    case "edit_title": {
      const d = mustDeviation(world, input.deviationid);
      d.title = input.title;
      d.version++;
      return { deviationid: d.deviationid, version: d.version };
    }
    case "edit_description": {
      const d = mustDeviation(world, input.deviationid);
      d.description = input.description;
      d.version++;
      return { deviationid: d.deviationid, version: d.version };
    }
    case "delete_deviation": {
      const d = mustDeviation(world, input.deviationid);
      d.isDeleted = true;
      if (input.lookup !== undefined) d.deletedLookup = checkedLookup(input.lookup);
      d.version++;
      return { deviationid: d.deviationid };
    }
    case "new_message": {
      const mine = input.deviationid
        ? [mustDeviation(world, input.deviationid)]
        : [...data.deviations.values()].filter((d) => d.authorId === me.userid && !d.isDeleted).slice(0, 30);
      const people = input.from ? [mustUser(world, input.from)] : others(world);
      const m = addGeneratedMessage(world.rng, data, mine, people, nowMs, input.type);
      if (input.body !== undefined) m.commentBody = input.body;
      m.isNew = true;
      return { messageid: m.messageid, stackid: m.stackid, type: m.type };
    }
    case "new_note": {
      const from = input.from ? mustUser(world, input.from) : world.rng.pick(others(world));
      const note: SimNote = {
        noteid: String(70_000_000 + data.notes.length * 13 + world.rng.int(0, 12)),
        folderid: "1",
        ts: simIso(nowMs),
        unread: true,
        starred: false,
        sent: false,
        subject: input.subject ?? "New note",
        body: input.body ?? "<p>Hello!</p>",
        fromId: from.userid,
        recipientIds: [me.userid],
      };
      data.notes.unshift(note);
      return { noteid: note.noteid };
    }
    case "new_comment": {
      const d = mustDeviation(world, input.deviationid);
      const from = input.from ? mustUser(world, input.from) : world.rng.pick(others(world));
      const c = {
        commentid: String(4_900_000_000 + data.comments.length),
        parentid: null,
        target: { kind: "deviation" as const, id: d.deviationid },
        posted: simIso(nowMs),
        userId: from.userid,
        body: input.body ?? "New comment",
        hidden: null,
        likes: 0,
        isFeatured: false,
      };
      data.comments.push(c);
      const key = commentKey("deviation", d.deviationid);
      const list = world.index.commentsByTarget.get(key) ?? [];
      list.push(c);
      world.index.commentsByTarget.set(key, list);
      return { commentid: c.commentid };
    }
    case "new_watcher": {
      const u = input.username ? mustUser(world, input.username) : others(world).find((x) => !me.watcherIds.includes(x.userid));
      if (!u) throw new ActivityError("no user left to watch the owner");
      if (!me.watcherIds.includes(u.userid)) me.watcherIds.unshift(u.userid);
      return { userid: u.userid, username: u.username };
    }
    case "deactivate_user":
    case "suspend_user":
    case "reactivate_user":
    case "rename_user":
      return userActivity(world, input);
    default: {
      const never: never = input;
      throw new ActivityError(`unknown activity kind ${JSON.stringify((never as { kind?: unknown }).kind)}`);
    }
  }
}
