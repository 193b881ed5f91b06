import { spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import module from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import { describe, expect, it } from "vitest";
import { compileCacheDir } from "../../bin/compile-cache.js";
import { distIsCurrent } from "../../bin/dist-current.js";
import { copyAssets } from "../../scripts/build.js";
import { pointAtVendor, VENDORED, vendorPackages } from "../../scripts/vendor.js";
import { buildFullProgram, buildProgram, COMMANDS, commandNamed } from "../../src/cli/program.ts";
import { HEAVY_PACKAGES, readLoaded, RECORD_IMPORTS } from "../helpers/loaded-modules.ts";

// `dvault` imports only the command it runs (src/cli/program.ts). These tests hold the table of commands to
// the modules that register them, and watch which packages a start-up actually loads.
const REPO = path.resolve(import.meta.dirname, "..", "..");

function helpOf(program: Command): string {
  program.configureOutput({ writeOut: () => {}, writeErr: () => {} });
  return program.helpInformation();
}

/** What `node src/cli/main.ts …` (through tsx) loads, recorded by test/helpers/record-imports.mjs. */
function loadedBy(args: readonly string[]): { packages: Set<string>; sources: Set<string>; status: number | null } {
  const dir = mkdtempSync(path.join(tmpdir(), "dvault-imports-"));
  const file = path.join(dir, "imports.txt");
  try {
    const r = spawnSync(process.execPath, ["--import", "tsx", "--import", RECORD_IMPORTS, "src/cli/main.ts", ...args], {
      cwd: REPO,
      encoding: "utf8",
      env: { ...process.env, DVAULT_RECORD_IMPORTS: file },
    });
    return { ...readLoaded(file), status: r.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `fn` in a new temp folder, removed afterwards. */
function inTempDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(path.join(tmpdir(), "dvault-compile-cache-"));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `dvault --version` through bin/dvault.js, the compile cache's settings (Node's and XDG's) only as `env` gives them. */
function runVersion(env: Record<string, string>): { status: number | null; out: string; err: string } {
  const { NODE_COMPILE_CACHE, NODE_DISABLE_COMPILE_CACHE, XDG_CACHE_HOME, ...rest } = process.env;
  const r = spawnSync(process.execPath, ["bin/dvault.js", "--version"], { cwd: REPO, encoding: "utf8", env: { ...rest, ...env } });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe("dvault's table of commands", () => {
  it("shows in the root help exactly what the command modules register", async () => {
    const full = await buildFullProgram();
    const lazy = await buildProgram([]);
    expect(lazy.commands.map((c) => c.name())).toEqual(full.commands.map((c) => c.name()));
    expect(helpOf(lazy)).toBe(helpOf(full));
  });

  it('says in the worker\'s help what SIGHUP does (README "Schedules")', async () => {
    const worker = (await buildFullProgram()).commands.find((c) => c.name() === "worker");
    let help = "";
    worker?.configureOutput({ writeOut: (s) => void (help += s), writeErr: () => {} });
    worker?.outputHelp();
    expect(help.replace(/\s+/g, " ")).toContain("SIGHUP (kill -HUP <pid>) re-reads the settings file's schedules (DVAULT_SCHEDULE_*) and reschedules only");
  });

  it('lists every command in the README\'s table of commands (README "The command line")', () => {
    const readme = readFileSync(path.join(REPO, "README.md"), "utf8");
    const rows = readme.split("\n").filter((l) => l.startsWith("| `dvault "));
    const missing = COMMANDS.map((c) => c.name).filter((name) => !rows.some((row) => row.includes(`\`dvault ${name}`) || row.includes(`/ \`dvault ${name}`)));
    expect(missing).toEqual([]);
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
      // Besides the program, only the output modules without packages: the global flags, and the printer (the closed-pipe
      // guard, the escaping every line goes through, help's and an error's too).
      expect([...sources].sort()).toEqual([
        "src/cli/main.ts",
        "src/cli/output/global.ts",
        "src/cli/output/print.ts",
        "src/cli/output/terminal.ts",
        "src/cli/program.ts",
        "src/errors.ts",
        "src/redact.ts",
        "src/text/controls.ts",
        "src/version.ts",
      ]);
    }
  });

  // Each command's module and all it imports, as `<command> --help` loads them (running status against a
  // database is test/medium/status.test.ts's). `uses`: the heavy packages the command does need.
  it.each([
    { command: "status", uses: [], needs: "bullmq" },
    { command: "jobs", uses: [], needs: "bullmq" },
    { command: "sync", uses: ["got"], needs: "kysely" },
  ])("loads for $command only the heavy packages it uses: $uses", ({ command, uses, needs }) => {
    const { packages, status } = loadedBy([command, "--help"]);
    expect(status).toBe(0);
    expect(packages).toContain(needs); // the record is not empty
    expect(HEAVY_PACKAGES.filter((p) => packages.has(p))).toEqual(uses);
  });

  // bin/dvault.js: where this Node has a compile cache (22.1 and later), it lives in the user's cache folder; where the
  // folder cannot be made, the command runs as before and says nothing of it. Node 20 makes no folder.
  it("keeps Node's compile cache in the user's cache folder, and runs unchanged where that folder cannot be made", () => {
    inTempDir((dir) => {
      const version = runVersion({ HOME: dir }).out;
      expect(version).toMatch(/^\d+\.\d+\.\d+\n$/);
      const cache = path.join(dir, ".cache", "dvault", "node-compile-cache");
      const nodeHasCache = "enableCompileCache" in module;
      expect(existsSync(cache) ? readdirSync(cache).length > 0 : false).toBe(nodeHasCache);
      // XDG_CACHE_HOME comes first.
      const xdg = path.join(dir, "xdg");
      runVersion({ HOME: dir, XDG_CACHE_HOME: xdg });
      expect(existsSync(path.join(xdg, "dvault", "node-compile-cache"))).toBe(nodeHasCache);
      // A file where the cache folder would go: the same output, nothing on stderr.
      const blocked = path.join(dir, "blocked");
      mkdirSync(blocked);
      writeFileSync(path.join(blocked, ".cache"), "");
      expect(runVersion({ HOME: blocked })).toEqual({ status: 0, out: version, err: "" });
    });
  });
  // Node checks a cache entry against its module's length and a CRC32 of its text, not who wrote it: code cached in a
  // folder another user can write is code that user chose. So no cache where the folder, or the one it is made in,
  // belongs to someone else or is writable by others: root with a user's HOME (`sudo -E dvault …`), which would also
  // leave a root-owned ~/.cache in that home, or XDG_CACHE_HOME at a shared folder such as /tmp.
  it("keeps no compile cache in a folder that another user owns or can write", () => {
    inTempDir((dir) => {
      // A cache folder others can write (XDG_CACHE_HOME pointed at a shared, sticky folder; a ~/.cache left 0777).
      const shared = path.join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      expect(runVersion({ HOME: dir, XDG_CACHE_HOME: shared })).toMatchObject({ status: 0, err: "" });
      expect(readdirSync(shared)).toEqual([]);
      const open = path.join(dir, "open");
      mkdirSync(path.join(open, ".cache"), { recursive: true });
      chmodSync(path.join(open, ".cache"), 0o777);
      expect(runVersion({ HOME: open })).toMatchObject({ status: 0, err: "" });
      expect(readdirSync(path.join(open, ".cache"))).toEqual([]);
      // Root with another user's HOME: nothing made or read there.
      if (process.getuid?.() === 0) {
        const theirs = path.join(dir, "theirs");
        mkdirSync(theirs);
        chownSync(theirs, 65534, 65534);
        expect(runVersion({ HOME: theirs })).toMatchObject({ status: 0, err: "" });
        expect(readdirSync(theirs)).toEqual([]);
      }
    });
  });
});

// The decision bin/compile-cache.js makes before it turns Node's cache on, whichever Node runs the tests.
describe(compileCacheDir.name, () => {
  const me = process.getuid?.();
  const modeOf = (p: string) => statSync(p).mode & 0o777;

  it("uses ~/.cache/dvault (made owner-only), or an absolute XDG_CACHE_HOME", () => {
    inTempDir((home) => {
      chmodSync(home, 0o755);
      expect(compileCacheDir({ env: {}, uid: me, homedir: () => home })).toBe(path.join(home, ".cache", "dvault", "node-compile-cache"));
      expect([modeOf(path.join(home, ".cache")), modeOf(path.join(home, ".cache", "dvault"))]).toEqual([0o700, 0o700]);
      const xdg = path.join(home, "xdg");
      mkdirSync(xdg, { mode: 0o700 });
      expect(compileCacheDir({ env: { XDG_CACHE_HOME: xdg }, uid: me, homedir: () => home })).toBe(path.join(xdg, "dvault", "node-compile-cache"));
      // A relative XDG_CACHE_HOME is not one (the XDG rule): ~/.cache.
      expect(compileCacheDir({ env: { XDG_CACHE_HOME: "rel" }, uid: me, homedir: () => home })).toBe(path.join(home, ".cache", "dvault", "node-compile-cache"));
    });
  });

  it("gives none, and makes nothing, where the folder is another user's, others can write it, or it is not a folder", () => {
    inTempDir((dir) => {
      // Another user's home (root under `sudo -E` keeps the user's HOME): the folder's owner is not this uid.
      const theirs = path.join(dir, "theirs");
      mkdirSync(theirs, { mode: 0o755 });
      expect(compileCacheDir({ env: {}, uid: (me ?? 0) + 12345, homedir: () => theirs })).toBeUndefined();
      expect(readdirSync(theirs)).toEqual([]);
      // A shared folder (XDG_CACHE_HOME=/tmp), and a ~/.cache left writable by all.
      const shared = path.join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      expect(compileCacheDir({ env: { XDG_CACHE_HOME: shared }, uid: me, homedir: () => dir })).toBeUndefined();
      expect(readdirSync(shared)).toEqual([]);
      const open = path.join(dir, "open");
      mkdirSync(path.join(open, ".cache"), { recursive: true });
      chmodSync(path.join(open, ".cache"), 0o777);
      expect(compileCacheDir({ env: {}, uid: me, homedir: () => open })).toBeUndefined();
      expect(readdirSync(path.join(open, ".cache"))).toEqual([]);
      // A file where the folder would be, a link in its place, no home at all.
      const blocked = path.join(dir, "blocked");
      mkdirSync(blocked, { mode: 0o755 });
      writeFileSync(path.join(blocked, ".cache"), "");
      expect(compileCacheDir({ env: {}, uid: me, homedir: () => blocked })).toBeUndefined();
      const linked = path.join(dir, "linked");
      mkdirSync(linked, { mode: 0o755 });
      symlinkSync(shared, path.join(linked, ".cache"));
      expect(compileCacheDir({ env: {}, uid: me, homedir: () => linked })).toBeUndefined();
      expect(
        compileCacheDir({
          env: {},
          uid: me,
          homedir: () => {
            throw new Error("no home");
          },
        }),
      ).toBeUndefined();
    });
  });
});

describe(distIsCurrent.name, () => {
  /** A file `rel` under `root`, modified at `seconds`. */
  const stamp = (root: string, rel: string, seconds: number) => {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), "");
    utimesSync(path.join(root, rel), seconds, seconds);
  };

  it("lets dist/ run only while its stamp is newer than every source file", () => {
    const root = mkdtempSync(path.join(tmpdir(), "dvault-dist-"));
    const at = (rel: string, seconds: number) => stamp(root, rel, seconds);
    try {
      at("src/cli/main.ts", 1_000);
      at("jobs/sync-source/handler.ts", 1_000);
      expect(distIsCurrent(root)).toBe(false); // never built
      at("dist/.built", 2_000);
      expect(distIsCurrent(root)).toBe(true);
      at("jobs/sync-source/handler.ts", 3_000); // an edit, deep in jobs/
      expect(distIsCurrent(root)).toBe(false);
      at("dist/.built", 4_000); // npm run build
      expect(distIsCurrent(root)).toBe(true);
      at("src/generated/kysely/types.ts", 5_000); // prisma generate after a schema change
      expect(distIsCurrent(root)).toBe(false);
      at("dist/.built", 6_000);
      at("src/http/assets/app #1.css", 7_000); // an asset the build copies, with a name a URL must escape
      expect(distIsCurrent(root)).toBe(false);
      at("dist/.built", 8_000);
      at("scripts/vendor.js", 9_000); // a pull that changes how dist/ is built
      expect(distIsCurrent(root)).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  // dist/vendor/ is a copy of packages as the build found them in node_modules; npm install <name> and npm update
  // change node_modules without running postinstall, and rewrite node_modules/.package-lock.json (bin/dist-current.js).
  it("lets a dist/ with packages in dist/vendor/ run only while its stamp is newer than the last npm install", () => {
    const root = mkdtempSync(path.join(tmpdir(), "dvault-dist-"));
    const at = (rel: string, seconds: number) => stamp(root, rel, seconds);
    try {
      at("src/cli/main.ts", 1_000);
      at("jobs/sync-source/handler.ts", 1_000);
      at("node_modules/.package-lock.json", 1_500); // npm ci, then its postinstall's build
      at("dist/vendor/zod.js", 2_000);
      at("dist/.built", 2_000);
      expect(distIsCurrent(root)).toBe(true);
      at("node_modules/.package-lock.json", 3_000); // npm install zod@<newer>: no postinstall
      expect(distIsCurrent(root)).toBe(false);
      at("dist/.built", 4_000); // npm run build
      expect(distIsCurrent(root)).toBe(true);
      rmSync(path.join(root, "dist", "vendor"), { recursive: true });
      at("node_modules/.package-lock.json", 5_000); // without dist/vendor/ (no esbuild), dist/ imports node_modules itself
      expect(distIsCurrent(root)).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe(copyAssets.name, () => {
  it("copies what is not TypeScript beside the compiled modules, and nothing else", () => {
    const root = mkdtempSync(path.join(tmpdir(), "dvault-assets-"));
    const put = (rel: string, text: string) => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), text);
    };
    try {
      put("src/http/assets.ts", "export {};");
      put("src/http/assets/app.js", "app");
      put("src/http/assets/base.css", "css");
      const copied = copyAssets(path.join(root, "src"), path.join(root, "dist/src"));
      expect(copied.sort()).toEqual([path.join("http/assets/app.js"), path.join("http/assets/base.css")]);
      expect(readFileSync(path.join(root, "dist/src/http/assets/base.css"), "utf8")).toBe("css");
      expect(existsSync(path.join(root, "dist/src/http/assets.ts"))).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("dist/vendor/ (scripts/vendor.js)", () => {
  it("points the vendored packages' imports at dist/vendor/, leaves every other alone, and refuses a subpath", () => {
    const vendor = path.join("/app", "dist", "vendor");
    const file = path.join("/app", "dist", "src", "db", "kysely.js");
    const source = [
      'import { Kysely } from "kysely";',
      'export { sql } from "kysely";',
      'const got = await import("got");',
      'import "zod";',
      'import pg from "pg";',
      'import { x } from "kysely-extra";',
      'import { y } from "./kysely.js";',
      "import {",
      "  z,",
      '} from "zod";',
      "export * from 'zod';",
      // Text that reads like an import: left alone, a subpath in it refused by nothing (tsc keeps comments).
      '// a smaller bundle: import { z } from "zod/mini" — and “quotes” before the next',
      'const hint = `records come from "zod" schemas`;',
      "const again = 'run import(\"got\") by hand';",
      'export { json } from "got";',
    ].join("\n");
    expect(pointAtVendor(source, file, vendor).split("\n")).toEqual([
      'import { Kysely } from "../../vendor/kysely.js";',
      'export { sql } from "../../vendor/kysely.js";',
      'const got = await import("../../vendor/got.js");',
      'import "../../vendor/zod.js";',
      'import pg from "pg";',
      'import { x } from "kysely-extra";',
      'import { y } from "./kysely.js";',
      "import {",
      "  z,",
      '} from "../../vendor/zod.js";',
      "export * from '../../vendor/zod.js';",
      '// a smaller bundle: import { z } from "zod/mini" — and “quotes” before the next',
      'const hint = `records come from "zod" schemas`;',
      "const again = 'run import(\"got\") by hand';",
      'export { json } from "../../vendor/got.js";',
    ]);
    expect(() => pointAtVendor('import { z } from "zod/mini";', file, vendor)).toThrow(/imports "zod\/mini": dist\/vendor\/ bundles only "zod" itself/);
  });

  it("leaves dist/ on node_modules, every file as tsc wrote it, when esbuild cannot bundle on this machine", async () => {
    const dist = mkdtempSync(path.join(tmpdir(), "dvault-vendor-"));
    try {
      mkdirSync(path.join(dist, "src"));
      mkdirSync(path.join(dist, "jobs"));
      writeFileSync(path.join(dist, "src", "a.js"), 'import { Kysely } from "kysely";\n');
      const result = await vendorPackages(REPO, dist, {
        loadEsbuild: async () => ({
          build: () => Promise.reject(new Error('The package "@esbuild/linux-x64" could not be found, and is needed by esbuild.\nmore')),
        }),
      });
      expect(result).toEqual({ vendored: false, reason: 'The package "@esbuild/linux-x64" could not be found, and is needed by esbuild.' });
      expect(readFileSync(path.join(dist, "src", "a.js"), "utf8")).toBe('import { Kysely } from "kysely";\n');
      expect(readdirSync(dist).sort()).toEqual(["jobs", "src"]);
      // A subpath is the code's to change: refused before anything is written, esbuild or not.
      writeFileSync(path.join(dist, "jobs", "b.js"), 'import { z } from "zod/mini";\n');
      await expect(vendorPackages(REPO, dist)).rejects.toThrow(/imports "zod\/mini"/);
      expect(readFileSync(path.join(dist, "src", "a.js"), "utf8")).toBe('import { Kysely } from "kysely";\n');
    } finally {
      rmSync(dist, { recursive: true, force: true });
    }
  });

  // A dist/ of its own, built as scripts/build.js builds one, inside node_modules/.cache so that its bare imports
  // resolve as dist/'s do; the sources' help is the reference.
  it("gives a dist/ that loads none of the vendored packages from node_modules and says what the sources say", async () => {
    const cache = path.join(REPO, "node_modules", ".cache");
    mkdirSync(cache, { recursive: true });
    // Node names a module by its real path: node_modules may be a link (a git worktree sharing another's).
    const root = realpathSync(mkdtempSync(path.join(cache, "dvault-vendor-")));
    const out = path.join(root, "dist");
    try {
      const tsc = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json", "--noCheck", "--outDir", out], {
        cwd: REPO,
        encoding: "utf8",
      });
      expect(tsc.status, tsc.stdout + tsc.stderr).toBe(0);
      expect(await vendorPackages(REPO, out)).toEqual({ vendored: true });
      // sync's module tree holds all five (sanitize-html: the descriptions it keeps as text).
      const args = ["sync", "--help"];
      const record = path.join(root, "imports.txt");
      rmSync(record, { force: true });
      const built = spawnSync(process.execPath, ["--import", RECORD_IMPORTS, path.join(out, "src/cli/main.js"), ...args], {
        cwd: REPO,
        encoding: "utf8",
        env: { ...process.env, DVAULT_RECORD_IMPORTS: record },
      });
      expect(built.status, built.stderr).toBe(0);
      const urls = readFileSync(record, "utf8");
      expect(urls.split("\n").filter((u) => VENDORED.some((name) => u.includes(`/node_modules/${name}/`)))).toEqual([]);
      for (const name of VENDORED) expect(urls).toContain(`${pathToFileURL(path.join(out, "vendor", `${name}.js`)).href}\n`);
      expect([...readLoaded(record).packages].filter((name) => VENDORED.includes(name)).sort()).toEqual([...VENDORED].sort());
      const sources = spawnSync(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { cwd: REPO, encoding: "utf8" });
      expect(built.stdout).toBe(sources.stdout);
      // Every function and class the bundle exports has the name it has from node_modules (an error's name is its
      // class's in bullmq: UnrecoverableError, not UnrecoverableError2). Node 24 gives a CommonJS package imported
      // from node_modules (sanitize-html) a "module.exports" export beside its default, the same function; the bundle
      // is a module of its own and has only the default, which is the one src/ imports.
      const exportedNames = (specifiers: readonly string[]) => {
        const script = `const out = []; for (const s of ${JSON.stringify(specifiers)}) out.push(Object.fromEntries(Object.entries(await import(s)).filter(([k, v]) => typeof v === "function" && k !== "module.exports").map(([k, v]) => [k, v.name]))); console.log(JSON.stringify(out));`;
        const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, encoding: "utf8" });
        expect(r.status, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as unknown;
      };
      expect(exportedNames(VENDORED.map((name) => pathToFileURL(path.join(out, "vendor", `${name}.js`)).href))).toEqual(exportedNames(VENDORED));
      // A stack frame inside a bundled package points at a line of that package's module in the bundle.
      const bundle = path.join(out, "vendor", "got.js");
      const thrown = spawnSync(
        process.execPath,
        ["--input-type=module", "-e", `const { Options } = await import(${JSON.stringify(pathToFileURL(bundle).href)}); new Options({ nonsense: true });`],
        { cwd: REPO, encoding: "utf8" },
      );
      const line = Number(/\/vendor\/got\.js:(\d+):\d+\)/.exec(thrown.stderr)?.[1]);
      expect(thrown.stderr).toContain("Error: Unexpected option: nonsense");
      const markers = readFileSync(bundle, "utf8")
        .split("\n")
        .slice(0, line)
        .filter((l) => /^\/\/ \S*node_modules\//.test(l));
      expect(markers.at(-1)).toMatch(/node_modules\/got\/dist\/source\/core\/options\.js$/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  }, 120_000);
});
