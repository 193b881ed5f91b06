// What a user token may see of the simulator's world, computed from its ground truth alone (never from
// dvault's code): the galleries (every folder and the deviations in no folder), collections and profile
// posts of the account owner and of each tracked user, and the owner's notes, messages and watch feed.
// With an offset ceiling, only what some listing reaches before it. The property tests compare the mirror
// with this, id by id.
import { galleryAllIds, isGone, type GroundTruth, type SimDeviation } from "../../src/simulator/dataset.ts";

export type Member = { kind: "gallery" | "collection"; folderid: string; deviationid: string; position: number };

export type VisibleTruth = {
  /** By author (the owner, each tracked user): their live deviations that some listing shows. */
  authored: Map<string, string[]>;
  /** Live deviations in the listed collections (deleted favourites are stubs, not live). */
  collectionDeviations: string[];
  members: Member[];
  noteids: string[];
  messageids: string[];
  /** One entry per visible feed item: by whom, and the deviations of its bucket. */
  feedItems: Array<{ by: string; deviationids: string[] }>;
  /** Profile posts of the owner and each tracked user: journal deviation ids and status ids. */
  profilePosts: string[];
  /** Live gallery deviations of each user that no listing reaches before the ceiling. */
  unreachable: Map<string, string[]>;
  /** Folders whose listing is cut by the ceiling while something visible lies past it. */
  truncatedFolders: string[];
};

/** Page size of every gallery and collection listing (docs/service-behaviour.md#page-size-maxima). */
const PAGE = 24;

/**
 * The first slots a listing reaches: the simulator serves offsets up to the ceiling, in pages of 24 from
 * 0 (docs/service-behaviour.md#offset-ceiling). Infinity without a ceiling.
 */
export function reachableSlots(ceiling: number | undefined): number {
  return ceiling === undefined ? Number.POSITIVE_INFINITY : (Math.floor(ceiling / PAGE) + 1) * PAGE;
}

export function visibleTruth(truth: GroundTruth, options: { tracked?: readonly string[]; ceiling?: number } = {}): VisibleTruth {
  const slots = reachableSlots(options.ceiling);
  const dev = (id: string) => truth.deviations.get(id) as SimDeviation | undefined;
  const authorGone = (d: { authorId: string }) => isGone(truth.users.get(d.authorId));
  // What a user token asking for mature content sees of a listed deviation (docs/service-behaviour.md#user-error-codes).
  const visible = (id: string) => {
    const d = dev(id);
    return d !== undefined && !d.isDeleted && !authorGone(d);
  };
  // Collections list deleted favourites as stubs and hide those of gone artists (docs/service-behaviour.md#deleted-stubs).
  const listedInCollection = (id: string) => dev(id) !== undefined && (dev(id)!.isDeleted || !authorGone(dev(id)!));
  const members: Member[] = [];
  const seen = new Set<string>();
  const unreachable = new Map<string, string[]>();
  const truncatedFolders: string[] = [];
  const collectionDeviations = new Set<string>();
  const profilePosts: string[] = [];
  const owners = [truth.ownerId, ...(options.tracked ?? [])];

  for (const owner of owners) {
    const reached = new Set<string>();
    for (const f of truth.galleryFolders.filter((g) => g.ownerId === owner)) {
      const live = f.deviationIds.filter(visible);
      const shown = f.deviationIds.slice(0, slots).filter(visible);
      if (shown.length < live.length) truncatedFolders.push(f.folderid);
      shown.forEach((deviationid, i) => {
        reached.add(deviationid);
        members.push({ kind: "gallery", folderid: f.folderid, deviationid, position: i - live.length });
      });
    }
    const all = galleryAllIds(truth, owner);
    for (const id of all.slice(0, slots).filter(visible)) reached.add(id);
    for (const id of reached) seen.add(id);
    unreachable.set(
      owner,
      all.filter((id) => visible(id) && !reached.has(id)),
    );

    for (const f of truth.collectionFolders.filter((c) => c.ownerId === owner)) {
      const listed = f.deviationIds.filter(listedInCollection);
      const shown = f.deviationIds.slice(0, slots).filter(listedInCollection);
      if (shown.length < listed.length) truncatedFolders.push(f.folderid);
      for (const [i, deviationid] of shown.entries())
        members.push({ kind: "collection", folderid: f.folderid, deviationid, position: i - f.deviationIds.length });
      for (const id of shown) {
        if (dev(id)!.isDeleted) continue;
        collectionDeviations.add(id);
        seen.add(id);
      }
    }

    // /user/profile/posts: the user's journals, and (like the real one) only every other status update.
    profilePosts.push(...all.filter((id) => visible(id) && dev(id)!.kind === "journal"));
    profilePosts.push(...truth.statuses.filter((s, i) => s.authorId === owner && i % 2 === 0).map((s) => s.statusid));
  }

  const feedItems = truth.feed
    .filter((item) => !isGone(truth.users.get(item.byUserId)))
    .map((item) => ({ by: item.byUserId, deviationids: item.deviationIds.filter(visible) }));
  // Other witnesses of the same works: the feed, profile posts (a cursor listing: no offset ceiling) and
  // the deviations messages are about.
  for (const item of feedItems) for (const id of item.deviationids) seen.add(id);
  for (const id of profilePosts) if (dev(id)) seen.add(id);
  for (const m of truth.messages) if (m.subjectDeviationId && visible(m.subjectDeviationId)) seen.add(m.subjectDeviationId);

  const authored = new Map<string, string[]>();
  for (const owner of owners)
    authored.set(
      owner,
      [...seen].filter((id) => dev(id)!.authorId === owner),
    );

  return {
    authored,
    collectionDeviations: [...collectionDeviations],
    members,
    noteids: truth.notes.map((n) => n.noteid),
    messageids: truth.messages.map((m) => m.messageid),
    feedItems,
    profilePosts,
    unreachable,
    truncatedFolders,
  };
}
