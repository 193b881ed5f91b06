#!/usr/bin/env node
// Entry point of the `dvault` command. It runs the JavaScript in dist/ (made by postinstall, scripts/build.js)
// while dist/ is newer than every source file: several times faster to start than the TypeScript through tsx's
// loader (docs/PERFORMANCE.md#start-up). After an edit, or with no dist/ at all, it runs the sources through
// tsx, so `npx dvault` works right after `npm ci` and right after a change, with no build step.
// DVAULT_FROM_SOURCE=1 runs the sources whatever dist/ holds.
import { distIsCurrent } from "./dist-current.js";

if (process.env.DVAULT_FROM_SOURCE !== "1" && distIsCurrent(new URL("..", import.meta.url))) {
  await import("../dist/src/cli/main.js");
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
