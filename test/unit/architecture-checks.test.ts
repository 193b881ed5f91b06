import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

// Each check of scripts/checks run as CI runs it, on this repository (it must pass) and on a small tree
// written to break exactly its rule (it must fail, naming the file and line), so none of them can pass vacuously.
const REPO = path.resolve(import.meta.dirname, "..", "..");
const CHECKS = {
  imports: "scripts/checks/imports.ts",
  size: "scripts/checks/function-size.ts",
  sql: "scripts/checks/sql-in-db.ts",
  jobs: "scripts/checks/jobs-through-producer.ts",
  output: "scripts/checks/terminal-output.ts",
} as const;

function runCheck(check: keyof typeof CHECKS, root?: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ["--import", "tsx", path.join(REPO, CHECKS[check]), ...(root ? [root] : [])], { cwd: REPO, encoding: "utf8" });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

let tree: string | undefined;
function treeWith(files: Record<string, string>): string {
  tree = mkdtempSync(path.join(tmpdir(), "dvault-checks-"));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(tree, rel)), { recursive: true });
    writeFileSync(path.join(tree, rel), text);
  }
  return tree;
}
afterEach(() => {
  if (tree) rmSync(tree, { recursive: true, force: true });
  tree = undefined;
});

describe("scripts/checks", () => {
  it.each(Object.keys(CHECKS) as Array<keyof typeof CHECKS>)("%s passes on this repository", (check) => {
    const { status, out } = runCheck(check);
    expect(out).not.toMatch(/^src\/|^jobs\//m);
    expect(status).toBe(0);
  });

  it("imports: an api module importing the database fails, with its file and line", () => {
    const root = treeWith({
      "src/db/x.repository.ts": "export const x = 1;\n",
      "src/api/client.ts": '// the client\nimport { x } from "../db/x.repository.ts";\n',
    });
    const { status, out } = runCheck("imports", root);
    expect(status).toBe(1);
    expect(out).toContain("src/api/client.ts:2: api may not import db (../db/x.repository.ts)");
  });

  it("size: a function of 81 lines fails, 80 pass; a file of 401 lines (no final newline) is named as a warning, 400 not", () => {
    const fn = (name: string, lines: number) => `export function ${name}() {\n${"  //\n".repeat(lines - 2)}}\n`;
    const root = treeWith({
      "src/sync/long.ts": fn("long", 81),
      "jobs/ok.ts": fn("ok", 80),
      "src/sync/long-file.ts": `${"//\n".repeat(400)}//`,
      "src/sync/file-400.ts": "//\n".repeat(400),
    });
    const { status, out } = runCheck("size", root);
    expect(status).toBe(1);
    expect(out).toContain("src/sync/long.ts:1: long is 81 lines");
    expect(out).not.toContain("jobs/ok.ts");
    expect(out).toContain("src/sync/long-file.ts: 401 lines");
    expect(out).not.toContain("file-400.ts");
  });

  it("sql: a statement outside src/db fails; the same inside src/db passes", () => {
    const statement = 'export const q = "SELECT id FROM deviations WHERE id = $1";\n';
    const root = treeWith({ "src/status/collect.ts": statement, "src/db/status.repository.ts": statement });
    const { status, out } = runCheck("sql", root);
    expect(status).toBe(1);
    expect(out).toContain("src/status/collect.ts:1: SQL");
    expect(out).not.toContain("src/db/");
  });

  it("jobs: a job added on a queue outside the producer fails; the producer itself passes", () => {
    const add = 'import { Queue } from "bullmq";\nconst syncQueue = new Queue("sync");\nawait syncQueue.add("sync.source", {});\n';
    // The producer adds on a queue the backend builds (src/queue/backend.ts), the one file that may build it.
    const viaBackend = 'import { makeQueue } from "./backend.ts";\nconst syncQueue = makeQueue("sync");\nawait syncQueue.add("sync.source", {});\n';
    const root = treeWith({
      "src/cli/sync.ts": add,
      "src/queue/producer.ts": viaBackend,
      "src/queue/backend.ts": 'import { Queue } from "bullmq";\nexport const makeQueue = (name: string) => new Queue(name);\n',
      "jobs/sync-source/definition.ts": 'export const d = { name: "sync.source" };\n',
    });
    const { status, out } = runCheck("jobs", root);
    expect(status).toBe(1);
    expect(out).toContain("src/cli/sync.ts:3:");
    expect(out).not.toMatch(/^src\/queue\/producer\.ts:/m);
  });

  it("jobs: a job run again with .retry( or .promote( outside RERUNS fails; QueueAdmin's retry and the producer's promote pass", () => {
    const retry = 'export async function again(job: Job) {\n  await job.retry("failed", { resetAttemptsMade: true });\n}\n';
    const promote = "export async function now(q: Queue, id: string) {\n  await (await q.getJob(id))?.promote();\n}\n";
    const root = treeWith({
      "src/http/routes/jobs.ts": retry,
      "src/cli/download.ts": promote,
      "src/cli/jobs.ts": "export const run = (admin: QueueAdmin, id: string) => admin.retry(id);\n",
      "src/sync/run.ts": "export const all = (q: Queue) => q.promoteJobs();\n",
      "src/queue/queue-admin.ts": retry,
      "src/queue/producer.ts": promote + retry,
    });
    const { status, out } = runCheck("jobs", root);
    expect(status).toBe(1);
    expect(out).toContain("src/http/routes/jobs.ts:2: job.retry(");
    expect(out).toContain("src/cli/download.ts:2: (await q.getJob(id)).promote(");
    expect(out).toContain("src/sync/run.ts:1: q.promoteJobs(");
    // producer.ts may promote (Producer.ensure), not retry: its retry (line 5) is flagged, its promote (line 2) is not.
    expect(out).toContain("src/queue/producer.ts:5:");
    expect(out).not.toContain("src/queue/producer.ts:2:");
    expect(out).not.toContain("src/cli/jobs.ts");
    expect(out).not.toContain("src/queue/queue-admin.ts");
  });

  it("output: a write to stdout or stderr around the printer fails, with its file and line; the printer and a TTY test pass", () => {
    const root = treeWith({
      "src/cli/search.ts": 'export const a = () => console.log("x");\n',
      "src/cli/simulator.ts": 'const out = process.stdout;\nout.write("listening\\n");\n',
      "src/demo/run.ts": '// process.stdout is named here only\nexport const b = () => process.stderr.write("y");\n',
      "src/cli/import.ts": "export const tty = process.stderr.isTTY && process.stdout.columns;\n",
      "src/cli/output/print.ts": "export const c = (t: string) => process.stdout.write(t);\n",
    });
    const { status, out } = runCheck("output", root);
    expect(status).toBe(1);
    expect(out).toContain("src/cli/search.ts:1: console.log");
    expect(out).toContain("src/cli/simulator.ts:1: process.stdout");
    expect(out).toContain("src/demo/run.ts:2: process.stderr");
    expect(out).not.toContain("src/demo/run.ts:1:");
    expect(out).not.toContain("src/cli/import.ts");
    expect(out).not.toMatch(/^src\/cli\/output\//m);
  });
});
