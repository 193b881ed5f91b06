// What the database choke point does to text and JSON: NUL and lone surrogates become U+FFFD, nothing else
// changes, and text without them is returned as the same string (no copy).
import { describe, expect, it } from "vitest";
import { storableJson, storableText } from "../../src/db/storable-text.ts";

const R = "\ufffd";

describe(storableText.name, () => {
  it.each([
    ["a\u0000b", `a${R}b`],
    ["\u0000\u0000", `${R}${R}`],
    ["lone high \ud800 here", `lone high ${R} here`],
    ["lone low \udc00 here", `lone low ${R} here`],
    ["high at the end \udbff", `high at the end ${R}`],
    ["low then high \udfff\ud800", `low then high ${R}${R}`],
    ["two highs \ud83d\ud83d\ude00", `two highs ${R}\ud83d\ude00`],
  ])("replaces what PostgreSQL cannot hold in %j", (input, output) => {
    expect(storableText(input)).toBe(output);
  });

  it("leaves every other character alone, and returns the same string when nothing is replaced", () => {
    const fine = "emoji 😀🦊, controls \u0001\t\n\u007f, bidi \u202e, BOM \ufeff, U+FFFD \ufffd, a backslash \\u0000, é";
    expect(storableText(fine)).toBe(fine);
    expect(storableText("")).toBe("");
  });
});

describe(storableJson.name, () => {
  it("writes NUL and lone surrogates, in values and in keys, as the escape of U+FFFD", () => {
    const value = { "k\u0000": ["a\u0000b", "x\ud800y", "\udfff"], nested: { s: "ok 😀" } };
    const json = storableJson(value);
    expect(json).not.toMatch(/\\u0000|\\ud[89a-f]/);
    expect(JSON.parse(json)).toEqual({ [`k${R}`]: [`a${R}b`, `x${R}y`, R], nested: { s: "ok 😀" } });
  });

  it("keeps text that spells \\u0000 after an escaped backslash", () => {
    const value = ["\\u0000", "\\\\u0000", "\\\u0000", "\\ud800"];
    expect(JSON.parse(storableJson(value))).toEqual(["\\u0000", "\\\\u0000", `\\${R}`, "\\ud800"]);
  });

  it("is JSON.stringify for anything else, null for undefined", () => {
    const value = { n: 1, d: new Date("2025-01-01T00:00:00Z"), s: "plain \ufffd", nothing: null };
    expect(storableJson(value)).toBe(JSON.stringify(value));
    expect(storableJson(undefined)).toBe("null");
  });
});
