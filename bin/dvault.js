#!/usr/bin/env node
// Entry point of the `dvault` command. It runs the JavaScript in dist/ (made by postinstall, scripts/build.js)
// while dist/ is current (bin/dist-current.js: newer than every source file, than the build's scripts, and, with
// packages bundled into dist/vendor/, than the last install into node_modules): about twice as fast to start as the
// TypeScript through tsx's loader (docs/PERFORMANCE.md#start-up). Otherwise, or with no dist/ at all, it runs the
// sources through tsx, so `npx dvault` works right after `npm ci` and right after a change, with no build step.
// DVAULT_FROM_SOURCE=1 runs the sources whatever dist/ holds.
import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";
import { distIsCurrent } from "./dist-current.js";

// Node 22.1 and later keep the code they compiled for the modules a start loads, and the next start reads it instead
// of compiling again (Node 20 has no such cache; docs/PERFORMANCE.md#start-up). The folder is the user's own cache,
// not the shared temp folder Node would pick, where another user could plant entries. A folder that cannot be made
// (a read-only home) only means compiling as before: Node says so in the value returned, not on stderr.
// NODE_COMPILE_CACHE names another folder, NODE_DISABLE_COMPILE_CACHE=1 turns the cache off (Node's own settings).
if (!process.env.NODE_COMPILE_CACHE && module.enableCompileCache) {
  const dir = ownCacheDir(userCacheDir());
  if (dir) module.enableCompileCache(path.join(dir, "node-compile-cache"));
}

/**
 * `<cache>/dvault`, made owner-only, when it is this user's alone; undefined otherwise. Node accepts a cache entry that
 * matches its module's length and a CRC32 of its text, whoever wrote it, so a folder another user owns or can write
 * (root with a user's HOME under `sudo -E`, XDG_CACHE_HOME at /tmp) would run code of their choosing, and root would
 * leave a ~/.cache of its own in that user's home. The cache folder, or the existing folder it is made in, must be
 * owned by this user and writable by no one else; nothing is made otherwise.
 */
function ownCacheDir(cache) {
  if (!cache) return undefined;
  const uid = process.getuid?.();
  const mine = (p) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st) return undefined;
    return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0;
  };
  try {
    const ours = mine(cache) ?? mine(path.dirname(cache));
    if (!ours) return undefined;
    const dir = path.join(cache, "dvault");
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return mine(dir) && mine(cache) && mine(path.join(dir, "node-compile-cache")) !== false ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** $XDG_CACHE_HOME, else ~/.cache; undefined when neither is known. */
function userCacheDir() {
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  try {
    const home = os.homedir();
    return home ? path.join(home, ".cache") : undefined;
  } catch {
    return undefined;
  }
}

if (process.env.DVAULT_FROM_SOURCE !== "1" && distIsCurrent(new URL("..", import.meta.url))) {
  await import("../dist/src/cli/main.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
