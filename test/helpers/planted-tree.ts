// A small repository written to a temporary folder for the checks of scripts/checks to read: each test of
// test/unit/check-*.test.ts plants the code a check must catch (and code it must pass) and runs the check's
// function over the folder.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach } from "vitest";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Writes `files` (path from the root → text) under a new temporary root, removed after the test. */
export function plantedTree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), "dvault-checks-"));
  made.push(root);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    writeFileSync(path.join(root, rel), text);
  }
  return root;
}

/** The findings that name `rel` (a planted file), each cut to "file:line". */
export function placesIn(findings: readonly string[], rel: string): string[] {
  return findings.filter((f) => f.startsWith(`${rel}:`)).map((f) => f.split(": ")[0] ?? f);
}
