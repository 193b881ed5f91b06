// What people post on the simulated service besides deviations: the owner's statuses and the comments on
// the owner's deviations, profile and statuses, as the generator draws them.
import type { GenContext, SimUser, SimDeviation, CommentTarget, SimComment } from "./model.ts";
import { ADJECTIVES, isoAt, NOUNS } from "./text.ts";
import type { People } from "./users.ts";

/** The owner's statuses, newest first; some share one of the owner's deviations. */
export function makeStatuses(ctx: GenContext, owner: SimUser, ownerDevs: readonly SimDeviation[]): void {
  const { rng, startMs, dataset } = ctx;
  const { size } = dataset;
  for (let i = 0; i < size.statuses; i++) {
    dataset.statuses.push({
      statusid: rng.uuid(),
      authorId: owner.userid,
      body: `Status ${i + 1}: ${rng.pick(ADJECTIVES)} ${rng.pick(NOUNS)} today.`,
      ts: isoAt(startMs - rng.int(1, 400) * 86_400_000),
      isDeleted: false,
      sharedDeviationId: rng.chance(0.3) && ownerDevs.length > 0 ? rng.pick(ownerDevs).deviationid : null,
    });
  }
  dataset.statuses.sort((a, b) => b.ts.localeCompare(a.ts));
}

/** Comments (some replies, a few hidden or hostile) on the owner's deviations, profile and statuses. */
export function makeComments(ctx: GenContext, { owner, people }: People, ownerDevs: readonly SimDeviation[]): void {
  const { rng, startMs, dataset } = ctx;
  const commentTargets: CommentTarget[] = [
    ...ownerDevs.filter((d) => d.allowsComments && !d.isDeleted).map((d) => ({ kind: "deviation" as const, id: d.deviationid })),
    { kind: "profile", id: owner.username.toLowerCase() },
    ...dataset.statuses.map((s) => ({ kind: "status" as const, id: s.statusid })),
  ];
  for (const target of commentTargets) {
    const n = target.kind === "profile" ? 14 : rng.chance(0.55) ? rng.int(1, 8) : 0;
    const made: SimComment[] = [];
    for (let i = 0; i < n; i++) {
      const parent = made.length > 0 && rng.chance(0.3) ? rng.pick(made) : null;
      const c: SimComment = {
        commentid: String(4_000_000_000 + dataset.comments.length * 7 + rng.int(0, 6)),
        parentid: parent ? parent.commentid : null,
        target,
        posted: isoAt(startMs - rng.int(1, 300) * 86_400_000 + i * 60_000),
        userId: rng.chance(0.15) ? owner.userid : rng.pick(people).userid,
        body: rng.chance(0.05) ? `<script>alert(1)</script> nice` : `Lovely ${rng.pick(NOUNS)}!`,
        hidden: rng.chance(0.04) ? "hidden_as_spam" : null,
        likes: rng.int(0, 12),
        isFeatured: rng.chance(0.03),
      };
      made.push(c);
      dataset.comments.push(c);
    }
  }
}
