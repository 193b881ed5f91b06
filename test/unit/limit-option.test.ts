// `--limit` of `dvault search` (1 to 500) and `dvault jobs failed` (from 1): one parser, one line per bad value.
import { describe, expect, it } from "vitest";
import { limitOption } from "../../src/cli/limit-option.ts";

describe(limitOption.name, () => {
  it("takes a whole number in range", () => {
    expect(limitOption(500)("500")).toBe(500);
    expect(limitOption()("100000")).toBe(100000);
  });

  it("refuses a value out of range or not a whole number, saying the range", () => {
    for (const bad of ["0", "501", "abc", "2.5", "", "1e2", "0x10", " 5", "5.0", "-0"]) {
      expect(() => limitOption(500)(bad), bad).toThrow(`--limit expects a whole number from 1 to 500, not "${bad}"`);
    }
    for (const bad of ["0", "-3", "abc"]) expect(() => limitOption()(bad), bad).toThrow(`--limit expects a whole number from 1, not "${bad}"`);
  });
});
