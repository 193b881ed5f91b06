// docker-compose.yml read as text (no YAML parser among the dependencies): every service that runs the dvault
// image keeps its archive folder where the image lets its unprivileged user write (Dockerfile: /archive), since
// even a worker whose originals go to a bucket writes its partial files there.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SOURCE_NAMES } from "../../src/config-defaults.ts";
import { scheduleVariable } from "../../src/config/schedules.ts";

const compose = readFileSync(new URL("../../docker-compose.yml", import.meta.url), "utf8");

/** Each service's lines (two-space indented names under `services:`), with the anchors it merges in. */
function services(): Map<string, string> {
  const start = compose.indexOf("\nservices:\n") + 1;
  const end = compose.slice(start + 1).search(/\n[^\s#]/);
  const body = compose.slice(start, end < 0 ? undefined : start + 1 + end + 1);
  const blocks = new Map<string, string>();
  for (const part of body.split(/\n(?= {2}[a-z][\w-]*:\n)/).slice(1)) {
    const name = /^ {2}([a-z][\w-]*):/.exec(part)?.[1];
    if (name) blocks.set(name, part);
  }
  const anchors = new Map<string, string>();
  for (const block of blocks.values()) {
    for (const m of block.matchAll(/&([\w-]+)\n((?: {6}[^\n]*\n)+)/g)) anchors.set(m[1] as string, m[2] as string);
  }
  for (const [name, block] of blocks) {
    blocks.set(
      name,
      block.replace(/<<: \*([\w-]+)/g, (_, anchor: string) => anchors.get(anchor) ?? ""),
    );
  }
  return blocks;
}

describe("docker-compose.yml", () => {
  it("gives every dvault service an archive folder its user can write: /archive", () => {
    const dvault = [...services()].filter(([, block]) => /\n {4}image: dvault:local\n/.test(block));
    expect(dvault.map(([name]) => name)).toEqual(expect.arrayContaining(["worker", "worker-web", "worker-downloads"]));
    for (const [name, block] of dvault) expect(block, name).toMatch(/\n {6}DVAULT_ARCHIVE_DIR: \/archive\n/);
  });

  it("passes every source's schedule and their time zone from .env to the worker", () => {
    const worker = services().get("worker") ?? "";
    for (const name of ["DVAULT_SCHEDULE_TZ", ...SOURCE_NAMES.map(scheduleVariable)]) expect(worker, name).toContain(`\n      ${name}: \${${name}:-}\n`);
  });
});
