// `npm run check:jobs`: a job is added or scheduled only through the producer (src/queue/producer.ts), so its
// options come from its definition (docs/ARCHITECTURE.md#the-life-of-a-deviation). One line per `.add(`,
// `.addBulk(` or `.upsertJobScheduler(` on a BullMQ queue in src/ or jobs/ elsewhere; exit 1 when there is any.
// Without a type checker (TypeScript 7 has no stable compiler API), "on a queue" is read from the text: the
// receiver is a queue (`new Queue(…)`, `….queue(…)`, a name typed `Queue` or ending in "queue"), or the job
// named is one of the catalogue's. A Set's `.add(x)` passes.
// Running a job again is a side entrance too: `.retry(` and `.promote(` on a job (`job`, `….job`, a name typed `Job` or
// read with getJob), and a queue's `.retryJobs(` and `.promoteJobs(`, are allowed only where RERUNS says why.
import fs from "node:fs";
import path from "node:path";
import { checkRoot, checkedFiles } from "./source-files.ts";

/** The repository to check (default this one; a path argument checks another checkout, e.g. an old commit's). */
const ROOT = checkRoot();
/** The one module allowed to add jobs and install schedulers. */
const PRODUCER = path.join("src", "queue", "producer.ts");

/**
 * Where a job may be run again in place: the operator's retry of a failed job that no table schedules (a download is
 * retried through its row, src/downloads/retry-now.ts), and the promotion of a download parked until its quota window
 * when the downloads table says the window has come.
 */
const RERUNS: Readonly<Record<string, readonly string[]>> = {
  [path.join("src", "queue", "queue-admin.ts")]: ["retry"],
  [path.join("src", "downloads", "enqueue-due.ts")]: ["promote"],
};

const files = checkedFiles(ROOT);

/** The catalogue's job names (`name: "sync.source"` in each definition) and the constants that hold them. */
const jobNames = new Set<string>();
const jobNameConstants = new Set<string>();
for (const file of files) {
  const text = fs.readFileSync(file, "utf8");
  if (file.endsWith("definition.ts")) for (const m of text.matchAll(/\bname:\s*["']([\w.-]+)["']/g)) jobNames.add(m[1] ?? "");
}
for (const file of files) {
  const text = fs.readFileSync(file, "utf8");
  for (const m of text.matchAll(/\bconst\s+(\w+)\s*=\s*["']([\w.-]+)["']/g)) if (jobNames.has(m[2] ?? "")) jobNameConstants.add(m[1] ?? "");
}

/** Names this file binds to a queue: `x = new Queue(…)`, `x = ….queue(…)`, `x: Queue`. */
function queueNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/\b(?:const|let|var)\s+(\w+)\s*(?::[^=;]+)?=\s*(?:await\s+)?(?:new\s+Queue\b|[\w.]*\.queue\()/g)) names.add(m[1] ?? "");
  for (const m of text.matchAll(/\b(\w+)\??\s*:\s*(?:readonly\s+)?Queue\b/g)) names.add(m[1] ?? "");
  return names;
}

/** Names this file binds to a job: `x: Job`, `x = await ….getJob(…)`, `for (const x of … jobs)`. */
function jobNamesIn(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/\b(\w+)\??\s*:\s*(?:readonly\s+)?Job\b/g)) names.add(m[1] ?? "");
  for (const m of text.matchAll(/\b(?:const|let|var)\s+(\w+)\s*(?::[^=;]+)?=\s*(?:await\s+)?[\w.]*\.getJob\(/g)) names.add(m[1] ?? "");
  for (const m of text.matchAll(/\bfor\s*(?:await\s*)?\(\s*const\s+(\w+)\s+of\s+[\w.]*jobs\b/gi)) names.add(m[1] ?? "");
  return names;
}

/** A receiver, possibly parenthesised once (`(await q.getJob(id))?.promote()`), then `.retry(`, `.promote(`, …. */
const RERUN = /((?:\((?:[^()]|\([^()]*\))*\))|[\w$.]*(?:\([^()]*\))?)\s*\??\.\s*(retry|promote|retryJobs|promoteJobs)\s*\(/g;

const CALL = /([\w$.]*(?:\([^()]*\))?)\s*\.\s*(add|addBulk|upsertJobScheduler)\s*\(\s*([^,)]*)/g;

const violations: string[] = [];
for (const file of files) {
  const rel = path.relative(ROOT, file);
  if (rel === PRODUCER) continue;
  const text = fs.readFileSync(file, "utf8");
  const queues = queueNames(text);
  for (const m of text.matchAll(CALL)) {
    const [, receiver = "", method = "", firstArg = ""] = m;
    const last =
      receiver
        .replace(/\(.*\)$/, "")
        .split(".")
        .pop() ?? "";
    const onQueue =
      method !== "add" ||
      /\.queue\(|\bnew Queue\(/.test(receiver) ||
      /queue$/i.test(last) ||
      queues.has(last) ||
      jobNames.has(firstArg.trim().replace(/^["'`]|["'`]$/g, "")) ||
      jobNameConstants.has(firstArg.trim().split(".").pop() ?? "");
    if (!onQueue) continue;
    const line = text.slice(0, m.index).split("\n").length;
    violations.push(
      `${rel}:${line}: ${receiver}.${method}(…) adds a job around the producer; use Producer.enqueue or Producer.schedule (src/queue/producer.ts)`,
    );
  }
}
for (const file of files) {
  const rel = path.relative(ROOT, file);
  const text = fs.readFileSync(file, "utf8");
  const jobs = jobNamesIn(text);
  for (const m of text.matchAll(RERUN)) {
    const [, receiver = "", method = ""] = m;
    if (RERUNS[rel]?.includes(method)) continue;
    const last =
      receiver
        .replace(/\(.*\)$/, "")
        .split(".")
        .pop() ?? "";
    const onJob = method === "retryJobs" || method === "promoteJobs" || /\bgetJob\(/.test(receiver) || /job$/i.test(last) || jobs.has(last);
    if (!onJob) continue;
    const line = text.slice(0, m.index).split("\n").length;
    violations.push(
      `${rel}:${line}: ${receiver}.${method}(…) runs a job again around the producer and its table; see RERUNS in scripts/checks/jobs-through-producer.ts`,
    );
  }
}
for (const v of violations) process.stdout.write(`${v}\n`);
if (violations.length > 0) {
  process.stdout.write(`${violations.length} job(s) added outside src/queue/producer.ts or run again outside RERUNS\n`);
  process.exit(1);
}
process.stdout.write("jobs: every job is added and scheduled through the producer\n");
