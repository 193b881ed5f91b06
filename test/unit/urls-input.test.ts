// What `dvault add` and `dvault api` read from their arguments: a deviation's URL or id (src/track-lists/deviation-ref.ts)
// and --param/--data pairs (src/cli/api.ts), a dot segment as a path parameter refused.
import { Command } from "commander";
import { describe, expect, it } from "vitest";
import { parsePairs, registerApiCommand } from "../../src/cli/api.ts";
import { deviationRefFromText, numericIdOfUrl } from "../../src/track-lists/deviation-ref.ts";

describe(deviationRefFromText.name, () => {
  it("reads the artist and the number of a work's page, new and old forms, journals too; an id as it is", () => {
    expect(deviationRefFromText("https://www.deviantart.com/Some-One/art/A-Title-123456789")).toEqual({ artist: "Some-One", numericId: "123456789" });
    expect(deviationRefFromText("someone.deviantart.com/art/Title-42/")).toEqual({ artist: "someone", numericId: "42" });
    expect(deviationRefFromText("https://www.deviantart.com/someone/journal/Notes-7")).toEqual({ artist: "someone", numericId: "7" });
    expect(deviationRefFromText(" 0f3c2b1a-aaaa-bbbb-cccc-0123456789ab ")).toEqual({ deviationid: "0F3C2B1A-AAAA-BBBB-CCCC-0123456789AB" });
  });

  it("names no deviation for a profile, a URL without an artist or another site", () => {
    for (const input of ["https://www.deviantart.com/someone", "https://www.deviantart.com/deviation/123", "https://example.com/a/art/T-1", "someone"]) {
      expect(deviationRefFromText(input)).toHaveProperty("unresolved");
    }
  });

  it("finds the same number in a deviation object's url", () => {
    expect(numericIdOfUrl("https://www.deviantart.com/someone/art/A-Title-123456789")).toBe("123456789");
    expect(numericIdOfUrl(null)).toBeUndefined();
  });
});

describe(parsePairs.name, () => {
  it("reads key=value (the value may hold '='); a key given twice, or written key[], is a list", () => {
    expect(parsePairs(["username=a", "q=x=y", "ids=1", "ids=2", "one[]=z"], "--param")).toEqual({ username: "a", q: "x=y", ids: ["1", "2"], one: ["z"] });
    expect(() => parsePairs(["novalue"], "--param")).toThrow('--param expects key=value, not "novalue"');
  });
});

describe("dvault api's path parameters", () => {
  it("refuses . or .. as a path parameter in one line, before any account is read (the URL would resolve it to another endpoint)", async () => {
    const program = new Command().exitOverride();
    registerApiCommand(program);
    await expect(program.parseAsync(["api", "deviation.get", "--param", "deviationid=.."], { from: "user" })).rejects.toThrow(
      "deviation.get (/deviation/{deviationid}): --param deviationid=.. names no deviationid; give its value",
    );
  });
});
