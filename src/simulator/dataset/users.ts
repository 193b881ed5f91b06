// Users of the simulated service: account state (active, deactivated, suspended) and how the generator draws
// the account owner and everyone else, with who watches whom. The record is dataset/model.ts's SimUser.
import type { Rng } from "../rng.ts";
import type { Dataset, DatasetSize, GenContext, SimUser, WatchFlags } from "./model.ts";
import { ADJECTIVES, cap, COUNTRIES, isoAt, NAME_PARTS, NOUNS, TAGS } from "./text.ts";

export type UserState = "active" | "deactivated" | "suspended";

/** A user's account state; suspension wins if both flags are set. */
export function userState(u: { readonly isDeactivated: boolean; readonly isSuspended?: boolean | undefined }): UserState {
  if (u.isSuspended === true) return "suspended";
  return u.isDeactivated ? "deactivated" : "active";
}

/** Deactivated or suspended: the user's profile and listings answer an error, their works vanish from others' listings. */
export function isGone(u: { readonly isDeactivated: boolean; readonly isSuspended?: boolean | undefined } | undefined): boolean {
  return u !== undefined && userState(u) !== "active";
}

/** The account owner, the tracked users (with galleries) and everyone else, with who watches whom. */
export type People = { owner: SimUser; tracked: SimUser[]; people: SimUser[] };

/** Draws the owner, then tracked users, watchers, friends and a pool of commenters and fave authors. */
export function makePeople(ctx: GenContext, size: DatasetSize): People {
  const { rng, startMs } = ctx;
  const taken = new Set<string>(["simartist"]);

  const owner = makeUser(ctx, "SimArtist", "premium");
  owner.artistLevel = "Hobbyist";
  ctx.dataset.ownerId = owner.userid;

  // Other users: tracked (with galleries), watchers, friends, and a pool of commenters/fave authors.
  const tracked = Array.from({ length: size.trackedUsers }, () => makeUser(ctx, uniqueName(rng, taken)));
  const others = Array.from({ length: Math.max(10, size.watchers + Math.ceil(size.friends / 2)) }, () =>
    makeUser(ctx, uniqueName(rng, taken), rng.chance(0.05) ? "group" : "regular"),
  );
  const people = [...tracked, ...others];

  owner.watcherIds = rng.sample(others, size.watchers).map((u) => u.userid);
  const friendPool = [...tracked, ...rng.sample(others, Math.max(0, size.friends - tracked.length))];
  owner.friends = friendPool.slice(0, Math.max(size.friends, tracked.length)).map((u) => ({
    userid: u.userid,
    watch: { ...watchFlags(rng), deviations: true },
    lastvisit: rng.chance(0.5) ? isoAt(startMs - rng.int(1, 90) * 86_400_000) : null,
  }));
  for (const u of people) {
    u.watcherIds = rng
      .sample(people, rng.int(0, 8))
      .filter((w) => w !== u)
      .map((w) => w.userid);
    u.friends = rng
      .sample(people, rng.int(0, 6))
      .filter((w) => w !== u)
      .map((w) => ({ userid: w.userid, watch: watchFlags(rng), lastvisit: null }));
    if (owner.watcherIds.includes(u.userid)) u.friends.push({ userid: owner.userid, watch: watchFlags(rng), lastvisit: null });
  }
  return { owner, tracked, people };
}

function makeUser(ctx: GenContext, username: string, type: SimUser["type"] = "regular"): SimUser {
  const { rng } = ctx;
  const [countryid, country] = rng.pick(COUNTRIES);
  const userid = rng.uuid();
  const user: SimUser = {
    userid,
    username,
    usericon: `https://a.deviantart.net/avatars/${username[0]}/${username[1] ?? "_"}/${username.toLowerCase()}.png`,
    type,
    joindate: isoAt(ctx.startMs - rng.int(200, 5000) * 86_400_000),
    realName: rng.chance(0.7) ? `${rng.pick(NAME_PARTS)} ${rng.pick(NOUNS)}` : "",
    tagline: rng.chance(0.6) ? `${rng.pick(ADJECTIVES)} things, mostly ${rng.pick(TAGS)}` : "",
    country,
    countryid,
    website: rng.chance(0.4) ? `https://${username.toLowerCase()}.example.net` : "",
    bio: `<b>Hi!</b> I draw ${rng.pick(TAGS)}.`,
    artistLevel: rng.pick(["Student", "Hobbyist", "Professional", null]),
    artistSpecialty: rng.pick(["Digital Art", "Traditional Art", "Photography", "Literature", null]),
    sex: rng.pick(["m", "f", null]),
    age: rng.chance(0.5) ? rng.int(18, 60) : null,
    isDeactivated: false,
    watcherIds: [],
    friends: [],
    profilePageviews: rng.int(100, 500_000),
  };
  ctx.dataset.users.set(userid, user);
  ctx.dataset.usersByName.set(username.toLowerCase(), user);
  return user;
}

function watchFlags(rng: Rng): WatchFlags {
  return {
    friend: rng.chance(0.3),
    deviations: true,
    journals: rng.chance(0.8),
    forum_threads: rng.chance(0.2),
    critiques: rng.chance(0.4),
    scraps: rng.chance(0.5),
    activity: rng.chance(0.6),
    collections: rng.chance(0.5),
  };
}

function uniqueName(rng: Rng, taken: Set<string>): string {
  for (;;) {
    const name = `${rng.pick(NAME_PARTS)}${cap(rng.pick(NAME_PARTS))}${rng.chance(0.5) ? rng.int(1, 999) : ""}`;
    if (!taken.has(name.toLowerCase())) {
      taken.add(name.toLowerCase());
      return name;
    }
  }
}

/** Looks a user up by username (case-insensitive) or userid. */
export function findUser(dataset: Dataset, key: string | undefined): SimUser | undefined {
  if (!key) return undefined;
  return dataset.usersByName.get(key.toLowerCase()) ?? dataset.users.get(key.toUpperCase());
}

export function owner(dataset: Dataset): SimUser {
  const u = dataset.users.get(dataset.ownerId);
  if (!u) throw new Error("simulator dataset has no owner");
  return u;
}
