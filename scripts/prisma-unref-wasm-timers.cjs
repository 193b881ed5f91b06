// Preloaded into the Prisma CLI by `dvault migrate`: the WASM schema engine arms a 10 s timer that it
// never clears, which holds the process open for 10 s after the work is done. Timers armed from WASM
// frames are guards, not work (open sockets keep the process alive while work is pending), so unref them.
"use strict";
const originalSetTimeout = global.setTimeout;
global.setTimeout = function patchedSetTimeout(fn, ms, ...args) {
  const timer = originalSetTimeout(fn, ms, ...args);
  if (typeof ms === "number" && ms >= 5000 && /wasm:\/\//.test(new Error().stack || "")) timer.unref();
  return timer;
};
