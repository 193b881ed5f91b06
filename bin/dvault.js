#!/usr/bin/env node
// Entry point of the `dvault` command: runs the TypeScript sources through tsx's loader,
// so `npx dvault` works right after `npm ci` with no build step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
