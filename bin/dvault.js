#!/usr/bin/env node
// Entry point of the `dvault` command. It runs the JavaScript in dist/ (made by postinstall, scripts/build.js)
// while dist/ is current (bin/dist-current.js: newer than every source file, than the build's scripts, and, with
// packages bundled into dist/vendor/, than the last install into node_modules): about twice as fast to start as the
// TypeScript through tsx's loader (docs/PERFORMANCE.md#start-up). Otherwise, or with no dist/ at all, it runs the
// sources through tsx, so `npx dvault` works right after `npm ci` and right after a change, with no build step.
// DVAULT_FROM_SOURCE=1 runs the sources whatever dist/ holds.
import { enableCompileCache } from "./compile-cache.js";
import { distIsCurrent } from "./dist-current.js";

// Node 22.1 and later: the modules' compiled code kept between starts, in the user's own cache folder (bin/compile-cache.js).
enableCompileCache();

if (process.env.DVAULT_FROM_SOURCE !== "1" && distIsCurrent(new URL("..", import.meta.url))) {
  await import("../dist/src/cli/main.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
