import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { buildFullProgram, buildProgram, COMMANDS, commandNamed } from "../../src/cli/program.ts";

// `dvault` imports only the command it runs (src/cli/program.ts). These tests hold the table of commands to
// the modules that register them, and watch which packages a start-up actually loads.
const REPO = path.resolve(import.meta.dirname, "..", "..");

function helpOf(program: Command): string {
  program.configureOutput({ writeOut: () => {}, writeErr: () => {} });
  return program.helpInformation();
}

/** The packages (node_modules names) and src/ files a `dvault …` process resolves, from test/helpers/record-imports.mjs. */
function loadedBy(args: readonly string[]): { packages: Set<string>; sources: Set<string>; status: number | null } {
  const dir = mkdtempSync(path.join(tmpdir(), "dvault-imports-"));
  const file = path.join(dir, "imports.txt");
  try {
    const r = spawnSync(process.execPath, ["--import", "tsx", "--import", "./test/helpers/record-imports.mjs", "src/cli/main.ts", ...args], {
      cwd: REPO,
      encoding: "utf8",
      env: { ...process.env, DVAULT_RECORD_IMPORTS: file },
    });
    const urls = readFileSync(file, "utf8").split("\n").filter(Boolean);
    const packages = new Set(urls.flatMap((u) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u)?.[1] ?? []));
    const sources = new Set(urls.flatMap((u) => /\/(src\/.+)$/.exec(u)?.[1] ?? []));
    return { packages, sources, status: r.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("dvault's table of commands", () => {
  it("shows in the root help exactly what the command modules register", async () => {
    const full = await buildFullProgram();
    const lazy = await buildProgram([]);
    expect(lazy.commands.map((c) => c.name())).toEqual(full.commands.map((c) => c.name()));
    expect(helpOf(lazy)).toBe(helpOf(full));
  });

  it("has every command the modules register, each once", async () => {
    const full = await buildFullProgram();
    const names = COMMANDS.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toEqual(full.commands.map((c) => c.name()).sort());
  });

  it("registers the named command from its module, with its options", async () => {
    expect(commandNamed(["help", "sync"])?.name).toBe("sync");
    expect(commandNamed(["--help"])).toBeUndefined();
    expect(commandNamed(["syn"])).toBeUndefined();
    // The global flags may come first.
    expect(commandNamed(["-v", "sync", "--once"])?.name).toBe("sync");
    expect(commandNamed(["--quiet", "-v", "download"])?.name).toBe("download");
    const program = await buildProgram(["sync", "--once"]);
    const sync = program.commands.find((c) => c.name() === "sync");
    expect(sync?.options.map((o) => o.long)).toContain("--once");
  });
});

describe("dvault start-up", () => {
  it("loads no package but commander for --help and --version", () => {
    for (const args of [["--help"], ["--version"]]) {
      const { packages, sources, status } = loadedBy(args);
      expect(status).toBe(0);
      expect([...packages]).toEqual(["commander"]);
      // Besides the program, only the two import-free output modules: the global flags and the closed-pipe guard.
      expect([...sources].sort()).toEqual([
        "src/cli/main.ts",
        "src/cli/output/global.ts",
        "src/cli/output/print.ts",
        "src/cli/program.ts",
        "src/errors.ts",
        "src/redact.ts",
        "src/version.ts",
      ]);
    }
  });
});
