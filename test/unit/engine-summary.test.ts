// The summary `dvault engine migrate` prints (src/cli/engine.ts): the downloads pause switch (README, "Moving between
// engines") is a thing apart from a downloads queue paused with `dvault jobs pause downloads`, which the move also
// carries; a move of a paused queue printed "kept: downloads not paused" above "paused as on postgres: downloads".
import { describe, expect, it } from "vitest";
import { nextLine, summaryLines } from "../../src/cli/engine.ts";

describe(summaryLines.name, () => {
  it("names the pause switch as such, so a paused downloads queue is not said to be not paused", () => {
    const lines = summaryLines({
      from: "postgres",
      to: "redis",
      paceKeys: [],
      values: { paused: false, values: 0, knownWorkers: 0, paidAnswers: 0 },
      targetCleared: 0,
      schedules: 15,
      downloadsQueued: 0,
      pausedQueues: ["downloads"],
      sourceEmptied: 25,
    }).join("\n");
    expect(lines).toContain("paused as on postgres: downloads");
    expect(lines).not.toContain("downloads not paused");
    expect(lines).toContain("the downloads pause switch off");
  });

  it("a move that could not write the setting does not say a bare dvault worker runs on the new engine", () => {
    const unwritten = {
      written: undefined,
      line: "no settings file is in use: set DVAULT_ENGINE=postgres in the environment (or in ./.env) before dvault runs again",
    };
    expect(nextLine(unwritten, "postgres")).toBe("next: once DVAULT_ENGINE=postgres is set, start the worker (dvault worker); it runs on the new engine");
    expect(nextLine({ written: "/srv/dvault/.env", line: "wrote DVAULT_ENGINE=postgres to /srv/dvault/.env" }, "postgres")).toBe(
      "next: start the worker (dvault worker); it runs on the new engine",
    );
  });
});
