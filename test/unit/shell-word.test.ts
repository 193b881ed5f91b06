// A value spelled for a pasted command (src/text/shell-word.ts) is read back by a real shell as the value itself.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { shellWord } from "../../src/text/shell-word.ts";

describe("shellWord", () => {
  it.each(["plain/path-1.2", "/tmp/my demo", "it's", "$HOME `id` \\n", "a'b'c", "", "postgresql://demo@[::1]:5432/db?x=1&y=2"])(
    "sh reads %j back as it was",
    (value) => {
      const run = spawnSync("sh", ["-c", `printf %s ${shellWord(value)}`], { encoding: "utf8" });
      expect(run.stdout).toBe(value);
    },
  );

  it("leaves a plain value as it is", () => {
    expect(shellWord("/home/me/.demo/archive")).toBe("/home/me/.demo/archive");
  });
});
