// .ci/run's test order seed comes from the commit under test (scripts/test-seed.js): a new order for each
// landing, the same order when a commit is run again, so a landing's seed is known from its commit.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { seedOfCommit } from "../../scripts/test-seed.js";

describe("the CI test order seed", () => {
  it("is the same for a commit every time and differs between commits", () => {
    const a = "48bbd90a0000000000000000000000000000beef";
    const b = "48bbd90a0000000000000000000000000000bef0";
    expect(seedOfCommit(a)).toBe(seedOfCommit(a));
    expect(seedOfCommit(a.toUpperCase())).toBe(seedOfCommit(a));
    expect(seedOfCommit(a)).not.toBe(seedOfCommit(b));
  });

  it("stays within what vitest.config.ts accepts, for many commits", () => {
    for (let i = 0; i < 2000; i++) {
      const seed = seedOfCommit(i.toString(16).padStart(40, "0"));
      expect(Number.isSafeInteger(seed) && seed >= 1 && seed < 2 ** 31).toBe(true);
    }
  });

  it("refuses something that is not a commit id", () => {
    expect(() => seedOfCommit("main; rm -rf /")).toThrow(/not a commit id/);
  });

  it("prints the seed of the commit given, tab-separated from where it came", () => {
    const out = execFileSync("node", ["scripts/test-seed.js", "abcdef1234567"], { encoding: "utf8" });
    expect(out).toBe(`${seedOfCommit("abcdef1234567")}\tcommit abcdef123456\n`);
  });
});
