// Node's compile cache for bin/dvault.js. Node 22.1 and later keep the code they compiled for the modules a start
// loads, and the next start reads it instead of compiling again (Node 20 has no such cache; docs/PERFORMANCE.md#start-up).
// The folder is the user's own cache, `$XDG_CACHE_HOME/dvault/node-compile-cache` or `~/.cache/dvault/…`, not the
// shared temp folder Node would pick. Node accepts an entry that matches its module's length and a CRC32 of its text,
// whoever wrote it, so a folder another user owns or can write would run code of their choosing (root with a user's
// HOME under `sudo -E`, XDG_CACHE_HOME at /tmp), and root would leave a ~/.cache of its own in that user's home: the
// cache folder, or the existing folder it is made in, must be this user's and writable by no one else, or there is no
// cache. A folder that cannot be made only means compiling as before, silently (Node reports it in the value returned).
// NODE_COMPILE_CACHE names another folder and NODE_DISABLE_COMPILE_CACHE=1 turns the cache off (Node's own settings).
import fs from "node:fs";
import module from "node:module";
import os from "node:os";
import path from "node:path";

/** Turns the cache on where this Node has one and the user's cache folder is theirs alone. */
export function enableCompileCache() {
  if (process.env.NODE_COMPILE_CACHE || !module.enableCompileCache) return;
  const dir = compileCacheDir({ env: process.env, uid: process.getuid?.(), homedir: () => os.homedir() });
  if (dir) module.enableCompileCache(dir);
}

/**
 * The folder for the cache, its `dvault` folder made owner-only; undefined when the user's cache folder is unknown or
 * not theirs alone. `uid` undefined (Windows): ownership is not checked.
 */
export function compileCacheDir({ env, uid, homedir }) {
  const cache = userCacheDir(env, homedir);
  if (!cache) return undefined;
  const mine = (p) => {
    const st = fs.lstatSync(p, { throwIfNoEntry: false });
    if (!st) return undefined;
    return st.isDirectory() && (uid === undefined || st.uid === uid) && (st.mode & 0o022) === 0;
  };
  try {
    if (!(mine(cache) ?? mine(path.dirname(cache)))) return undefined;
    const dir = path.join(cache, "dvault");
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const target = path.join(dir, "node-compile-cache");
    return mine(dir) && mine(cache) && mine(target) !== false ? target : undefined;
  } catch {
    return undefined;
  }
}

/** $XDG_CACHE_HOME when absolute, else ~/.cache; undefined when neither is known. */
function userCacheDir(env, homedir) {
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return xdg;
  try {
    const home = homedir();
    return home ? path.join(home, ".cache") : undefined;
  } catch {
    return undefined;
  }
}
