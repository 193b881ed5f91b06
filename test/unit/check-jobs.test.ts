import { describe, expect, it } from "vitest";
import { checkJobs } from "../../scripts/checks/jobs-through-producer.ts";
import { placesIn, plantedTree } from "../helpers/planted-tree.ts";

// scripts/checks/jobs-through-producer.ts follows values through the parsed code: a queue reached through a map,
// a loop, a callback, another file or an alias is still a queue.
const PRODUCER = [
  'import type { Queue } from "bullmq";',
  'import { makeQueue } from "./backend.ts";',
  "export class Producer {",
  "  private readonly queues = new Map<string, Queue>();",
  "  queue(name: string): Queue {",
  "    let q = this.queues.get(name);",
  "    if (!q) this.queues.set(name, (q = makeQueue(name)));",
  "    return q;",
  "  }",
  '  enqueue(name: string, data: unknown) { return this.queue("sync").add(name, data); }',
  "}",
  "",
].join("\n");

describe(checkJobs.name, () => {
  const planted = {
    "src/queue/producer.ts": PRODUCER,
    "src/queue/backend.ts":
      'import { Queue, QueueEvents, Worker } from "bullmq";\nexport const w = new Worker("sync", async (job, token) => job.moveToDelayed(Date.now(), token));\nexport const makeQueue = (name: string) => new Queue(name);\nexport const events = new QueueEvents("sync");\n',
    "jobs/sync-source/definition.ts": 'export const d = { name: "sync.source", queue: "sync" };\n',
    // Evasions: a map of queues (an object, a Map, a Record-typed parameter, Object.values, a loop, a callback), a
    // FlowProducer, a second Worker (inside src/queue too), QueueEvents, a second Queue through an alias, a namespace
    // and import(), a queue map exported by one file and used in another, addBulk, a bound add.
    "src/sync/map.ts": [
      'import type { Producer } from "../queue/producer.ts";',
      "export async function viaMap(producer: Producer) {",
      '  const queues = { sync: producer.queue("sync"), downloads: producer.queue("downloads") };',
      '  await queues.sync.add("sync.source", {});',
      '  const byName = new Map([["sync", producer.queue("sync")]]);',
      '  await byName.get("sync")?.add("x", {});',
      '  for (const q of Object.values(queues)) await q.add("y", {});',
      '  [producer.queue("sync")].forEach((q) => q.add("z", {}));',
      "}",
      "",
    ].join("\n"),
    "src/sync/record.ts": [
      'import type { Queue } from "bullmq";',
      "export async function viaRecord(queues: Record<string, Queue>, name: string) {",
      '  await queues[name]!.add("x", {});',
      "}",
      "",
    ].join("\n"),
    "src/sync/flow.ts": 'import { FlowProducer } from "bullmq";\nexport const flow = new FlowProducer();\n',
    "src/downloads/worker.ts": 'import { Worker as W } from "bullmq";\nexport const w = new W("downloads", async () => undefined);\n',
    "src/queue/second-worker.ts": 'import * as bull from "bullmq";\nexport const w = new bull.Worker("sync", async () => undefined);\n',
    "src/status/events.ts": 'export const events = async () => {\n  const { QueueEvents } = await import("bullmq");\n  return new QueueEvents("sync");\n};\n',
    "src/queue/reexport.ts": 'export { Queue } from "bullmq";\n',
    "src/cli/alias.ts": 'import { Queue } from "../queue/reexport.ts";\nconst q = new Queue("sync");\nexport const run = () => q.add("sync.source", {});\n',
    "src/queue/queue-map.ts":
      'import type { Producer } from "./producer.ts";\nexport const queueMap = (p: Producer) => ({ sync: p.queue("sync") });\nexport const shared = { downloads: null as unknown as import("bullmq").Queue };\n',
    "src/http/use-map.ts":
      'import { queueMap } from "../queue/queue-map.ts";\nimport type { Producer } from "../queue/producer.ts";\nexport const go = (p: Producer) => queueMap(p).sync.add("x", {});\n',
    "src/digest/bulk.ts": "export const go = (anything: { addBulk(x: unknown[]): void }) => anything.addBulk([]);\n",
    "src/import/bound.ts":
      'import type { Producer } from "../queue/producer.ts";\nexport const go = (p: Producer) => {\n  const add = p.queue("sync").add.bind(null);\n  return add;\n};\n',
    "src/track-lists/named.ts": 'export const go = (thing: { add(n: string, d: unknown): void }) => thing.add("sync.source", {});\n',
    // Jobs run again through the operator's door (QueueAdmin.queue()): what a queue's getters hand back, looped over
    // or mapped, retried, promoted or moved back to be taken.
    "src/http/rerun.ts": [
      'import type { QueueAdmin } from "../queue/queue-admin.ts";',
      "export async function rerun(admin: QueueAdmin) {",
      '  const q = admin.queue("download");',
      "  for (const failed of await q.getFailed()) await failed.retry();",
      '  const list = await q.getJobs(["failed"]);',
      "  await Promise.all(list.map((j) => j.retry()));",
      "  for (const d of await q.getDelayed()) await d.changeDelay(0);",
      "  (await q.getWaiting()).forEach((w) => w.promote());",
      '  const one = await q.getJob("1");',
      '  await one?.moveToDelayed(0, "token");',
      "}",
      "",
    ].join("\n"),
    // Clean: the operator's retry through QueueAdmin (its own file decides), a job's reads.
    "src/http/admin-retry.ts": [
      'import type { QueueAdmin } from "../queue/queue-admin.ts";',
      "export async function retryOne(queues: QueueAdmin, id: string) {",
      "  await queues.retry(id);",
      '  const failed = await queues.queue("sync").getFailed();',
      "  return failed.map((j) => j.failedReason);",
      "}",
      "",
    ].join("\n"),
    // Clean: a Set's add, a queue's reads, the producer's own entrance.
    "src/sync/clean.ts": [
      'import type { Producer } from "../queue/producer.ts";',
      "export async function clean(producer: Producer, queues: { length: number }) {",
      "  const seen = new Set<string>();",
      '  seen.add("x");',
      '  const q = producer.queue("sync");',
      "  const names = new Set([q.name]);",
      '  names.add("y");',
      "  await q.getJobCounts();",
      '  await producer.enqueue("sync.source", {});',
      "  return queues.length;",
      "}",
      "",
    ].join("\n"),
  };

  it("finds every planted way around the producer, with its file and line", () => {
    const findings = checkJobs(plantedTree(planted));
    expect(placesIn(findings, "src/sync/map.ts")).toEqual(["src/sync/map.ts:4", "src/sync/map.ts:6", "src/sync/map.ts:7", "src/sync/map.ts:8"]);
    expect(findings).toContain(
      "src/sync/map.ts:4: queues.sync.add(…) adds a job around the producer; use Producer.enqueue or Producer.schedule (src/queue/producer.ts)",
    );
    expect(placesIn(findings, "src/sync/record.ts")).toEqual(["src/sync/record.ts:3"]);
    expect(findings).toContain("src/sync/flow.ts:2: new FlowProducer(…): dvault builds no FlowProducer; jobs go through the producer (src/queue/producer.ts)");
    expect(findings).toContain(
      "src/downloads/worker.ts:2: new Worker(…): BullMQ's Worker is built only in src/queue/backend.ts; jobs go through the producer (src/queue/producer.ts)",
    );
    expect(placesIn(findings, "src/queue/second-worker.ts")).toEqual(["src/queue/second-worker.ts:2"]);
    expect(placesIn(findings, "src/status/events.ts")).toEqual(["src/status/events.ts:3"]);
    expect(placesIn(findings, "src/cli/alias.ts")).toEqual(["src/cli/alias.ts:2", "src/cli/alias.ts:3"]);
    expect(placesIn(findings, "src/http/use-map.ts")).toEqual(["src/http/use-map.ts:3"]);
    expect(placesIn(findings, "src/digest/bulk.ts")).toEqual(["src/digest/bulk.ts:1"]);
    expect(placesIn(findings, "src/import/bound.ts")).toEqual(["src/import/bound.ts:3"]);
    expect(placesIn(findings, "src/track-lists/named.ts")).toEqual(["src/track-lists/named.ts:1"]);
    expect(placesIn(findings, "src/http/rerun.ts")).toEqual([
      "src/http/rerun.ts:4",
      "src/http/rerun.ts:6",
      "src/http/rerun.ts:7",
      "src/http/rerun.ts:8",
      "src/http/rerun.ts:10",
    ]);
    expect(findings).toContain(
      "src/http/rerun.ts:7: d.changeDelay(…) runs a job again around the producer and its table; see RERUNS in scripts/checks/jobs-through-producer.ts",
    );
  });

  it("passes a Set's add, a queue's reads, the producer's adds, and the backend building queues and workers", () => {
    const findings = checkJobs(plantedTree(planted));
    expect(placesIn(findings, "src/sync/clean.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/producer.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/backend.ts")).toEqual([]);
    expect(placesIn(findings, "src/http/admin-retry.ts")).toEqual([]);
    expect(placesIn(findings, "src/queue/queue-map.ts")).toEqual([]);
    expect(findings).toHaveLength(20);
  });
});
