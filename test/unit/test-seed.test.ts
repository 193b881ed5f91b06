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
    const full = "abcdef1234567000000000000000000000000000";
    const out = execFileSync("node", ["scripts/test-seed.js", full], { encoding: "utf8" });
    expect(out).toBe(`${seedOfCommit(full)}\tcommit abcdef123456\n`);
  });

  it("gives a short id the seed of the full commit it names, the one .ci/run prints for it", () => {
    const head = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const ci = execFileSync("node", ["scripts/test-seed.js"], { encoding: "utf8" });
    expect(ci).toBe(`${seedOfCommit(head)}\tcommit ${head.slice(0, 12)}\n`);
    expect(execFileSync("node", ["scripts/test-seed.js", head.slice(0, 7)], { encoding: "utf8" })).toBe(ci);
  });

  it("refuses in one line a short id this checkout does not have", () => {
    expect(() => execFileSync("node", ["scripts/test-seed.js", "abcdef1234567"], { encoding: "utf8", stdio: "pipe" })).toThrow(
      /"abcdef1234567" is not a commit of this checkout: give one it has, or a full 40-digit commit id/,
    );
  });
});
