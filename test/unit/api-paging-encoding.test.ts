import { describe, expect, it } from "vitest";
import { encodeParams } from "../../src/api/http.ts";
import { nextCursor, nextOffset } from "../../src/api/paginate.ts";

describe(encodeParams.name, () => {
  it("sends arrays in bracket syntax, booleans as words, and drops null/undefined", () => {
    const params = encodeParams({
      deviationids: ["a", "b"],
      "usernames[]": ["x"],
      mature_content: true,
      ext_submission: false,
      limit: 24,
      offset: 0,
      cursor: undefined,
      folderid: null,
      empty: [],
    });
    expect([...params]).toEqual([
      ["deviationids[]", "a"],
      ["deviationids[]", "b"],
      ["usernames[]", "x"],
      ["mature_content", "true"],
      ["ext_submission", "false"],
      ["limit", "24"],
      ["offset", "0"],
    ]);
    expect(decodeURIComponent(params.toString())).toBe(
      "deviationids[]=a&deviationids[]=b&usernames[]=x&mature_content=true&ext_submission=false&limit=24&offset=0",
    );
  });

  it("encodes an empty or missing set of params as nothing", () => {
    expect(encodeParams(undefined).toString()).toBe("");
    expect(encodeParams({ a: undefined }).toString()).toBe("");
  });
});

describe(nextOffset.name, () => {
  const items = (n: number) => Array.from({ length: n }, (_, i) => i);

  it("follows next_offset verbatim, even when a page is short", () => {
    expect(nextOffset({ items: items(20), hasMore: true, offset: 0, nextOffset: 24 }, 10_000)).toEqual({ next: 24 });
  });

  it("advances by the items received when next_offset is null but has_more is true", () => {
    expect(nextOffset({ items: items(7), hasMore: true, offset: 24, nextOffset: null }, 10_000)).toEqual({ next: 31 });
  });

  it("stops at the end and on an empty page", () => {
    expect(nextOffset({ items: items(5), hasMore: false, offset: 0, nextOffset: null }, 10_000)).toEqual({});
    expect(nextOffset({ items: [], hasMore: true, offset: 0, nextOffset: null }, 10_000)).toEqual({});
    expect(nextOffset({ items: [], hasMore: true, offset: 0, nextOffset: 0 }, 10_000)).toEqual({});
  });

  it("advances by the items received when next_offset repeats or goes back but has_more is true", () => {
    expect(nextOffset({ items: items(3), hasMore: true, offset: 48, nextOffset: 48 }, 10_000)).toEqual({ next: 51 });
    expect(nextOffset({ items: items(24), hasMore: true, offset: 48, nextOffset: 0 }, 10_000)).toEqual({ next: 72 });
  });

  it("goes past an empty page that says has_more and where to go on, three in a row at most", () => {
    const empty = { items: [], hasMore: true, offset: 24, nextOffset: 48, afterMore: true };
    expect(nextOffset(empty, 10_000)).toEqual({ next: 48 });
    expect(nextOffset({ ...empty, offset: 0, afterMore: false }, 10_000)).toEqual({ next: 48 });
    expect(nextOffset({ ...empty, emptyBefore: 2 }, 10_000)).toEqual({ next: 48 });
    expect(nextOffset({ ...empty, emptyBefore: 3 }, 10_000)).toEqual({ truncation: { reason: "offset_ceiling", atOffset: 24, ceiling: 24 } });
    // Without a next_offset further on, an empty page after one that said more is a ceiling of the service's own.
    expect(nextOffset({ ...empty, nextOffset: null }, 10_000)).toEqual({ truncation: { reason: "offset_ceiling", atOffset: 24, ceiling: 24 } });
    expect(nextOffset({ ...empty, hasMore: false, nextOffset: null }, 10_000)).toEqual({ truncation: { reason: "offset_ceiling", atOffset: 24, ceiling: 24 } });
  });

  it("stops at the ceiling and reports the truncation", () => {
    expect(nextOffset({ items: items(24), hasMore: true, offset: 9984, nextOffset: 10_008 }, 10_000)).toEqual({
      truncation: { reason: "offset_ceiling", atOffset: 10_008, ceiling: 10_000 },
    });
  });
});

describe(nextCursor.name, () => {
  it("follows the cursor verbatim and stops on empty, missing or repeated cursors", () => {
    expect(nextCursor({ items: [1], hasMore: true, cursor: "a", nextCursor: "b" })).toBe("b");
    expect(nextCursor({ items: [1], hasMore: true, cursor: undefined, nextCursor: "" })).toBeUndefined();
    expect(nextCursor({ items: [1], hasMore: true, cursor: "a", nextCursor: null })).toBeUndefined();
    expect(nextCursor({ items: [1], hasMore: true, cursor: "a", nextCursor: "a" })).toBeUndefined();
    expect(nextCursor({ items: [], hasMore: true, cursor: "a", nextCursor: "b" })).toBeUndefined();
    expect(nextCursor({ items: [1], hasMore: false, cursor: "a", nextCursor: "b" })).toBeUndefined();
  });
});
