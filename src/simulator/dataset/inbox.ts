// The owner's inbox on the simulated service: note folders and notes, notifications (messages, stacked by
// subject) and the legacy watch feed, as the generator draws them. Activity adds messages the same way.
import type { Rng } from "../rng.ts";
import { HOSTILE_TITLES } from "./hostile.ts";
import type { Dataset, GenContext, SimUser, SimDeviation, MessageBox, FeedbackType, SimMessage } from "./model.ts";
import { cap, isoAt, NOUNS } from "./text.ts";
import type { People } from "./users.ts";

/** The system folders (Inbox, Sent), the owner's own note folders and notes, newest first. */
export function makeNotes(ctx: GenContext, { owner, people }: People): void {
  const { rng, startMs, dataset } = ctx;
  const { size } = dataset;
  dataset.noteFolders.push({ folderid: "1", parentid: null, title: "Inbox", system: true });
  dataset.noteFolders.push({ folderid: "2", parentid: null, title: "Sent", system: true });
  for (let i = 0; i < size.noteFolders; i++) {
    dataset.noteFolders.push({ folderid: rng.uuid(), parentid: null, title: `${cap(rng.pick(NOUNS))} notes`, system: false });
  }
  const customNoteFolders = dataset.noteFolders.filter((f) => !f.system);
  for (let i = 0; i < size.notes; i++) {
    const sent = rng.chance(0.25);
    const other = rng.pick(people);
    dataset.notes.push({
      noteid: String(60_000_000 + i * 13 + rng.int(0, 12)),
      folderid: sent ? "2" : customNoteFolders.length > 0 && rng.chance(0.3) ? rng.pick(customNoteFolders).folderid : "1",
      ts: isoAt(startMs - rng.int(1, 700) * 86_400_000 - i * 1000),
      unread: !sent && rng.chance(0.2),
      starred: rng.chance(0.1),
      sent,
      subject: i < HOSTILE_TITLES.length && i % 2 === 1 ? HOSTILE_TITLES[i]! : `Re: ${rng.pick(NOUNS)}`,
      body: `<p>Hello, about the ${rng.pick(NOUNS)}...</p>`,
      fromId: sent ? owner.userid : other.userid,
      recipientIds: sent ? [other.userid] : [owner.userid],
    });
  }
  dataset.notes.sort((a, b) => b.ts.localeCompare(a.ts));
}

/** Notifications in time order, so the newest has the highest seq. */
export function makeMessages(ctx: GenContext, { people }: People, ownerDevs: readonly SimDeviation[]): void {
  const { rng, startMs, dataset } = ctx;
  const { size } = dataset;
  const messageTimes = Array.from({ length: size.messages }, () => startMs - rng.int(1, 60 * 86400) * 1000).sort((a, b) => a - b);
  for (const at of messageTimes) addGeneratedMessage(rng, dataset, ownerDevs, people, at);
}

/** The legacy /feed/home: mostly new deviations of the tracked users, some statuses. */
export function makeFeed(ctx: GenContext, { tracked, people }: People): void {
  const { rng, startMs, dataset } = ctx;
  const { size } = dataset;
  const feedTimes = Array.from({ length: size.feedItems }, () => startMs - rng.int(1, 30 * 86400) * 1000).sort((a, b) => a - b);
  const trackedDevs = new Map(tracked.map((u) => [u.userid, Array.from(dataset.deviations.values()).filter((d) => d.authorId === u.userid)]));
  for (const at of feedTimes) {
    const by = tracked.length > 0 ? rng.pick(tracked) : rng.pick(people);
    const devs = trackedDevs.get(by.userid) ?? [];
    const type = devs.length > 0 && rng.chance(0.75) ? "deviation_submitted" : "status";
    dataset.feed.push({
      seq: ++dataset.counters.feedSeq,
      ts: isoAt(at),
      type,
      byUserId: by.userid,
      bucketid: rng.hex(16),
      deviationIds: type === "deviation_submitted" ? rng.sample(devs, rng.int(1, 4)).map((d) => d.deviationid) : [],
      statusId: null,
      collectionFolderId: null,
    });
  }
}

const MESSAGE_KINDS: Array<{ box: MessageBox; feedbackType: FeedbackType | null; type: string; weight: number }> = [
  { box: "feedback", feedbackType: "activity", type: "fave", weight: 5 },
  { box: "feedback", feedbackType: "activity", type: "watch", weight: 2 },
  { box: "feedback", feedbackType: "comments", type: "comment", weight: 3 },
  { box: "feedback", feedbackType: "replies", type: "reply", weight: 2 },
  { box: "mentions", feedbackType: null, type: "mention.deviation", weight: 1 },
  { box: "mentions", feedbackType: null, type: "mention.comment", weight: 1 },
];

export type NewMessageInput = { type?: string; originatorId?: string; subjectDeviationId?: string | null; at: number };

export function addGeneratedMessage(
  rng: Rng,
  dataset: Dataset,
  ownerDevs: readonly SimDeviation[],
  people: readonly SimUser[],
  at: number,
  forcedType?: string,
): SimMessage {
  const total = MESSAGE_KINDS.reduce((s, k) => s + k.weight, 0);
  let roll = rng.next() * total;
  let kind = MESSAGE_KINDS[0]!;
  for (const k of MESSAGE_KINDS) {
    roll -= k.weight;
    if (roll < 0) {
      kind = k;
      break;
    }
  }
  if (forcedType) kind = MESSAGE_KINDS.find((k) => k.type === forcedType) ?? kind;
  const originator = rng.pick(people);
  const subject = kind.type === "watch" || ownerDevs.length === 0 ? null : rng.pick(ownerDevs.slice(0, Math.min(ownerDevs.length, 30)));
  const seq = ++dataset.counters.messageSeq;
  // Faves and watches stack by subject; comments and mentions stand alone.
  const stackKey = kind.type === "fave" ? `fave:${subject?.deviationid}` : kind.type === "watch" ? "watch" : `single:${seq}`;
  const msg: SimMessage = {
    messageid: `${kind.type.replace(".", "_")}:${seq}:${rng.hex(8)}`,
    seq,
    box: kind.box,
    feedbackType: kind.feedbackType,
    type: kind.type,
    ts: isoAt(at),
    isNew: rng.chance(0.4),
    originatorId: originator.userid,
    stackid: `${kind.box}-${hashHex(stackKey)}`,
    subjectDeviationId: subject?.deviationid ?? null,
    subjectCommentId: kind.type === "comment" || kind.type === "reply" || kind.type === "mention.comment" ? String(5_000_000_000 + seq) : null,
    html: `<a href="https://www.deviantart.com/${originator.username}">${originator.username}</a> ${kind.type === "fave" ? "added to favourites" : kind.type}`,
  };
  dataset.messages.push(msg);
  return msg;
}

function hashHex(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x1234567;
  for (let i = 0; i < text.length; i++) {
    h1 = Math.imul(h1 ^ text.charCodeAt(i), 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ text.charCodeAt(i), 0x5bd1e995) >>> 0;
  }
  return h1.toString(16).padStart(8, "0") + h2.toString(16).padStart(8, "0");
}
