// The fold behind status, the overview and the digest's "not archived in full": zero counts never shown,
// reasons in a fixed order with why and what to do, one entry per artist and source, a work counted once.
import { describe, expect, it } from "vitest";
import { foldNotArchivable, notArchivableLines } from "../../src/text/not-archivable.ts";

describe(foldNotArchivable.name, () => {
  it("shows nothing when nothing is counted, and leaves out a shortfall that is not one", () => {
    const v = foldNotArchivable({
      counts: [],
      totals: [],
      shortfalls: [{ account: "me", source: "tracked", key: "x", reason: "hidden_mature", artist_userid: "U1", artist: "x", expected: 5, listed: 5 }],
    });
    expect(v).toEqual({ total: 0, byReason: [], byArtist: [] });
    expect(notArchivableLines(v)).toEqual({ reasons: [], artists: [] });
  });

  it("counts per reason in a fixed order and per artist, the hidden works with the profile's count", () => {
    const v = foldNotArchivable({
      counts: [
        { account: "me", source: "tracked", key: "ann", artist_userid: "U1", artist: "ann", reason: "partial", n: 2 },
        { account: "me", source: "tracked", key: "ann", artist_userid: "U1", artist: "ann", reason: "watchers_only", n: 3 },
        { account: "me", source: "collections", key: "", artist_userid: "U1", artist: "ann", reason: "watchers_only", n: 1 },
        { account: "me", source: "collections", key: "", artist_userid: "U2", artist: null, reason: "paid", n: 4 },
      ],
      // One watchers-only work of ann's is both in her gallery and a favourite: the total counts it once.
      totals: [
        { reason: "partial", n: 2 },
        { reason: "paid", n: 4 },
        { reason: "watchers_only", n: 3 },
      ],
      shortfalls: [
        {
          account: "me",
          source: "tracked",
          key: "ann",
          reason: "hidden_mature",
          artist_userid: "U1",
          artist: "ann",
          expected: 80,
          listed: 68,
        },
      ],
    });
    expect(v.byReason.map((r) => [r.reason, r.count])).toEqual([
      ["paid", 4],
      ["watchers_only", 3],
      ["partial", 2],
      ["hidden_mature", 12],
    ]);
    expect(v.total).toBe(21);
    expect(v.byArtist.map((a) => [a.source, a.artist, a.total, a.counts.map((c) => `${c.reason}:${c.count}`).join(" ")])).toEqual([
      ["collections", "ann", 1, "watchers_only:1"],
      ["collections", "U2", 4, "paid:4"],
      ["tracked", "ann", 17, "watchers_only:3 partial:2 hidden_mature:12"],
    ]);
    const lines = notArchivableLines(v);
    expect(lines.artists).toContain("ann (via ann, tracked by me): 3 watchers-only, 2 partial, 12 hidden from a public token (profile 80, listings showed 68)");
    expect(lines.reasons[0]).toMatch(/^4 paid: .+\. What you can do: paid tiers cannot be archived/);
  });

  it("lists at most the artists asked for, those with the most works, and says how many more there are", () => {
    const counts = Array.from({ length: 5 }, (_, i) => ({
      account: "me",
      source: "collections",
      key: "",
      artist_userid: `U${i}`,
      artist: `a${i}`,
      reason: "paid" as const,
      n: i + 1,
    }));
    const v = foldNotArchivable({ counts, totals: [{ reason: "paid", n: 15 }], shortfalls: [] });
    const lines = notArchivableLines(v, 2);
    expect(lines.artists).toEqual(["a3 (favourites of me): 4 paid", "a4 (favourites of me): 5 paid", "…and 3 more (dvault status lists every one)"]);
    expect(notArchivableLines(v).artists).toHaveLength(5);
  });
});
