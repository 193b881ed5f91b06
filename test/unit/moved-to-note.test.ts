// The note `dvault engine migrate` leaves on the engine it moved an install away from (src/queue/holder.ts): its
// `to` is printed as the DVAULT_ENGINE to set and inside a command to run (a worker's refusal, `dvault status`'s
// warning, `dvault engine status`), so only a value a move writes is taken as a note.
import { describe, expect, it } from "vitest";
import { readMovedTo } from "../../src/queue/holder.ts";

describe(readMovedTo.name, () => {
  it("reads the note a move writes", () => {
    expect(readMovedTo('{"to":"postgres","at":"2026-11-29T09:00:00.000Z"}', "redis")).toEqual({ to: "postgres", at: "2026-11-29T09:00:00.000Z" });
  });

  it.each([
    ["garbled", "garbage{"],
    ["not an object", '"postgres"'],
    ["null", "null"],
    ["no engine", '{"at":"2026-11-29T09:00:00.000Z"}'],
    ["an empty engine (DVAULT_ENGINE= would pick the default)", '{"to":""}'],
    ["a shell command", '{"to":"postgres; rm -rf ~"}'],
    ["a terminal escape", '{"to":"\\u001b[2Jpostgres"}'],
    ["the engine it was read on (a move never notes that)", '{"to":"redis","at":"2026-11-29T09:00:00.000Z"}'],
  ])("takes %s as no note", (_what, text) => {
    expect(readMovedTo(text, "redis")).toBeUndefined();
  });

  it("gives a time that does not parse as null, not as words in the JSON's ISO field", () => {
    expect(readMovedTo('{"to":"postgres"}', "redis")).toEqual({ to: "postgres", at: null });
    expect(readMovedTo('{"to":"postgres","at":42}', "redis")).toEqual({ to: "postgres", at: null });
    expect(readMovedTo('{"to":"postgres","at":"yesterday-ish"}', "redis")).toEqual({ to: "postgres", at: null });
  });
});
